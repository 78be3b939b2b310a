'use strict'

// snowid/redis against a real redis-server. The conformance suite every store runs (store-conformance.js) and
// snowid/redis's own scenarios (redis-scenarios.js) run once, with ioredis; each other client library (node-redis, and
// the lowest majors the peer ranges declare: ioredis 5, node-redis 4) runs its adapter's smoke test; and what depends
// on the client library (its reconnection, its end) runs with the newest majors of ioredis and node-redis here, and
// with the older ones in CI's slow tier (slow/redis-older-clients.test.js). 40 processes at once:
// slow/stores-at-scale.test.js.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')

require('./helpers.js').isolateLeases()

const { ROOT, cleanEnv } = require('./helpers.js')
const { serverFor, startRedis, freePort } = require('./servers.js')
const { acquireWorkerId, RedisLease } = require('../lib/redis.js')
const { clientScenarios, connect, redisScenarios } = require('./redis-scenarios.js')
const { clientSmoke, storeConformance } = require('./store-conformance.js')

// The newest major of each client. The unreachable-server check also runs the lowest majors the peer ranges declare
// (installed under aliases), as it starts no server.
const NEWEST = ['ioredis', 'redis']
const CLIENTS = [...NEWEST, 'ioredis-5', 'redis-4']

async function main() {
  const redis = await serverFor(test, 'redis', startRedis)
  if (!redis) return
  const { client, raw, close } = await connect('ioredis', redis.port)
  test.after(() => close())

  const store = {
    name: 'Redis',
    base: { store: 'redis', client: 'ioredis', port: redis.port },
    acquire: (client, options) => acquireWorkerId({ client, ...options }),
    Lease: RedisLease,
    client,
    at: keyPrefix => ({ keyPrefix }),
    slot: async (prefix, datacenterId, workerId) => ({
      held: (await raw('EXISTS', `{${prefix}}:${datacenterId}:${workerId}:lease`)) === 1,
      mark: Number(await raw('HGET', `{${prefix}}:${datacenterId}:${workerId}:marks`, 'until')),
    }),
  }
  storeConformance(test, store)

  redisScenarios(test, 'ioredis')

  for (const kind of CLIENTS.filter(kind => kind !== 'ioredis')) {
    clientSmoke(test, store, kind, {
      open: () => connect(kind, redis.port),
      unreachable: async () => connect(kind, await freePort()),
      code: 'ERR_SNOWID_REDIS_UNAVAILABLE',
      // Each client reports an ACL refusal in its own error class.
      more: async () => {
        const user = `${kind}-smoke-no-eval`
        await raw('ACL', 'SETUSER', user, 'reset', 'on', '>pw', '~{snowid}:*', '+set', '+get', '+hmget', '+hget')
        const refused = await connect(kind, redis.port, { username: user, password: 'pw' })
        try {
          await assert.rejects(acquireWorkerId({ client: refused.client, ttlMs: 1000 }), err => {
            assert.equal(err.code, 'ERR_SNOWID_STORE_PERMISSION_DENIED', `${kind}: ${err.message}`)
            assert.match(err.message, /the command EVAL \(\+eval\)/)
            return true
          })
        } finally {
          await refused.close()
          await raw('ACL', 'DELUSER', user)
        }
      },
    })
  }

  for (const kind of NEWEST)
    test(`with ${kind}: what depends on the client library`, t =>
      clientScenarios(t, kind, redis.port, { ended: kind !== store.base.client }))

  test('Redis unreachable at acquire is ERR_SNOWID_REDIS_UNAVAILABLE, with either client', async () => {
    const port = await freePort()
    for (const kind of CLIENTS) {
      const { client, close } = await connect(kind, port)
      try {
        await assert.rejects(acquireWorkerId({ client, ttlMs: 500 }), err => {
          assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE', `${kind}: ${err.message}`)
          return true
        })
      } finally {
        close()
      }
    }
  })

  test("a failed take's error names the client's own: its message, class and code, even when it has no message", async () => {
    // node-redis 6 rejects a command queued while it reconnects with a TimeoutError that has no message.
    class TimeoutError extends Error {}
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' })
    const gathered = new AggregateError([refused, new Error('connect ECONNREFUSED ::1:9')])
    const cases = [
      [
        { isOpen: true, sendCommand: () => Promise.reject(new TimeoutError()) },
        /found an error: no message \(TimeoutError\)/,
      ],
      [
        { call: () => Promise.reject(refused) },
        /found an error: connect ECONNREFUSED 127\.0\.0\.1:9 \(Error, code ECONNREFUSED\)/,
      ],
      [
        { call: () => Promise.reject(gathered) },
        /found an error: connect ECONNREFUSED 127\.0\.0\.1:9; connect ECONNREFUSED ::1:9 \(AggregateError\)/,
      ],
    ]
    for (const [client, message] of cases) {
      await assert.rejects(acquireWorkerId({ client, ttlMs: 500 }), err => {
        assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE')
        assert.match(err.message, message)
        assert.ok(err.cause instanceof Error, "the client's error is the cause")
        return true
      })
    }
  })

  test('bad options are coded errors', async () => {
    const boom = () => {
      throw new Error('unreadable')
    }
    const throwing = new Proxy({}, { get: boom, has: boom, ownKeys: boom })
    const bad = [
      [undefined, TypeError],
      [{}, TypeError],
      [{ client: {} }, TypeError],
      [{ client: { call() {} }, ttlMs: 5 }, RangeError],
      [{ client: { call() {} }, ttlMs: '1000' }, TypeError],
      [{ client: { call() {} }, waitMs: -1 }, RangeError],
      [{ client: { call() {} }, keyPrefix: 'a{b}' }, TypeError],
      [{ client: { call() {} }, snowflake: { workerId: 3 } }, TypeError],
      [{ client: { call() {} }, tllMs: 1000 }, TypeError],
      [{ client: { call() {} }, snowflake: throwing }, TypeError],
      [{ client: throwing }, TypeError],
    ]
    for (const [i, [options, Class]] of bad.entries()) {
      await assert.rejects(acquireWorkerId(options), err => {
        assert.ok(err instanceof Class, `${i}: ${err}`)
        assert.equal(err.code, 'ERR_SNOWID_INVALID_ARGUMENT')
        return true
      })
    }
    await assert.rejects(acquireWorkerId({ client: { call() {} }, datacenterId: 8 }), {
      code: 'ERR_SNOWID_INVALID_CONFIG',
    })
  })

  test('configureWorkerId gives the default generator the leased slot', async () => {
    const redis = await startRedis()
    try {
      const code = `
        const { configureWorkerId } = require('./lib/redis.js')
        const Redis = require('ioredis')
        const client = new Redis({ host: '127.0.0.1', port: ${redis.port} })
        configureWorkerId({ client, datacenterId: 2, ttlMs: 300 }).then(async (lease) => {
          const snowid = require('.')
          const id = snowid.nextId()
          const d = snowid.decode(id)
          await lease.release()
          let after = 'issued'
          try { snowid.nextId() } catch (e) { after = e.code }
          console.log(JSON.stringify({ dc: d.datacenterId, w: d.workerId, slot: [lease.datacenterId, lease.workerId], after }))
          client.disconnect()
        })
      `
      const r = await new Promise(resolve => {
        const c = spawn(process.execPath, ['-e', code], {
          cwd: ROOT,
          env: cleanEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let out = ''
        let err = ''
        c.stdout.on('data', d => (out += d))
        c.stderr.on('data', d => (err += d))
        c.on('exit', status => resolve({ status, out, err }))
      })
      assert.equal(r.status, 0, r.err)
      const res = JSON.parse(r.out)
      assert.deepEqual([res.dc, res.w], res.slot)
      assert.equal(res.after, 'ERR_SNOWID_LEASE_LOST', 'the default generator stops with the lease')
    } finally {
      await redis.stop()
    }
  })
}

main()
