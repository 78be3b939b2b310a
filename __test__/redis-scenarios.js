'use strict'

// snowid/redis's own scenarios, run once with one client library (redis.test.js, with ioredis), and what depends on
// the client library, run with each: redis.test.js runs it with the newest major of ioredis and of node-redis, and
// slow/redis-older-clients.test.js (CI's slow tier) with the lowest majors the peer ranges declare. What every store
// must do is store-conformance.js's.

const assert = require('node:assert/strict')
const { once } = require('node:events')
const { setTimeout: sleep } = require('node:timers/promises')

const { holder, until, endedClientExits, holdersThroughAnOutage, RECOVERY_MARGIN_MS } = require('./holders.js')
const { startRedis, tcpProxy } = require('./servers.js')
const { acquireWorkerId } = require('../lib/redis.js')

async function connect(kind, port, auth = {}) {
  if (kind.startsWith('ioredis')) {
    const Redis = require(kind)
    // A user the ACL test makes may not run INFO, which ioredis's ready check sends.
    const client = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableReadyCheck: !auth.username,
      ...auth,
    })
    client.on('error', () => {})
    await client.connect().catch(() => {})
    return { client, raw: (...args) => client.call(...args), close: () => client.disconnect() }
  }
  const { createClient } = require(kind)
  const client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: false }, ...auth })
  client.on('error', () => {})
  await client.connect().catch(() => {})
  // node-redis 5 closes with destroy(), 4 with disconnect().
  const close = () =>
    Promise.resolve(client.destroy ? client.destroy() : client.isOpen && client.disconnect()).catch(() => {})
  return { client, raw: (...args) => client.sendCommand(args.map(String)), close }
}

/** `client` as snowid/redis sees it, with `hook(args, reply)` run on every reply before the caller gets it. */
function hookReplies(kind, client, hook) {
  if (kind.startsWith('ioredis')) return { call: async (...args) => hook(args, await client.call(...args)) }
  return { isOpen: true, sendCommand: async args => hook(args, await client.sendCommand(args)) }
}

/**
 * A lease on slot 0 of a 2-slot datacenter (slot 0 seeded with a past mark, so it is used at once), then lost: another
 * holder takes slot 0's key, as if this process had stalled past its TTL. Resolves once the lease has emitted 'lost'.
 */
async function lostLease({ client, raw, prefix, ttlMs, events }) {
  const key = (w, kind) => `{${prefix}}:5:${w}:${kind}`
  await raw('HSET', key(0, 'marks'), 'until', String(Date.now() - 1))
  const lease = await acquireWorkerId({
    client,
    datacenterId: 5,
    ttlMs,
    keyPrefix: prefix,
    snowflake: { workerBits: 1 },
  })
  for (const name of ['lost', 'renewFailed', 'reacquired'])
    lease.on(name, x => events.push({ name, x, at: Date.now() }))
  assert.equal(lease.workerId, 0)
  const last = lease.snowflake.nextId()
  const lost = once(lease, 'lost')
  await raw('SET', key(0, 'lease'), 'another-holder', 'PX', '60000')
  const [err] = await lost
  assert.equal(err.code, 'ERR_SNOWID_LEASE_LOST')
  return { lease, last, key }
}

/**
 * What depends on client library `kind` (a package name, or an alias of an older major) beyond its adapter's smoke
 * test, as subtests of `t`, with holders of the redis-server on `port`: how soon the client is back after an outage
 * (its own reconnection), and that ending it stops a lost lease (the adapter's `closed`), unless `ended` is false.
 */
async function clientScenarios(t, kind, serverPort, { ended = true } = {}) {
  const base = { store: 'redis', client: kind, port: serverPort }

  // `ended` false: the conformance suite ran it with this client.
  if (ended)
    await t.test('a lost lease whose client is then ended stops taking slots, and its process exits', tt =>
      endedClientExits(tt, base),
    )

  await t.test(
    'Redis down for 2 TTLs, then back with its data: holders issue again soon (1 s is the goal)',
    async tt => {
      // The holders reach Redis through a proxy, which is closed for 2 TTLs of 800 ms (connections are refused, open ones
      // reset), then listens again on its port: the server keeps its data and its replication id, so the marks stay
      // good and no slot waits a TTL.
      let proxy = await tcpProxy(serverPort)
      const { port } = proxy
      try {
        await holdersThroughAnOutage(
          tt,
          { ...base, port },
          async () => {
            await proxy.close()
            await sleep(1600)
            proxy = await tcpProxy(serverPort, { port })
            return Date.now()
          },
          { withinMs: RECOVERY_MARGIN_MS },
        )
      } finally {
        await proxy.close()
      }
    },
  )
}

