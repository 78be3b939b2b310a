'use strict'

// The events snowid publishes on node:diagnostics_channel (lib/diagnostics.js, docs/observability.md): a store
// lease's taking, renewals, loss and move to another slot on `snowid:lease`, against a real redis-server; a host
// lease's taking, move on from a configured worker id and loss, read by `watch()`; a generator's waits on
// `snowid:wait` by kind, and its clock steps back, moved or refused, on `snowid:clock`; and nothing told of what
// happened while nobody subscribed.

const test = require('node:test')
const assert = require('node:assert/strict')
const dc = require('node:diagnostics_channel')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const { holdWorker, isolateLeases, runNode, wasiSkip } = require('./helpers.js')
isolateLeases()
const HOST_LEASE_SKIP = wasiSkip('no host lease')

const snowid = require('../index.js')
const { reportMissing, startRedis } = require('./servers.js')
const { acquireWorkerId } = require('../lib/redis.js')
const { connect } = require('./redis-scenarios.js')

/** The messages of `name` from now until the returned `stop()`. */
function listen(t, name) {
  const messages = []
  const onMessage = m => messages.push(m)
  dc.subscribe(name, onMessage)
  const stop = () => dc.unsubscribe(name, onMessage)
  t.after(stop)
  return { messages, stop }
}

/** Resolves once `check()` is true, polling every 10 ms for up to 20 s. */
async function until(check, what) {
  const end = Date.now() + 20_000
  while (!check()) {
    if (Date.now() > end) assert.fail(`expected ${what} within 20 s`)
    await sleep(10)
  }
}

/** Makes ids with `sf` until its stats count a sequence wait. */
function sequenceWait(sf) {
  const before = sf.stats().sequenceWaits
  while (sf.stats().sequenceWaits === before) for (let i = 0; i < 100; i++) sf.nextId()
}

test('a store lease publishes its taking, renewals, loss and move on snowid:lease', async t => {
  const redis = await startRedis()
  if (!redis) {
    reportMissing(t, 'redis-server', "apt-get install redis-server (Debian's package)")
    return
  }
  t.after(() => redis.stop())
  const { client, raw, close } = await connect('ioredis', redis.port)
  t.after(close)
  const { messages } = listen(t, 'snowid:lease')
  const key = (w, kind) => `{events}:5:${w}:${kind}`
  // Both slots' marks in the past, so that either is used at once.
  await raw('HSET', key(0, 'marks'), 'until', String(Date.now() - 1))
  await raw('HSET', key(1, 'marks'), 'until', String(Date.now() - 1))
  const lease = await acquireWorkerId({
    client,
    datacenterId: 5,
    ttlMs: 1000,
    keyPrefix: 'events',
    snowflake: { workerBits: 1 },
  })
  t.after(() => lease.release())
  assert.equal(lease.workerId, 0)
  assert.deepEqual(
    messages.map(m => [m.event, m.store, m.datacenterId, m.workerId, m.lease === lease]),
    [['acquired', 'Redis', 5, 0, true]],
  )
  assert.ok(messages[0].deadline > Date.now())
  await until(() => messages.some(m => m.event === 'renewed'), 'a renewal')
  assert.equal(messages.find(m => m.event === 'renewed').late, false)

  // Another holder takes slot 0: the lease is lost, then takes slot 1, the only other.
  await raw('SET', key(0, 'lease'), 'another-holder', 'PX', '60000')
  await until(() => messages.some(m => m.event === 'moved'), 'a move')
  const lost = messages.find(m => m.event === 'lost')
  assert.equal(lost.workerId, 0)
  assert.equal(lost.error.code, 'ERR_SNOWID_LEASE_LOST')
  const moved = messages.find(m => m.event === 'moved')
  assert.deepEqual([moved.previousWorkerId, moved.workerId, lease.workerId], [0, 1, 1])
  assert.ok(messages.indexOf(lost) < messages.indexOf(moved))
})

