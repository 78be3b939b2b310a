import test from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

import snowidDefault, { nextId, nextIdString, decode, config, configure, Snowflake } from 'snowid'
import helpers from './helpers.js'

helpers.isolateLeases()

test('ESM named and default imports resolve through the exports map to the same binding', () => {
  const require = createRequire(import.meta.url)
  const cjs = require('snowid')
  assert.equal(nextId, cjs.nextId)
  assert.equal(Snowflake, cjs.Snowflake)
  assert.equal(snowidDefault.nextId, cjs.nextId)
  for (const fn of [nextId, nextIdString, decode, config, configure]) assert.equal(typeof fn, 'function')
  const id = nextId()
  assert.equal(typeof id, 'bigint')
  assert.equal(decode(id).id, id.toString())
  assert.ok(BigInt(nextIdString()) > id)
  assert.equal(new Snowflake({ workerId: 2 }).decode(new Snowflake({ workerId: 2 }).nextId()).workerId, 2)
})
