'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')

// This process's leases go to a directory of its own; the default generator reads it on first use.
const { countDuplicates, isolateLeases } = require('./helpers.js')

isolateLeases()

// Each worker_thread instantiates the WASI build's wasm module afresh: threads do not share the generator there.
const SHARED = require('./helpers.js').wasiSkip(
  "each worker_thread instantiates the wasm module afresh, so threads cannot share the process's generator (a second thread with its worker id gets ERR_SNOWID_WORKER_ID_IN_USE, tested in wasi.test.js)",
)

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
    Array.from(
      { length: threads },
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(WORKER, { eval: true, workerData: { root: ROOT, n, useString } })
          w.once('message', resolve)
          w.once('error', reject)
        }),
    ),
  )
}

test('4 worker_threads x 250k ids share the process generator with 0 duplicates', SHARED, async () => {
  const snowid = require('..')
  const results = await runThreads(4, 250_000)
  for (const ids of results) {
    assert.equal(ids.length, 250_000)
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'increasing within a thread')
  }
  const { dups, total } = countDuplicates(results)
  assert.deepEqual([dups, total], [0, 1_000_000], `${dups} duplicates in ${total} ids`)
  // Threads share their process's lease: one worker id for all of them.
  const workerIds = new Set(results.map(ids => snowid.decode(ids[0]).workerId))
  assert.deepEqual([...workerIds], [snowid.config().workerId])
  // The main thread draws from the same state as the threads did.
  const mine = snowid.nextId()
  for (const ids of results) assert.ok(mine > ids[ids.length - 1])
})

test('threads mixing nextIdString and nextId never collide', SHARED, async () => {
  const [a, b] = await Promise.all([runThreads(1, 100_000, true), runThreads(1, 100_000, false)])
  const { dups, total } = countDuplicates([a[0], b[0]])
  assert.deepEqual([dups, total], [0, 200_000], `${dups} duplicates in ${total} ids`)
})

// Threads sharing a Snowflake identity whose 18-bit sequence leaves sequence values to spare, so they take ids of
// one ms together from the shared state (src/core/generator/shared.rs, \`Shared\`). Each thread mixes single ids,
// strings and batches.
const WIDE = `
const { parentPort, workerData } = require('node:worker_threads')
const { Snowflake } = require(workerData.root)
const gen = new Snowflake(workerData.options)
const ids = new BigInt64Array(workerData.n)
let i = 0
while (i < ids.length) {
  if (i % 97 === 96 && i + 3 <= ids.length) {
    ids.set(gen.nextIds(3), i)
    i += 3
  } else {
    ids[i++] = i % 5 === 0 ? BigInt(gen.nextIdString()) : gen.nextId()
  }
}
parentPort.postMessage(ids, [ids.buffer])
`

test(
  'threads sharing an identity with sequence values to spare: each thread increasing, 0 duplicates, and later ids later',
  SHARED,
  async () => {
    const { Snowflake } = require('..')
    const options = { workerId: 5, lease: false, datacenterBits: 0, workerBits: 3, clockBackBits: 1, sequenceBits: 18 }
    const n = 500_000
    const results = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise((resolve, reject) => {
            const w = new Worker(WIDE, { eval: true, workerData: { root: ROOT, n, options } })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
    )
    const all = new BigInt64Array(4 * n)
    results.forEach((ids, k) => {
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `thread ${k}: ${ids[i]} after ${ids[i - 1]}`)
      all.set(ids, k * n)
    })
    all.sort()
    let duplicates = 0
    for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) duplicates++
    assert.equal(duplicates, 0)
    // Every thread has returned: an id asked for now is past all of theirs.
    const mine = new Snowflake(options).nextId()
    assert.ok(mine > all[all.length - 1], `${mine} is not past ${all[all.length - 1]}`)
  },
)

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

test(
  'threads making small batches and decoding at once each use their own scratch: every field right, 0 duplicates',
  SHARED,
  async () => {
    const results = await Promise.all(
      Array.from(
        { length: 3 },
        () =>
          new Promise((resolve, reject) => {
            const w = new Worker(BATCHES, { eval: true, workerData: { root: ROOT, n: 50_000 } })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
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
    assert.equal(duplicates, 0)
  },
)