// The default generator's first id and a Snowflake's take host leases; then the default generator's lease file is
// replaced by one that is not a lease record (as another process could do: a process in another network namespace,
// which the claims do not reach), so the next mark write finds the slot lost.
const HOST_LOST = `
const dc = require('node:diagnostics_channel')
const fs = require('node:fs')
const path = require('node:path')
const snowid = require('.')
const sf = new snowid.Snowflake({ workerId: 3 })
const out = []
dc.subscribe('snowid:lease', m => out.push({ ...m, generator: m.generator === null ? 'default' : m.generator === sf ? 'sf' : 'other', error: m.error && { code: m.error.code, message: m.error.message, name: m.error.name } }))
const stop = snowid.watch({ intervalMs: 10 })
const before = snowid.stats().hostLease
snowid.nextId()
sf.nextId()
const held = snowid.stats().hostLease
const dir = process.env.SNOWID_LEASE_DIR
setTimeout(() => {
  fs.writeFileSync(path.join(dir, 'planted'), 'not a lease record\\n')
  fs.renameSync(path.join(dir, 'planted'), path.join(dir, 'dc0-worker1.lease'))
  let error
  const end = Date.now() + 20000
  const again = () => {
    try {
      snowid.nextId()
    } catch (e) {
      error = { code: e.code, message: e.message }
    }
    if (!error && Date.now() < end) return setTimeout(again, 5)
    setTimeout(() => {
      stop()
      console.log(JSON.stringify({ out, before, held, error, after: snowid.stats().hostLease, sf: sf.stats().hostLease }))
    }, 200)
  }
  again()
}, 100)
`

test('watch() publishes a host lease taken by a first id, and its loss, on snowid:lease', {
  skip: process.platform === 'win32' ? 'Windows refuses to replace a held file' : HOST_LEASE_SKIP.skip,
}, () => {
  const r = runNode(HOST_LOST, { SNOWID_WORKER_ID: '1' })
  assert.equal(r.status, 0, r.stderr)
  const { out, before, held, error, after, sf } = JSON.parse(r.stdout)
  assert.equal(before, null, 'no host lease before the first id')
  assert.deepEqual(held, { datacenterId: 0, workerId: 1, requestedWorkerId: null, lost: null })
  assert.equal(error?.code, 'ERR_SNOWID_LEASE_LOST', JSON.stringify(error))
  assert.deepEqual(after, { ...held, lost: error.message })
  assert.deepEqual(sf, { datacenterId: 0, workerId: 3, requestedWorkerId: null, lost: null }, 'its own slot holds')
  assert.deepEqual(out, [
    { event: 'acquired', store: 'host', datacenterId: 0, workerId: 1, generator: 'default' },
    { event: 'acquired', store: 'host', datacenterId: 0, workerId: 3, generator: 'sf' },
    {
      event: 'lost',
      store: 'host',
      datacenterId: 0,
      workerId: 1,
      generator: 'default',
      error: { code: 'ERR_SNOWID_LEASE_LOST', message: error.message, name: 'Error' },
    },
  ])
  assert.match(error.message, /another file is there that is not a lease record/)
})

test(
  'a generator that moves on from a configured worker id another process holds publishes moved',
  HOST_LEASE_SKIP,
  async t => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-events-'))
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
    await holdWorker(t, dir, 0)
    const r = runNode(
      `
const dc = require('node:diagnostics_channel')
const snowid = require('.')
const out = []
dc.subscribe('snowid:lease', m => out.push({ ...m, generator: m.generator === null ? 'default' : 'other' }))
const stop = snowid.watch({ intervalMs: 10 })
snowid.nextId()
setTimeout(() => { stop(); console.log(JSON.stringify({ out, stats: snowid.stats().hostLease })) }, 200)
`,
      { SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0', SNOWID_WORKER_ID_IF_TAKEN: 'next' },
    )
    assert.equal(r.status, 0, r.stderr)
    const { out, stats } = JSON.parse(r.stdout)
    assert.deepEqual(stats, { datacenterId: 0, workerId: 1, requestedWorkerId: 0, lost: null })
    assert.deepEqual(out, [
      { event: 'moved', store: 'host', datacenterId: 0, workerId: 1, generator: 'default', previousWorkerId: 0 },
    ])
  },
)

test('Snowflakes made and dropped in one synchronous loop are not kept alive to its end', () => {
  // watch() holds a Snowflake weakly from its first method access, not from its making: a WeakRef keeps its target
  // for the rest of the job, so one per instance made kept every instance of the loop (about 140 bytes each).
  const r = runNode(`
const { Snowflake } = require('.')
const before = process.memoryUsage().rss
for (let i = 0; i < 500000; i++) new Snowflake()
console.log(JSON.stringify({ grewMiB: (process.memoryUsage().rss - before) / 2 ** 20 }))
`)
  assert.equal(r.status, 0, r.stderr)
  const { grewMiB } = JSON.parse(r.stdout)
  assert.ok(grewMiB < 32, `RSS grew by ${grewMiB.toFixed(1)} MiB over 500,000 Snowflakes`)
})

