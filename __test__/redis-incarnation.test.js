'use strict'

// snowid/redis's incarnation against a real redis-server: the key `{prefix}:incarnation` names the dataset, every
// mark records it, and a slot whose marks record another, or none, is held one TTL before use.

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const { reportMissing, startRedis } = require('./servers.js')
const { acquireWorkerId } = require('../lib/redis.js')

async function main() {
  const server = await startRedis()
  if (!server) {
    reportMissing(test, 'redis-server', "apt-get install redis-server (Debian's package)")
    return
  }
  const Redis = require('ioredis')
  const client = new Redis({ host: '127.0.0.1', port: server.port })
  test.after(async () => {
    client.disconnect()
    await server.stop()
  })

  test('a slot whose marks record another incarnation, or whose incarnation key is gone, is held one TTL', async () => {
    const ttlMs = 500
    const opts = { client, datacenterId: 2, ttlMs, keyPrefix: 'inc', snowflake: { workerBits: 0 } }
    const timed = async () => {
      const started = Date.now()
      const lease = await acquireWorkerId(opts)
      await lease.release()
      return Date.now() - started
    }
    assert.ok((await timed()) >= ttlMs, 'a slot with no marks waits one TTL')
    const incarnation = await client.get('{inc}:incarnation')
    assert.match(incarnation, /^[0-9a-f-]{36}$/)
    assert.equal(await client.hget('{inc}:2:0:marks', 'incarnation'), incarnation, 'the marks record it')
    // Given back in the same dataset: used once the clock is past the mark, without a TTL's wait.
    opts.ttlMs = 10_000
    assert.ok((await timed()) < 10_000, 'a slot given back needs no wait')
    opts.ttlMs = ttlMs
    // Marks copied from another dataset.
    await client.hset('{inc}:2:0:marks', 'incarnation', 'another')
    assert.ok((await timed()) >= ttlMs, 'marks of another incarnation wait one TTL')
    // The incarnation key deleted by hand: a new one is made, and the marks record the old.
    await client.del('{inc}:incarnation')
    assert.ok((await timed()) >= ttlMs, 'a new incarnation key: one TTL')
    assert.notEqual(await client.get('{inc}:incarnation'), incarnation)
  })
}

main()
