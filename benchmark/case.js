'use strict'

// Runs one benchmark case in this process (so V8's feedback from one case cannot distort another).
//   node benchmark/case.js check <id>    correctness: duplicates in 1M ids, increasing, duplicates across 2 threads
//   node benchmark/case.js time <id>     one timed round after a warm-up
//   node benchmark/case.js threads       snowid nextId() in 2 worker_threads at the cap, timed together
//   node benchmark/case.js scaling <t>   below the cap: <t> worker_threads on the shared default generator, timed
//                                        together from a common start, after each has warmed up
//   node benchmark/case.js scaling <t> floor   the same with the N-API floor (its counter is shared memory too)
//   node benchmark/case.js instances [k] RSS after 1M `new Snowflake()` in one synchronous loop, of k configurations
//   node benchmark/case.js smoke <id>    whether the case runs: SMOKE_IDS results in this thread and, for a generator
//                                        the check runs across threads, in a worker_thread (__test__/benchmark.test.js)
// Prints one JSON line. Every timed result is kept (the last RING ids' worth of them) and folded into a sink that is
// printed, so V8 cannot skip work whose result goes unused.

const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads')

// Each run leases worker ids in a directory and namespace of its own.
if (isMainThread && !process.env.SNOWID_LEASE_DIR) {
  const { tempLeaseDir, leaseEnv } = require('../scripts/lease-dir.js')
  Object.assign(process.env, leaseEnv(tempLeaseDir('snowid-bench-')))
}

const { cases, WIDE } = require('./cases.js')

const CHECK_IDS = 1_000_000
const SMOKE_IDS = 1_000
const THREAD_IDS = 250_000
const ROUND_IDS = { cap: 2_000_000, ref: 1_000_000, below: 5_000_000, bulk: 20_000_000, call: 1_000_000 }
// Constructors are timed over fewer calls: a million instances is the memory case's work.
const ROUND_CALLS = {
  'snowid new Snowflake()': 100_000,
  'snowid new Snowflake({ workerId: 1, lease: false })': 100_000,
  'snowid new Snowflake({ workerId: i % 32, lease: false })': 100_000,
  '@sapphire/snowflake new Snowflake(epoch)': 100_000,
}
const RING = 1024

/** A number from any result a case returns, for the sink. */
function fold(v) {
  if (typeof v === 'bigint') return Number(v & 0xffffn)
  if (typeof v === 'string') return v.length + v.charCodeAt(v.length - 1)
  if (v instanceof BigInt64Array || Array.isArray(v)) return fold(v[v.length - 1]) + v.length
  if (Buffer.isBuffer(v)) return v[7]
  if (v && typeof v === 'object') return fold(v.id ?? v.timestamp ?? 0) + Number(v.sequence ?? 1)
  return v === undefined ? 0 : 1
}

function keyOf(kind, v) {
  if (kind === 'bigint') return v
  if (kind === 'string') return BigInt(v)
  if (kind === 'buffer') return v.readBigUInt64BE(0)
  return v
}

function collect(c, n) {
  const next = c.make()
  const keys = []
  while (keys.length < n) {
    const out = next()
    if (c.batch) for (const v of out) keys.push(keyOf(c.kind, v))
    else keys.push(keyOf(c.kind, out))
  }
  keys.length = n
  return keys
}

function inThreads(c, n, threads) {
  return Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(__filename, { workerData: { id: c.id, n } })
          w.once('message', resolve)
          w.once('error', reject)
        }),
    ),
  )
}

async function check(c) {
  if (c.kind === 'none') return { duplicates: null, increasing: null, threadDuplicates: null }
  const keys = collect(c, CHECK_IDS)
  const duplicates = keys.length - new Set(keys).size
  let increasing = null
  if (c.kind !== 'opaque') {
    increasing = true
    for (let i = 1; i < keys.length; i++) {
      if (!(keys[i] > keys[i - 1])) {
        increasing = false
        break
      }
    }
  }
  if (c.threads === false) return { duplicates, increasing, threadDuplicates: null }
  const lists = await inThreads(c, THREAD_IDS, 2)
  const all = lists.flat()
  const threadDuplicates = all.length - new Set(all).size
  return { duplicates, increasing, threadDuplicates }
}

async function smoke(c) {
  const results = collect(c, SMOKE_IDS).length
  if (c.kind !== 'none' && c.threads !== false) await inThreads(c, SMOKE_IDS, 1)
  return { results }
}

function time(c) {
  const next = c.make()
  const perCall = c.batch ?? 1
  const calls = ROUND_CALLS[c.name] ?? Math.ceil(ROUND_IDS[c.regime] / perCall)
  // About RING ids' worth of results, so that every case keeps as many ids alive for the collector to move: a batch
  // case keeps fewer results (a power of two, at least one), a batch of 100 ids 16 of them.
  const size = 2 ** Math.ceil(Math.log2(Math.ceil(RING / perCall)))
  const ring = new Array(size).fill(undefined)
  // Warm up by count, not by time: a time-based warm-up of a borrowing generator would spend its whole lead.
  for (let i = 0; i < Math.ceil(calls / 10); i++) ring[i & (size - 1)] = next()
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) ring[i & (size - 1)] = next()
  const ns = Number(process.hrtime.bigint() - t0)
  const cpu = process.cpuUsage(cpu0)
  const cpuNs = (cpu.user + cpu.system) * 1000
  let sink = 0
  for (const v of ring) sink = (sink + fold(v)) | 0
  const ids = calls * perCall
  return { ids, ns, nsPerId: ns / ids, idsPerSec: ids / (ns / 1e9), cpuNsPerId: cpuNs / ids, sink }
}

