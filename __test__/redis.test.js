'use strict'

// snowid/redis against a real redis-server, with each client library: ioredis and node-redis.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('./helpers.js').freshLeaseDir()

const { ROOT, cleanEnv } = require('./helpers.js')
const { reportMissing, startRedis, freePort } = require('./servers.js')
const snowid = require('..')
const { acquireWorkerId, configureWorkerId } = require('../lib/redis.js')

const HOLDER = path.join(__dirname, 'fixtures', 'redis-holder.js')
const CLIENTS = ['ioredis', 'redis']

/** A holder process: its parsed output lines so far, and a way to wait for one. */
function holder(settings) {
  const child = spawn(process.execPath, [HOLDER], {
    cwd: ROOT,
    env: cleanEnv({ SNOWID_TEST_REDIS: JSON.stringify(settings) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const events = []
  let rest = ''
  let stderr = ''
  const waiters = []
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => {
    rest += chunk
    const lines = rest.split('\n')
    rest = lines.pop()
    for (const line of lines) {
      if (!line) continue
      events.push(JSON.parse(line))
      for (const w of [...waiters]) w()
    }
  })
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => child.on('exit', resolve))
  return {
    child,
    events,
    exited,
    get stderr() {
      return stderr
    },
    /** Resolves with the first event matching `pred`, or rejects after `ms`. */
    waitFor(pred, ms = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const e = events.find(pred)
          if (e) {
            waiters.splice(waiters.indexOf(check), 1)
            clearTimeout(timer)
            resolve(e)
          }
        }
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1)
          reject(new Error(`no matching event in ${ms} ms; events: ${JSON.stringify(events.map((e) => e.event))}; stderr: ${stderr}`))
        }, ms)
        waiters.push(check)
        check()
      })
    },
    ids() {
      return events.filter((e) => e.event === 'ids').flatMap((e) => e.ids)
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

function assertNoDuplicates(ids, what) {
  const seen = new Set()
  let dups = 0
  for (const id of ids) {
    if (seen.has(id)) dups++
    seen.add(id)
  }
  assert.equal(dups, 0, `${dups} duplicate ids ${what}`)
}

async function connect(kind, port) {
  if (kind === 'ioredis') {
    const Redis = require('ioredis')
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    await client.connect().catch(() => {})
    return { client, raw: (...args) => client.call(...args), close: () => client.disconnect() }
  }
  const { createClient } = require('redis')
  const client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: false } })
  client.on('error', () => {})
  await client.connect().catch(() => {})
  return { client, raw: (...args) => client.sendCommand(args.map(String)), close: () => client.destroy() }
}

/** `client` as snowid/redis sees it, with `hook(args, reply)` run on every reply before the caller gets it. */
function hookReplies(kind, client, hook) {
  if (kind === 'ioredis') return { call: async (...args) => hook(args, await client.call(...args)) }
  return { isOpen: true, sendCommand: async (args) => hook(args, await client.sendCommand(args)) }
}