test('watch() publishes a Snowflake sequence wait on snowid:wait, with its kind and how long', async t => {
  const sf = new snowid.Snowflake({ workerId: 3, sequenceBits: 1, maxLeadMs: 0 })
  const { messages } = listen(t, 'snowid:wait')
  const stop = snowid.watch({ intervalMs: 10 })
  t.after(stop)
  sequenceWait(sf)
  await until(() => messages.some(m => m.generator === sf), 'a wait message for the Snowflake')
  const mine = messages.filter(m => m.generator === sf)
  assert.ok(
    mine.every(m => m.reason === 'sequence'),
    JSON.stringify(mine.map(m => m.reason)),
  )
  const calls = mine.reduce((n, m) => n + m.calls, 0)
  assert.ok(calls >= 1)
  assert.ok(mine.every(m => Number.isSafeInteger(m.ms) && m.ms >= 0))
  assert.equal(mine.at(-1).total, sf.stats().sequenceWaits)
  const s = sf.stats()
  assert.equal(s.waits, s.sequenceWaits + s.markWaits + s.clockWaits)
  assert.equal(s.markWaits + s.clockWaits, 0)
})

test('what happened while nobody subscribed is never published', async t => {
  const sf = new snowid.Snowflake({ workerId: 4, sequenceBits: 1, maxLeadMs: 0 })
  const stop = snowid.watch({ intervalMs: 10 })
  t.after(stop)
  sequenceWait(sf)
  // Ticks pass with no subscriber: nothing read, nothing kept.
  await sleep(50)
  const { messages } = listen(t, 'snowid:wait')
  await sleep(100)
  assert.deepEqual(
    messages.filter(m => m.generator === sf),
    [],
  )
  // A wait after the subscription is told.
  sequenceWait(sf)
  await until(() => messages.some(m => m.generator === sf), 'the wait made after subscribing')
})

test('watch() refuses bad options and a bad intervalMs with a coded error', () => {
  for (const intervalMs of [0, -1, 1.5, '10', 2 ** 31])
    assert.throws(() => snowid.watch({ intervalMs }), { code: 'ERR_SNOWID_INVALID_ARGUMENT', name: 'RangeError' })
  for (const options of [null, 5, 'fast'])
    assert.throws(() => snowid.watch(options), { code: 'ERR_SNOWID_INVALID_ARGUMENT', name: 'TypeError' })
})

// libfaketime, which steps a running process's wall clock when its offset file is rewritten (Debian's faketime).
const LIBFAKETIME = ['x86_64-linux-gnu', 'aarch64-linux-gnu', '']
  .map(dir => path.join('/usr/lib', dir, 'faketime', 'libfaketime.so.1'))
  .find(file => fs.existsSync(file))

/**
 * Runs `code` in a process whose clock libfaketime moves by the offset written to the file OFFSET_FILE names ('+0'
 * at the start), and checks that it exited 0. Without libfaketime: fails under CI, else skips `t` and returns null.
 */
