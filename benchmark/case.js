'use strict'

// Runs one benchmark case in this process (so V8's feedback from one case cannot distort another).
//   node benchmark/case.js check <id>    correctness: duplicates in 1M ids, increasing, duplicates across 2 threads
//   node benchmark/case.js time <id>     one timed round after a warm-up
//   node benchmark/case.js threads       snowid nextId() in 2 worker_threads at the cap, timed together
// Prints one JSON line.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads')

// Each run leases worker ids in a directory of its own.
if (isMainThread && !process.env.SNOWID_LEASE_DIR) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-bench-'))
  process.env.SNOWID_LEASE_DIR = dir
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
}

const { cases } = require('./cases.js')

const CHECK_IDS = 1_000_000
const THREAD_IDS = 250_000
const ROUND_IDS = { cap: 2_000_000, ref: 1_000_000, below: 5_000_000, bulk: 20_000_000 }

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
    Array.from({ length: threads }, () => new Promise((resolve, reject) => {
      const w = new Worker(__filename, { workerData: { id: c.id, n } })
      w.once('message', resolve)
      w.once('error', reject)
    })),
  )
}

async function check(c) {
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
  const lists = await inThreads(c, THREAD_IDS, 2)
  const all = lists.flat()
  const threadDuplicates = all.length - new Set(all).size
  return { duplicates, increasing, threadDuplicates }
}

function time(c) {
  const next = c.make()
  const perCall = c.batch ?? 1
  const calls = Math.ceil(ROUND_IDS[c.regime] / perCall)
  let sink = 0
  // Warm up by count, not by time: a time-based warm-up of a borrowing generator would spend its whole lead.
  for (let i = 0; i < Math.ceil(calls / 10); i++) sink ^= typeof next() === 'bigint' ? 1 : 0
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) sink ^= typeof next() === 'bigint' ? 1 : 0
  const ns = Number(process.hrtime.bigint() - t0)
  const ids = calls * perCall
  return { ids, ns, nsPerId: ns / ids, idsPerSec: ids / (ns / 1e9), sink }
}

async function threadsAtCap() {
  // Both threads use the process-wide default generator (default layout): together they are capped at 4,096/ms.
  const n = 2_000_000
  const t0 = process.hrtime.bigint()
  const lists = await Promise.all(
    [0, 1].map(() => new Promise((resolve, reject) => {
      const w = new Worker(__filename, { workerData: { threadsAtCap: true, n } })
      w.once('message', resolve)
      w.once('error', reject)
    })),
  )
  const ns = Number(process.hrtime.bigint() - t0)
  const all = new Set()
  for (const ids of lists) for (const id of ids) all.add(id)
  return { ids: 2 * n, ns, nsPerId: ns / (2 * n), idsPerSec: (2 * n) / (ns / 1e9), duplicates: 2 * n - all.size }
}

if (!isMainThread) {
  if (workerData.threadsAtCap) {
    const { nextId } = require('..')
    for (let i = 0; i < 10_000; i++) nextId()
    const ids = new BigInt64Array(workerData.n)
    for (let i = 0; i < ids.length; i++) ids[i] = nextId()
    parentPort.postMessage(ids, [ids.buffer])
  } else {
    const keys = collect(cases[workerData.id], workerData.n)
    parentPort.postMessage(keys)
  }
} else {
  const [mode, id] = process.argv.slice(2)
  const run = mode === 'check' ? check(cases[Number(id)]) : mode === 'time' ? Promise.resolve(time(cases[Number(id)])) : threadsAtCap()
  run.then((r) => process.stdout.write(JSON.stringify(r) + '\n'))
}
