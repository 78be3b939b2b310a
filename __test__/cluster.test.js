'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const snowid = require('..')
const { cleanEnv, countDuplicates } = require('./helpers.js')

test('a cluster of 4 workers, each with its own SNOWID_WORKER_ID: 0 duplicates, each id decodes to its worker', () => {
  const app = path.join(__dirname, 'fixtures', 'cluster-app.js')
  const r = spawnSync(process.execPath, [app, '4', '50000'], {
    env: cleanEnv(),
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 << 20,
  })
  assert.equal(r.status, 0, r.stderr)
  const results = JSON.parse(r.stdout)
  assert.deepEqual(Object.keys(results).sort(), ['0', '1', '2', '3'])
  for (const [worker, ids] of Object.entries(results)) {
    assert.equal(ids.length, 50_000)
    for (const id of ids) {
      const d = snowid.decode(id)
      assert.equal(d.workerId, Number(worker))
      assert.equal(d.datacenterId, 1)
    }
  }
  const { dups, total } = countDuplicates(Object.values(results))
  assert.deepEqual([dups, total], [0, 200_000], `${dups} duplicates in ${total} ids`)
})