function underFaketime(t, code, env) {
  if (!LIBFAKETIME) {
    const message = 'libfaketime is not installed (apt-get install faketime)'
    if (process.env.CI) throw new Error(message)
    t.diagnostic(`*** SKIPPED: ${message} ***`)
    t.skip(message)
    return null
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-clock-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const offset = path.join(dir, 'offset')
  fs.writeFileSync(offset, '+0\n')
  const r = runNode(code, {
    ...env,
    OFFSET_FILE: offset,
    LD_PRELOAD: LIBFAKETIME,
    FAKETIME_TIMESTAMP_FILE: offset,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  })
  assert.equal(r.status, 0, r.stderr)
  return r
}

// The clock of a process steps back 1 s: the default generator moves to clockBack 1 (snowid:clock), and a Snowflake
// with onClockBack 'wait' waits for the clock to catch up (snowid:wait, reason 'clock').
const STEP_BACK = `
const dc = require('node:diagnostics_channel')
const fs = require('node:fs')
const snowid = require('.')
const out = []
const waiter = new snowid.Snowflake({ workerId: 2, onClockBack: 'wait', maxWaitMs: 5000 })
const name = g => (g === null ? 'default' : g === waiter ? 'waiter' : 'other')
dc.subscribe('snowid:clock', m => out.push({ channel: 'clock', ...m, generator: name(m.generator) }))
dc.subscribe('snowid:wait', m => out.push({ channel: 'wait', ...m, generator: name(m.generator) }))
const stop = snowid.watch({ intervalMs: 20 })
snowid.nextId()
waiter.nextId()
setTimeout(() => {
  fs.writeFileSync(process.env.OFFSET_FILE, '-1s\\n')
  snowid.nextId()
  waiter.nextId()
  setTimeout(() => {
    stop()
    console.log(JSON.stringify({ out, stats: snowid.stats(), waiter: waiter.stats() }))
  }, 300)
}, 100)
`

test('a clock step back is published on snowid:clock, and a wait for the clock on snowid:wait', t => {
  const r = underFaketime(t, STEP_BACK, { SNOWID_WORKER_ID: '1' })
  if (!r) return
  const { out, stats, waiter } = JSON.parse(r.stdout)
  assert.equal(stats.clockBack, 1)
  assert.deepEqual(
    out.filter(m => m.channel === 'clock'),
    [{ channel: 'clock', event: 'clockBack', generator: 'default', clockBack: 1, steps: 1, total: 1 }],
  )
  const waits = out.filter(m => m.channel === 'wait')
  assert.deepEqual(
    waits.map(({ generator, reason, calls, total }) => ({ generator, reason, calls, total })),
    [{ generator: 'waiter', reason: 'clock', calls: 1, total: 1 }],
  )
  assert.equal(waits[0].ms, waiter.clockWaitMs)
  assert.ok(waiter.clockWaitMs > 0)
  assert.deepEqual([waiter.waits, waiter.clockWaits, waiter.clockBackEvents], [1, 1, 0])
})

// The clock of a process steps back 1 s under generators that refuse it: the default generator with onClockBack
// 'throw' (twice), a Snowflake whose 'wait' would exceed its maxWaitMs, and one with no clockBack value to move to.
const REFUSED = `
const dc = require('node:diagnostics_channel')
const fs = require('node:fs')
const snowid = require('.')
const impatient = new snowid.Snowflake({ workerId: 2, onClockBack: 'wait', maxWaitMs: 10 })
const spent = new snowid.Snowflake({ workerId: 3, clockBackBits: 0 })
const name = g => (g === null ? 'default' : g === impatient ? 'impatient' : g === spent ? 'spent' : 'other')
const out = []
dc.subscribe('snowid:clock', m => out.push({ ...m, generator: name(m.generator) }))
const stop = snowid.watch({ intervalMs: 20 })
const gens = [snowid, impatient, spent]
for (const g of gens) g.nextId()
const errors = []
setTimeout(() => {
  fs.writeFileSync(process.env.OFFSET_FILE, '-1s\\n')
  for (const g of [snowid, ...gens]) {
    try {
      g.nextId()
    } catch (e) {
      errors.push(e.code)
    }
  }
  setTimeout(() => {
    stop()
    console.log(JSON.stringify({ out, errors, stats: gens.map(g => g.stats().clockBackRefusals) }))
  }, 300)
}, 100)
`

test('a clock step back a generator refuses is published on snowid:clock and counted in stats()', t => {
  const r = underFaketime(t, REFUSED, { SNOWID_WORKER_ID: '1', SNOWID_ON_CLOCK_BACK: 'throw' })
  if (!r) return
  const { out, errors, stats } = JSON.parse(r.stdout)
  assert.deepEqual(errors, Array(4).fill('ERR_SNOWID_CLOCK_BACKWARDS'))
  assert.deepEqual(stats, [2, 1, 1])
  const byGenerator = Object.fromEntries(out.map(m => [m.generator, m]))
  assert.equal(out.length, 3, JSON.stringify(out))
  assert.deepEqual(byGenerator, {
    default: { event: 'refused', generator: 'default', clockBack: 0, calls: 2, total: 2 },
    impatient: { event: 'refused', generator: 'impatient', clockBack: 0, calls: 1, total: 1 },
    spent: { event: 'refused', generator: 'spent', clockBack: 0, calls: 1, total: 1 },
  })
})