// Below the cap (the wide layout), `threads` worker_threads on the process-wide default generator: each warms up,
// then all start together; the figure is all their ids over the time from the start to the last one's end.
async function scaling(threads, floor) {
  const n = 3_000_000
  wide()
  const go = new Int32Array(new SharedArrayBuffer(4))
  const ready = []
  const done = []
  for (let t = 0; t < threads; t++) {
    const w = new Worker(__filename, { workerData: { scaling: true, floor, n, go } })
    ready.push(new Promise(resolve => w.once('message', resolve)))
    done.push(
      new Promise((resolve, reject) => {
        w.once('error', reject)
        w.on('message', m => m.sink !== undefined && resolve(m))
      }),
    )
  }
  await Promise.all(ready)
  const t0 = process.hrtime.bigint()
  Atomics.store(go, 0, 1)
  Atomics.notify(go, 0)
  const results = await Promise.all(done)
  const ns = Number(process.hrtime.bigint() - t0)
  const ids = threads * n
  return { threads, floor, ids, ns, idsPerSec: ids / (ns / 1e9), sink: results.reduce((x, r) => x ^ r.sink, 0) }
}

function wide() {
  const s = require('..')
  // Before anything reads the configuration: config() leases a slot in the default layout's id space, which
  // configure() may then no longer leave.
  s.configure(WIDE)
  return s
}

// RSS after a million `new Snowflake()` kept by no one, made in one synchronous loop (nothing lets a finalizer run),
// of one configuration, or of `configurations` (worker ids 0 to configurations - 1, leases off).
function instances(configurations) {
  const { Snowflake } = require('..')
  const before = process.memoryUsage().rss
  let sink = 0
  if (configurations > 1) {
    // biome-ignore lint/correctness/noConstantCondition: consumes each instance, so that V8 cannot drop the work
    for (let i = 0; i < 1_000_000; i++) sink ^= new Snowflake({ workerId: i % configurations, lease: false }) ? 1 : 0
  } else {
    // biome-ignore lint/correctness/noConstantCondition: consumes each instance, so that V8 cannot drop the work
    for (let i = 0; i < 1_000_000; i++) sink ^= new Snowflake() ? 1 : 0
  }
  const rss = process.memoryUsage().rss
  return { configurations, before, rss, maxRss: process.resourceUsage().maxRSS * 1024, sink }
}

async function threadsAtCap() {
  // Both threads use the process-wide default generator (default layout): together they are capped at 4,096/ms.
  // Each warms up, then both start together: the time is steady state, without the threads' start-up.
  const n = 2_000_000
  const go = new Int32Array(new SharedArrayBuffer(4))
  const ready = []
  const done = []
  for (let t = 0; t < 2; t++) {
    const w = new Worker(__filename, { workerData: { threadsAtCap: true, n, go } })
    ready.push(new Promise(resolve => w.once('message', resolve)))
    done.push(
      new Promise((resolve, reject) => {
        w.once('error', reject)
        w.on('message', m => m instanceof BigInt64Array && resolve(m))
      }),
    )
  }
  await Promise.all(ready)
  const t0 = process.hrtime.bigint()
  Atomics.store(go, 0, 1)
  Atomics.notify(go, 0)
  const lists = await Promise.all(done)
  const ns = Number(process.hrtime.bigint() - t0)
  // Duplicates by sorting: a Set would hold only 2^24 ids.
  const all = new BigInt64Array(2 * n)
  all.set(lists[0], 0)
  all.set(lists[1], n)
  all.sort()
  let duplicates = 0
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) duplicates++
  return { ids: 2 * n, ns, nsPerId: ns / (2 * n), idsPerSec: (2 * n) / (ns / 1e9), duplicates }
}

if (!isMainThread) {
  if (workerData.scaling) {
    const nextId = workerData.floor ? require('./floor.js').floorAddon().floor : require('..').nextId
    let sink = 0
    for (let i = 0; i < 100_000; i++) sink ^= Number(nextId() & 1n)
    parentPort.postMessage({ ready: true })
    Atomics.wait(workerData.go, 0, 0)
    const ring = new Array(RING)
    for (let i = 0; i < workerData.n; i++) ring[i & (RING - 1)] = nextId()
    for (const v of ring) sink = (sink + fold(v)) | 0
    parentPort.postMessage({ sink })
  } else if (workerData.threadsAtCap) {
    const { nextId } = require('..')
    for (let i = 0; i < 10_000; i++) nextId()
    parentPort.postMessage({ ready: true })
    Atomics.wait(workerData.go, 0, 0)
    const ids = new BigInt64Array(workerData.n)
    for (let i = 0; i < ids.length; i++) ids[i] = nextId()
    parentPort.postMessage(ids, [ids.buffer])
  } else {
    const keys = collect(cases[workerData.id], workerData.n)
    parentPort.postMessage(keys)
  }
} else {
  const [mode, id] = process.argv.slice(2)
  const modes = {
    check: () => check(cases[Number(id)]),
    smoke: () => smoke(cases[Number(id)]),
    time: async () => time(cases[Number(id)]),
    threads: () => threadsAtCap(),
    scaling: () => scaling(Number(id), process.argv[4] === 'floor'),
    instances: async () => instances(Number(id ?? 1)),
  }
  const run = modes[mode]()
  run.then(r => process.stdout.write(JSON.stringify(r) + '\n'))
}
