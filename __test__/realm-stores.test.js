'use strict'

// The store leases in a realm of their own, as Jest loads them (__test__/realms.js): each builds options of its own
// (an env literal, a Snowflake's options) in the test file's realm, and throws that realm's errors.

const test = require('node:test')
const assert = require('node:assert/strict')

const { isolateLeases, wasiSkip } = require('./helpers.js')
const { realm } = require('./realms.js')
const servers = require('./servers.js')

isolateLeases()

// An unreachable store is reported as such, not as options refused.
const STORES = [
  ['redis', 'ERR_SNOWID_REDIS_UNAVAILABLE'],
  ['postgres', 'ERR_SNOWID_POSTGRES_UNAVAILABLE'],
  ['mysql', 'ERR_SNOWID_MYSQL_UNAVAILABLE'],
  ['etcd', 'ERR_SNOWID_ETCD_UNAVAILABLE'],
]

test(
  'jest: every store lease takes its options in the realm',
  wasiSkip('the store leases run on a native build'),
  async () => {
    const port = await servers.freePort()
    const clients = {
      redis: () => {
        const Redis = require('ioredis')
        const c = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
        c.on('error', () => {})
        return [c, () => c.disconnect()]
      },
      postgres: () => {
        const c = new (require('pg').Pool)({ host: '127.0.0.1', port, connectionTimeoutMillis: 500 })
        return [c, () => c.end()]
      },
      mysql: () => {
        const c = require('mysql2').createPool({ host: '127.0.0.1', port, connectionLimit: 1, connectTimeout: 500 })
        return [c, () => new Promise(resolve => c.end(() => resolve()))]
      },
      etcd: () => {
        const c = new (require('etcd3').Etcd3)({ hosts: `http://127.0.0.1:${port}`, dialTimeout: 500 })
        return [c, () => c.close()]
      },
    }
    const r = realm('jest')
    for (const [store, code] of STORES) {
      const [client, close] = clients[store]()
      try {
        const { acquireWorkerId } = r.require(`./lib/${store}.js`)
        await assert.rejects(acquireWorkerId({ client, ttlMs: 1000, snowflake: { maxLeadMs: 5 } }), e => {
          assert.equal(e.code, code, `${store}: ${e.message}`)
          assert.ok(e instanceof r.run('Error'), store)
          return true
        })
      } finally {
        await close()
      }
    }
  },
)

test(
  'jest: a Redis lease in the realm makes ids and is released',
  wasiSkip('the store leases run on a native build'),
  async t => {
    const redis = await servers.startRedis()
    if (!redis) {
      servers.reportMissing(t.test.bind(t), 'redis-server', "apt-get install redis-server (Debian's package)")
      return
    }
    const Redis = require('ioredis')
    const client = new Redis({ port: redis.port })
    try {
      const r = realm('jest')
      const { acquireWorkerId } = r.require('./lib/redis.js')
      const lease = await acquireWorkerId({ client, ttlMs: 1000 })
      const id = lease.snowflake.nextId()
      assert.equal(lease.snowflake.decode(id).workerId, lease.workerId)
      await lease.release()
      assert.throws(
        () => lease.snowflake.nextId(),
        e => e instanceof r.run('Error') && /^ERR_SNOWID_/.test(e.code),
      )
    } finally {
      client.disconnect()
      await redis.stop()
    }
  },
)