/** Resolves once `pred()` is true, polling every 10 ms; rejects after `ms`. */
async function until(pred, ms, what) {
  const end = Date.now() + ms
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`)
    await sleep(10)
  }
}

/**
 * A lease on slot 0 of a 2-slot datacenter (slot 0 seeded with a past mark, so it is used at once), then lost: another
 * holder takes slot 0's key, as if this process had stalled past its TTL. Resolves once the lease has emitted 'lost'.
 */
async function lostLease({ client, raw, prefix, ttlMs, events }) {
  const key = (w, kind) => `{${prefix}}:5:${w}:${kind}`
  await raw('HSET', key(0, 'marks'), 'until', String(Date.now() - 1))
  const lease = await acquireWorkerId({ client, datacenterId: 5, ttlMs, keyPrefix: prefix, snowflake: { workerBits: 1 } })
  for (const name of ['lost', 'renewFailed', 'reacquired']) lease.on(name, (x) => events.push({ name, x, at: Date.now() }))
  assert.equal(lease.workerId, 0)
  const last = lease.snowflake.nextId()
  const lost = once(lease, 'lost')
  await raw('SET', key(0, 'lease'), 'another-holder', 'PX', '60000')
  const [err] = await lost
  assert.equal(err.code, 'ERR_SNOWID_LEASE_LOST')
  return { lease, last, key }
}

async function main() {
  const probe = await startRedis()
  if (!probe) {
    reportMissing(test, 'redis-server', "apt-get install redis-server (Debian's package)")
    return
  }
  await probe.stop()

  for (const kind of CLIENTS) {
    test(`with ${kind}`, async (t) => {
      const redis = await startRedis()
      t.after(() => redis.stop())
      const base = { client: kind, port: redis.port }

      await t.test('a lease issues ids under its slot, renews, and stops when released', async () => {
        const { client, raw, close } = await connect(kind, redis.port)
        try {
          const started = Date.now()
          const lease = await acquireWorkerId({ client, datacenterId: 6, ttlMs: 300, keyPrefix: 'unit' })
          const waited = Date.now() - started
          assert.ok(waited >= 300, `a slot with no history is held one TTL before use (waited ${waited} ms)`)
          assert.deepEqual([lease.datacenterId, lease.workerId], [6, 0])
          const id = lease.snowflake.nextId()
          const d = lease.snowflake.decode(id)
          assert.deepEqual([d.datacenterId, d.workerId], [6, 0])
          const renewed = await new Promise((resolve) => lease.once('renewed', resolve))
          assert.ok(renewed.deadline > Date.now())
          assert.equal(renewed.deadline, lease.deadline)
          const until = await raw('HGET', '{unit}:6:0:marks', 'until')
          assert.ok(Number(until) >= lease.deadline, 'the mark covers the deadline')
          const last = lease.snowflake.nextId()
          await lease.release()
          assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
          assert.equal(await raw('EXISTS', '{unit}:6:0:lease'), 0)
          // The next holder finds history, so it starts at once, past every id the first one made.
          const again = await acquireWorkerId({ client, datacenterId: 6, ttlMs: 300, keyPrefix: 'unit' })
          assert.equal(again.workerId, 0)
          assert.ok(again.snowflake.nextId() > last)
          await again.release()
        } finally {
          close()
        }
      })

      await t.test('40 processes across 2 datacenter ids acquire at once: distinct slots, 0 duplicate ids', async (tt) => {
        const procs = Array.from({ length: 40 }, (_, i) =>
          holder({ ...base, mode: 'burst', count: 5000, ttlMs: 1000, datacenterId: i % 2 }),
        )
        try {
          const acquired = await Promise.all(procs.map((p) => p.waitFor((e) => e.event === 'acquired' || e.event === 'error', 60_000)))
          assert.deepEqual(acquired.filter((e) => e.event !== 'acquired'), [], 'every process got a slot')
          await Promise.all(procs.map((p) => p.waitFor((e) => e.event === 'ids', 60_000)))
          const slots = new Set(acquired.map((e) => `${e.datacenterId}:${e.workerId}`))
          assert.equal(slots.size, 40, 'all slots distinct')
          const ids = procs.flatMap((p) => p.ids())
          assert.equal(ids.length, 200_000)
          assertNoDuplicates(ids, 'among 40 holders')
          for (const [i, p] of procs.entries()) {
            const d = snowid.decode(p.ids()[0])
            assert.deepEqual([d.datacenterId, d.workerId], [acquired[i].datacenterId, acquired[i].workerId])
          }
          tt.diagnostic(`40 holders, ${slots.size} distinct slots, ${ids.length} ids, 0 duplicates`)
        } finally {
          await Promise.all(procs.map((p) => p.stop()))
        }
      })

      await t.test('more contenders than slots: the extras get ERR_SNOWID_NO_FREE_WORKER_ID after waitMs', async (tt) => {
        // workerBits 2: four slots in datacenter 3.
        const procs = Array.from({ length: 7 }, () =>
          holder({ ...base, mode: 'burst', count: 100, ttlMs: 500, waitMs: 1500, workerBits: 2, datacenterId: 3 }),
        )
        try {
          const first = await Promise.all(procs.map((p) => p.waitFor((e) => e.event === 'acquired' || e.event === 'error', 60_000)))
          const winners = first.filter((e) => e.event === 'acquired')
          const losers = first.filter((e) => e.event === 'error')
          assert.equal(winners.length, 4)
          assert.equal(new Set(winners.map((e) => e.workerId)).size, 4, 'no slot shared')
          assert.equal(losers.length, 3)
          for (const e of losers) {
            assert.equal(e.code, 'ERR_SNOWID_NO_FREE_WORKER_ID', e.message)
            assert.ok(e.elapsed >= 1500, `gave up after ${e.elapsed} ms`)
          }
          tt.diagnostic(`4 winners; 3 refused after ${losers.map((e) => e.elapsed).join(', ')} ms`)
        } finally {
          await Promise.all(procs.map((p) => p.stop()))
        }
      })

      await t.test('a holder stopped past its TTL throws ERR_SNOWID_LEASE_LOST on resuming, with 0 duplicates', async (tt) => {
        // workerBits 0: a single slot in datacenter 4, so the second process must take the stalled one's.
        const settings = { ...base, ttlMs: 600, workerBits: 0, datacenterId: 4, waitMs: 5000 }
        const a = holder({ ...settings, mode: 'stream' })
        let b
        try {
          await a.waitFor((e) => e.event === 'acquired')
          await sleep(300)
          a.child.kill('SIGSTOP')
          const stoppedAt = Date.now()
          b = holder({ ...settings, mode: 'stream' })
          const bAcquired = await b.waitFor((e) => e.event === 'acquired')
          await sleep(300)
          a.child.kill('SIGCONT')
          const refused = await a.waitFor((e) => e.event === 'refused')
          assert.equal(refused.code, 'ERR_SNOWID_LEASE_LOST')
          await a.waitFor((e) => e.event === 'lost')
          await sleep(200)
          await a.stop()
          await b.stop()
          // Every id A made carries a time before a deadline it had confirmed, so before B could hold the slot.
          const deadlines = a.events.filter((e) => e.deadline).map((e) => e.deadline)
          const lastDeadline = Math.max(...deadlines)
          const aIds = a.ids()
          const bIds = b.ids()
          assert.ok(aIds.length > 0 && bIds.length > 0)
          for (const id of aIds) assert.ok(snowid.timestampOf(id) < lastDeadline)
          assert.ok(lastDeadline <= bAcquired.at, 'A stopped issuing before B started')
          assertNoDuplicates([...aIds, ...bIds], 'between the stalled holder and its successor')
          tt.diagnostic(
            `A stopped; B took the slot ${bAcquired.at - stoppedAt} ms later; A: ${aIds.length} ids, then ERR_SNOWID_LEASE_LOST on resuming; B: ${bIds.length} ids; 0 duplicates`,
          )
        } finally {
          a.child.kill('SIGCONT')
          await a.stop()
          if (b) await b.stop()
        }
      })

      await t.test('Redis restarted with its data lost mid-run: holders stop, recover, and make 0 duplicates', async (tt) => {
        const procs = Array.from({ length: 3 }, () => holder({ ...base, mode: 'stream', ttlMs: 800, datacenterId: 1 }))
        try {
          await Promise.all(procs.map((p) => p.waitFor((e) => e.event === 'acquired')))
          await sleep(500)
          // Measured before the new server is spawned, not after it answers: a holder may reach it first.
          const restartedAt = await redis.restart(1200)
          const back = await Promise.all(procs.map((p) => p.waitFor((e) => e.event === 'reacquired', 30_000)))
          await sleep(500)
          await Promise.all(procs.map((p) => p.stop()))
          for (const [i, p] of procs.entries()) {
            assert.ok(p.events.some((e) => e.event === 'refused' && e.code === 'ERR_SNOWID_LEASE_LOST'), `holder ${i} stopped while Redis was away`)
            const lostAt = p.events.findIndex((e) => e.event === 'lost')
            assert.equal(p.events[lostAt]?.code, 'ERR_SNOWID_LEASE_LOST', `holder ${i} reported the loss`)
            assert.ok(lostAt < p.events.findIndex((e) => e.event === 'reacquired'), `holder ${i}: lost, then reacquired`)
            // Before the loss it issued only ids stamped before the last deadline Redis had confirmed.
            const confirmed = Math.max(...p.events.slice(0, lostAt).filter((e) => e.deadline).map((e) => e.deadline))
            const before = p.ids().filter((id) => snowid.timestampOf(id) < back[i].at)
            assert.ok(before.length > 0 && before.every((id) => snowid.timestampOf(id) < confirmed), `holder ${i} stopped at its deadline`)
            const after = p.ids().filter((id) => snowid.timestampOf(id) > back[i].at)
            assert.ok(after.length > 0, `holder ${i} issued ids again after recovering`)
            // A slot with no history (Redis lost it) is held one TTL before use.
            assert.ok(back[i].at - restartedAt >= 800, `holder ${i} recovered ${back[i].at - restartedAt} ms after the restart`)
          }
          const ids = procs.flatMap((p) => p.ids())
          assertNoDuplicates(ids, 'across a Redis restart')
          tt.diagnostic(`${ids.length} ids from 3 holders across a restart, 0 duplicates; recovered after ${back.map((e) => e.at - restartedAt).join(', ')} ms; renewFailed ${procs.map((p) => p.events.filter((e) => e.event === 'renewFailed').length).join(', ')} times`)
        } finally {
          await Promise.all(procs.map((p) => p.stop()))
        }
      })

      await t.test('a lost lease refuses ids until it holds a slot again, and gives back at once a slot it cannot use', async () => {
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
          await until(() => events.some((e) => e.name === 'renewFailed'), 10_000, 'a failed attempt on slot 1')
          const failed = events.find((e) => e.name === 'renewFailed').x
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
            events.map((e) => e.name).filter((n, i, all) => n !== all[i - 1]),
            ['lost', 'renewFailed', 'reacquired'],
          )
        } finally {
          if (lease) await lease.release()
          close()
        }
      })

      await t.test('release() while a lost lease is taking a slot again: no generator opens, no mark is lowered, nothing stays held', async () => {
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
          assert.equal(await raw('HGET', '{rel}:5:1:marks', 'until'), mark, "slot 1's mark is not lowered to the lost generator's last id")
          await sleep(1800)
          assert.deepEqual(events.map((e) => e.name), ['lost'])
          assert.throws(() => a.lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
          assert.equal(a.lease.workerId, 0)

          // 2. Released while the renewal that would bring slot 1 into use is on its way back.
          await raw('DEL', '{rel}:5:0:lease', '{rel}:5:0:marks', '{rel}:5:1:marks')
          await raw('HSET', '{rel}:5:1:marks', 'until', String(Date.now() - 1))
          let gate = null
          let opened
          const gated = hookReplies(kind, client, async (args, reply) => {
            const renewal = String(args[1]).includes('PEXPIRE') && args.map(String).includes('{rel}:5:1:lease')
            if (gate && renewal) {
              opened()
              await gate
            }
            return reply
          })
          events = []
          const b = await lostLease({ client: gated, raw, prefix: 'rel', ttlMs, events })
          let release
          gate = new Promise((resolve) => (release = resolve))
          await new Promise((resolve) => (opened = resolve))
          await b.lease.release()
          release()
          await sleep(300)
          assert.deepEqual(events.map((e) => e.name), ['lost'], 'no reacquired after release()')
          assert.throws(() => b.lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
          assert.equal(b.lease.workerId, 0)
          assert.equal(await raw('EXISTS', '{rel}:5:1:lease'), 0)
        } finally {
          close()
        }
      })

      await t.test('a key with garbage in it is ERR_SNOWID_LEASE_CORRUPT, and is left as found', async () => {
        const { client, raw, close } = await connect(kind, redis.port)
        try {
          const opts = { client, datacenterId: 7, ttlMs: 200, keyPrefix: 'bad', snowflake: { workerBits: 0 } }
          await raw('SET', '{bad}:7:0:marks', 'garbage')
          await assert.rejects(acquireWorkerId(opts), (err) => {
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
    })
  }

  test('Redis unreachable at acquire is ERR_SNOWID_REDIS_UNAVAILABLE, with either client', async () => {
    const port = await freePort()
    for (const kind of CLIENTS) {
      const { client, close } = await connect(kind, port)
      try {
        await assert.rejects(acquireWorkerId({ client, ttlMs: 500 }), (err) => {
          assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE', `${kind}: ${err.message}`)
          return true
        })
      } finally {
        close()
      }
    }
  })

  test('bad options are coded errors', async () => {
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
    ]
    for (const [options, Class] of bad) {
      await assert.rejects(acquireWorkerId(options), (err) => {
        assert.ok(err instanceof Class, `${JSON.stringify(options)}: ${err}`)
        assert.equal(err.code, 'ERR_SNOWID_INVALID_ARGUMENT')
        return true
      })
    }
    await assert.rejects(acquireWorkerId({ client: { call() {} }, datacenterId: 8 }), { code: 'ERR_SNOWID_INVALID_CONFIG' })
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
      const r = await new Promise((resolve) => {
        const c = spawn(process.execPath, ['-e', code], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
        let out = ''
        let err = ''
        c.stdout.on('data', (d) => (out += d))
        c.stderr.on('data', (d) => (err += d))
        c.on('exit', (status) => resolve({ status, out, err }))
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