/**
 * The scenarios of snowid/redis's own (its scripts, ACLs, replies and keys), with client library `kind`, registered
 * as tests of the file by `test` (node:test's), each one on its own, on a redis-server of their own started by the
 * first. What every store must do is store-conformance.js's.
 */
function redisScenarios(test, kind) {
  let started
  let redis
  let base
  test.after(async () => (await started)?.stop())
  const scenario = (name, fn) =>
    test(`${name} (${kind})`, async tt => {
      started ??= startRedis()
      redis = await started
      assert.ok(redis, 'redis-server could not be started')
      base = { store: 'redis', client: kind, port: redis.port }
      return fn(tt)
    })

  scenario('Redis restarted with its data lost mid-run: holders stop, recover, and make 0 duplicates', tt =>
    // Measured before the new server is spawned, not after it answers: a holder may reach it first.
    holdersThroughAnOutage(tt, base, () => redis.restart(1200), { noHistory: true }),
  )

  scenario(
    'a lost lease refuses ids until it holds a slot again, and gives back at once a slot it cannot use',
    async () => {
      const { client, raw, close } = await connect(kind, redis.port)
      const events = []
      let lease
      try {
        const ttlMs = 2000
        // Slot 1 carries a mark further ahead of this host's clock than a TTL: taking it fails until the clock nears it.
        await raw('HSET', '{move}:5:1:marks', 'until', String(Date.now() + 20 * ttlMs))
        const lost = await lostLease({ client, raw, prefix: 'move', ttlMs, events })
        lease = lost.lease
        const first = lease.snowflake
        await until(() => events.some(e => e.name === 'renewFailed'), 10_000, 'a failed attempt on slot 1')
        const failed = events.find(e => e.name === 'renewFailed').x
        assert.equal(failed.code, 'ERR_SNOWID_CLOCK_BACKWARDS', failed.message)
        // Meanwhile the lease still shows the lost slot, whose generator refuses (it is not null, nor slot 1's).
        assert.equal(lease.workerId, 0)
        assert.equal(lease.snowflake, first)
        assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
        // Slot 1 was given back after the failed attempt, not left held until its TTL ran out: another process can
        // take it (a later attempt holds it only for the length of one script call).
        let taken = false
        for (let i = 0; i < 10 && !taken; i++) {
          taken = (await raw('SET', '{move}:5:1:lease', 'probe', 'NX', 'PX', '60000')) !== null
          if (!taken) await sleep(20)
        }
        assert.ok(taken, 'slot 1 is free between attempts')
        // Slot 0 comes free: the lease takes it back, with the same generator, past every id it made.
        const back = once(lease, 'reacquired')
        await raw('DEL', '{move}:5:0:lease')
        await back
        assert.equal(lease.workerId, 0)
        assert.equal(lease.snowflake, first)
        assert.ok(lease.snowflake.nextId() > lost.last)
        assert.deepEqual(
          events.map(e => e.name).filter((n, i, all) => n !== all[i - 1]),
          ['lost', 'renewFailed', 'reacquired'],
        )
      } finally {
        if (lease) await lease.release()
        close()
      }
    },
  )

  scenario(
    'release() while a lost lease is taking a slot again: no generator opens, no mark is lowered, nothing stays held',
    async () => {
      const { client, raw, close } = await connect(kind, redis.port)
      const ttlMs = 2000
      try {
        // 1. Released while it holds slot 1 before use (slot 1's mark, left by another holder, is 1.5 s ahead).
        const mark = String(Date.now() + 1500)
        await raw('HSET', '{rel}:5:1:marks', 'until', mark)
        let events = []
        const a = await lostLease({ client, raw, prefix: 'rel', ttlMs, events })
        await until(async () => (await raw('EXISTS', '{rel}:5:1:lease')) === 1, 10_000, 'slot 1 taken')
        await a.lease.release()
        assert.equal(await raw('EXISTS', '{rel}:5:1:lease'), 0)
        // (Taking slot 1 raised its mark, as a renewal does; releasing it lowers nothing.)
        assert.ok(
          Number(await raw('HGET', '{rel}:5:1:marks', 'until')) >= Number(mark),
          "slot 1's mark is not lowered to the lost generator's last id",
        )
        await sleep(1800)
        assert.deepEqual(
          events.map(e => e.name),
          ['lost'],
        )
        assert.throws(() => a.lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
        assert.equal(a.lease.workerId, 0)

        // 2. Released while the take that brings slot 1 into use (its mark is behind the clock, so the take
        // confirms the lease) is on its way back. Slot 1's mark is far ahead (so it is skipped) until the gate is set.
        await raw('DEL', '{rel}:5:0:lease', '{rel}:5:0:marks', '{rel}:5:1:marks')
        await raw('HSET', '{rel}:5:1:marks', 'until', String(Date.now() + 60_000))
        let gate = null
        let opened
        const taking = new Promise(resolve => (opened = resolve))
        const gated = hookReplies(kind, client, async (args, reply) => {
          const take =
            String(args[1]).includes('local token, ttl, slots') && Array.isArray(reply) && String(reply[0]) === '1'
          if (gate && take) {
            opened()
            await gate
          }
          return reply
        })
        events = []
        const b = await lostLease({ client: gated, raw, prefix: 'rel', ttlMs, events })
        let release
        gate = new Promise(resolve => (release = resolve))
        await raw('HSET', '{rel}:5:1:marks', 'until', String(Date.now() - 1))
        await taking
        await b.lease.release()
        release()
        await sleep(300)
        const names = events.map(e => e.name)
        assert.equal(names[0], 'lost')
        assert.ok(!names.includes('reacquired'), `no reacquired after release(): ${names}`)
        assert.throws(() => b.lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
        assert.equal(b.lease.workerId, 0)
        assert.equal(await raw('EXISTS', '{rel}:5:1:lease'), 0)
      } finally {
        close()
      }
    },
  )

  scenario('a stall past the take timeout leaves no stray lease keys (CLIENT PAUSE)', async tt => {
    const { raw, close } = await connect(kind, redis.port)
    // ttlMs 3000: each holder loses its slot 2.4 s into the pause, and its take then times out (after 5 s) while
    // Redis holds it back; the take runs when the pause ends, after 9 s.
    const procs = Array.from({ length: 3 }, () => holder({ ...base, mode: 'stream', ttlMs: 3000, datacenterId: 2 }))
    try {
      const acquired = await Promise.all(procs.map(p => p.waitFor(e => e.event === 'acquired', 60_000)))
      const pausedAt = Date.now()
      await raw('CLIENT', 'PAUSE', '9000', 'ALL')
      // Within a TTL of the pause's end, before any stray key could expire by itself.
      await sleep(Math.max(0, pausedAt + 9300 - Date.now()))
      const keys = await raw('KEYS', '{snowid}:2:*:lease')
      const back = await Promise.all(procs.map(p => p.waitFor(e => e.event === 'reacquired', 60_000)))
      assert.ok(
        keys.length <= 3,
        `at most one lease key per holder just after the stall, found ${keys.sort().join(', ')}`,
      )
      // The abandoned take gave each holder's slot back, so each takes its own slot again at once.
      assert.deepEqual(
        back.map(e => e.workerId),
        acquired.map(e => e.workerId),
      )
      const failed = procs.map(p => p.events.filter(e => e.event === 'renewFailed').length)
      tt.diagnostic(
        `3 holders, ${keys.length} lease keys just after the stall, each back on its own slot; failed attempts ${failed.join(', ')}`,
      )
    } finally {
      await Promise.all(procs.map(p => p.stop()))
      await close()
    }
  })

  scenario(
    'ACL refusals are ERR_SNOWID_STORE_PERMISSION_DENIED naming what is missing; the documented ACL works',
    async () => {
      const { raw, close } = await connect(kind, redis.port)
      const users = {
        full: [
          '~{snowid}:*',
          '+eval',
          '+set',
          '+get',
          '+hmget',
          '+hget',
          '+hset',
          '+pexpire',
          '+del',
          '+info',
          '+wait',
        ],
        noEval: ['~{snowid}:*', '+set', '+get', '+hmget', '+hget', '+hset', '+pexpire', '+del', '+info', '+wait'],
        noHmget: ['~{snowid}:*', '+eval', '+set', '+get', '+hget', '+hset', '+pexpire', '+del', '+info', '+wait'],
        noDel: ['~{snowid}:*', '+eval', '+set', '+get', '+hmget', '+hget', '+hset', '+pexpire', '+info', '+wait'],
        noInfo: ['~{snowid}:*', '+eval', '+set', '+get', '+hmget', '+hget', '+hset', '+pexpire', '+del', '+wait'],
        noKeys: ['~other:*', '+eval', '+set', '+get', '+hmget', '+hget', '+hset', '+pexpire', '+del', '+info', '+wait'],
      }
      const opened = []
      const as = async user => {
        const c = await connect(kind, redis.port, { username: `${kind}-${user}`, password: 'pw' })
        opened.push(c)
        return c.client
      }
      try {
        for (const [user, rules] of Object.entries(users))
          await raw('ACL', 'SETUSER', `${kind}-${user}`, 'reset', 'on', '>pw', ...rules)
        const options = client => ({ client, datacenterId: 3, ttlMs: 1000, snowflake: { workerBits: 1 } })
        const ok = await acquireWorkerId(options(await as('full')))
        assert.equal(typeof ok.snowflake.nextId(), 'bigint')
        await ok.release()
        const refused = async (user, pattern) =>
          assert.rejects(acquireWorkerId(options(await as(user))), err => {
            assert.equal(err.code, 'ERR_SNOWID_STORE_PERMISSION_DENIED', `${user}: ${err.message}`)
            assert.match(err.message, pattern)
            return true
          })
        await refused('noEval', /the command EVAL \(\+eval\)/)
        await refused('noHmget', /the command HMGET \(\+hmget\)/)
        await refused('noInfo', /the command INFO \(\+info\)/)
        await refused('noKeys', /access to the lease keys/)
        const lease = await acquireWorkerId(options(await as('noDel')))
        await assert.rejects(lease.release(), err => {
          assert.equal(err.code, 'ERR_SNOWID_STORE_PERMISSION_DENIED')
          assert.match(err.message, /the command DEL \(\+del\)/)
          return true
        })
      } finally {
        for (const c of opened) await c.close()
        for (const user of Object.keys(users)) await raw('ACL', 'DELUSER', `${kind}-${user}`).catch(() => {})
        await raw('DEL', '{snowid}:3:0:lease', '{snowid}:3:1:lease').catch(() => {})
        await close()
      }
    },
  )

  scenario('a renewal whose answer is late is one renewFailed, whose message names it once, in whole ms', async () => {
    const { client, raw, close } = await connect(kind, redis.port)
    const within = (promise, what) =>
      Promise.race([
        promise,
        sleep(15_000, undefined, { ref: false }).then(() => Promise.reject(new Error(`${what}: not within 15 s`))),
      ])
    try {
      await raw('HSET', '{slow}:5:0:marks', 'until', String(Date.now() - 1))
      // ttlMs 6000: each renewal is given 2000 ms (a third of the TTL, in whole ms). One renewal's answer is held
      // back 2400 ms; the next one gets through before the deadline, which marginMs 100 puts 1.6 s after the failed
      // one gives up. (With ttlMs 2000 and the default margin, beside three busy loops on two cores, the deadline came
      // first: 'lost', not 'renewFailed', then not 'renewed'.)
      let holdBack = false
      const late = hookReplies(kind, client, async (args, reply) => {
        if (holdBack && String(args[1]).includes('PEXPIRE')) {
          holdBack = false
          await sleep(2400)
        }
        return reply
      })
      const lease = await acquireWorkerId({
        client: late,
        datacenterId: 5,
        ttlMs: 6000,
        marginMs: 100,
        keyPrefix: 'slow',
        snowflake: { workerBits: 0 },
      })
      const lost = []
      lease.on('lost', e => lost.push(e))
      const failed = once(lease, 'renewFailed')
      holdBack = true
      const [err] = await within(failed, 'renewFailed')
      assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE')
      assert.equal(
        err.message,
        "renew: expected an answer from Redis, found an error: no answer from Redis within 2000 ms. Check that Redis is up and the client connected; the error is this one's cause",
      )
      await within(once(lease, 'renewed'), 'renewed')
      assert.deepEqual(lost, [])
      await lease.release()
    } finally {
      await close()
    }
  })

  scenario('a key with garbage in it is ERR_SNOWID_LEASE_CORRUPT, and is left as found', async () => {
    const { client, raw, close } = await connect(kind, redis.port)
    try {
      const opts = { client, datacenterId: 7, ttlMs: 200, keyPrefix: 'bad', snowflake: { workerBits: 0 } }
      await raw('SET', '{bad}:7:0:marks', 'garbage')
      await assert.rejects(acquireWorkerId(opts), err => {
        assert.equal(err.code, 'ERR_SNOWID_LEASE_CORRUPT')
        assert.match(err.message, /\{bad\}:7:0:marks/)
        return true
      })
      assert.equal(await raw('GET', '{bad}:7:0:marks'), 'garbage')
      assert.equal(await raw('EXISTS', '{bad}:7:0:lease'), 0, 'the slot taken for the look is given back')
      await raw('DEL', '{bad}:7:0:marks')
      await raw('HSET', '{bad}:7:0:marks', 'until', 'soon')
      await assert.rejects(acquireWorkerId(opts), { code: 'ERR_SNOWID_LEASE_CORRUPT' })
    } finally {
      close()
    }
  })
}

module.exports = { clientScenarios, connect, redisScenarios }
