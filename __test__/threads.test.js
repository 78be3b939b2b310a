'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')

// This process's leases go to a directory of its own; the default generator reads it on first use.
process.env.SNOWID_LEASE_DIR = require('./helpers.js').freshLeaseDir()

// Each worker_thread instantiates the WASI build's wasm module afresh: threads do not share the generator there.
const SHARED = require('./helpers.js').wasiSkip("each worker_thread instantiates the wasm module afresh, so threads do not share the process's generator")

const ROOT = path.resolve(__dirname, '..')

// Each thread fills a shared-nothing BigInt64Array from the process-wide default generator and sends it back.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const snowid = require(workerData.root)
const ids = new BigInt64Array(workerData.n)
for (let i = 0; i < ids.length; i++) ids[i] = workerData.useString ? BigInt(snowid.nextIdString()) : snowid.nextId()
parentPort.postMessage(ids, [ids.buffer])
`

function runThreads(threads, n, useString = false) {
  return Promise.all(
    Array.from({ length: threads }, () => new Promise((resolve, reject) => {
      const w = new Worker(WORKER, { eval: true, workerData: { root: ROOT, n, useString } })
      w.once('message', resolve)
      w.once('error', reject)
    })),
  )
}

test('4 worker_threads x 250k ids share the process generator with 0 duplicates', SHARED, async () => {
  const snowid = require('..')
  const results = await runThreads(4, 250_000)
  const all = new Set()
  for (const ids of results) {
    assert.equal(ids.length, 250_000)
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'increasing within a thread')
    for (const id of ids) all.add(id)
  }
  assert.equal(all.size, 1_000_000, `duplicates: ${1_000_000 - all.size}`)
  // Threads share their process's lease: one worker id for all of them.
  const workerIds = new Set(results.map((ids) => snowid.decode(ids[0]).workerId))
  assert.deepEqual([...workerIds], [snowid.config().workerId])
  // The main thread draws from the same state as the threads did.
  const mine = snowid.nextId()
  assert.ok(!all.has(mine))
  for (const ids of results) assert.ok(mine > ids[ids.length - 1])
})

test('threads mixing nextIdString and nextId never collide', SHARED, async () => {
  const [a, b] = await Promise.all([runThreads(1, 100_000, true), runThreads(1, 100_000, false)])
  const all = new Set([...a[0], ...b[0]])
  assert.equal(all.size, 200_000)
})

// Each thread makes small batches (written to its module's scratch and copied out) and decodes each batch's last id
// (whose fields come back through the same scratch), checking every field against the id's own bits.
const BATCHES = `
const { parentPort, workerData } = require('node:worker_threads')
const snowid = require(workerData.root)
const ids = new BigInt64Array(workerData.n * 3)
for (let i = 0; i < workerData.n; i++) {
  const batch = snowid.nextIds(3)
  const d = snowid.decode(batch[2])
  const id = batch[2]
  if (d.id !== String(id) || d.sequence !== Number(id & 4095n) || d.workerId !== Number((id >> 14n) & 31n)) {
    throw new Error('decode of ' + id + ' gave ' + JSON.stringify(d))
  }
  ids.set(batch, i * 3)
}
parentPort.postMessage(ids, [ids.buffer])
`

test('threads making small batches and decoding at once each use their own scratch: every field right, 0 duplicates', async () => {
  const results = await Promise.all(
    Array.from({ length: 3 }, () => new Promise((resolve, reject) => {
      const w = new Worker(BATCHES, { eval: true, workerData: { root: ROOT, n: 50_000 } })
      w.once('message', resolve)
      w.once('error', reject)
    })),
  )
  const all = new BigInt64Array(results.reduce((n, r) => n + r.length, 0))
  let at = 0
  for (const ids of results) {
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'increasing within a thread')
    all.set(ids, at)
    at += ids.length
  }
  all.sort()
  let duplicates = 0
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) duplicates++
  // On the WASI build each thread has its own generator, so only a thread's own ids are checked there.
  if (!require('./helpers.js').WASI) assert.equal(duplicates, 0)
})
