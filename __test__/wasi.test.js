'use strict'

// The WASI build (the snowid-wasm32-wasi package in npm/wasm32-wasi/), loaded by the loader's fallback or forced in
// a child process. Its .wasm is made by `npm run build:wasm`, which npm test does not run: without it these tests
// skip, naming that command. .ci/run runs this file after it builds the wasm (and npm run test:lines and test:wasi
// run it too).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { ROOT, runNode } = require('./helpers.js')

const WASM = path.join(ROOT, 'npm', 'wasm32-wasi', 'snowid.wasm32-wasi.wasm')
const BUILT = fs.existsSync(WASM)
const NEEDS_WASM = { skip: !BUILT && `${path.relative(ROOT, WASM)} is not built: run \`npm run build:wasm\` first` }
if (!BUILT) process.stderr.write(`\n*** SKIPPED: the WASI build's tests: ${NEEDS_WASM.skip} ***\n\n`)

// The generated loader tries NAPI_RS_NATIVE_LIBRARY_PATH alone when it is set; a path with no file fails the native
// load as an unsupported platform would.
const NO_NATIVE = { NAPI_RS_NATIVE_LIBRARY_PATH: '/nonexistent/snowid.node' }

test(
  'no native binary: the loader falls back to the snowid-wasm32-wasi package, which makes ids with an explicit worker id',
  NEEDS_WASM,
  () => {
    const r = runNode(
      `const s = require('.'); const id = s.nextId(); console.log(JSON.stringify({ target: require('./binding.js').__napiBindingTarget, workerId: s.decode(id).workerId, next: s.nextId() > id }))`,
      { ...NO_NATIVE, SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '9' },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { target: 'wasm32-wasi', workerId: 9, next: true })
  },
)

test('on WASI the host lease is unsupported: a coded error says what to configure', NEEDS_WASM, () => {
  const r = runNode(
    `try { require('.').nextId(); console.log('made') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`,
    {
      NAPI_RS_FORCE_WASI: 'error',
      SNOWID_LEASE: undefined,
    },
  )
  assert.equal(r.status, 0, r.stderr)
  const e = JSON.parse(r.stdout)
  assert.equal(e.code, 'ERR_SNOWID_LEASE_UNSUPPORTED')
  assert.match(e.message, /expected a platform with flock, found WASI/)
  for (const what of [
    'SNOWID_LEASE=off',
    'SNOWID_WORKER_ID',
    'SNOWID_WORKER_ID_FROM=statefulset',
    'snowid/redis',
    'snowid/postgres',
  ]) {
    assert.ok(e.message.includes(what), what)
  }
  assert.ok(e.message.length <= 400, e.message)
})

// The WASI build, forced in a child process (whichever build this suite runs on): each worker_thread has a wasm
// instance and generators of its own there, so threads claim the identities they make ids with, and a second thread
// with one gets a coded error instead of the first thread's ids.
const WASI_THREADS = `
const { Worker } = require('node:worker_threads')
const [loadFirst, mode, envs] = JSON.parse(process.argv[1])
if (loadFirst) require('.')
const code = \`
const { parentPort, workerData } = require('node:worker_threads')
try {
  const snowid = require(workerData.root)
  const make = workerData.mode === 'snowflake' ? new snowid.Snowflake({ workerId: 5 }).nextId : snowid.nextId
  const ids = []
  for (let i = 0; i < 20000; i++) ids.push(String(make()))
  parentPort.postMessage({ ids })
} catch (e) {
  parentPort.postMessage({ code: e.code, message: e.message })
}\`
// Each thread's count of ids and the worker ids in them, or its error; and how many of all the ids are distinct.
const results = []
const all = new Set()
let total = 0
let started = 0
function next() {
  if (started === envs.length) return console.log(JSON.stringify({ threads: results, total, distinct: all.size }))
  const env = envs[started] === null ? process.env : { ...process.env, SNOWID_WORKER_ID: envs[started] }
  started++
  const w = new Worker(code, { eval: true, env, workerData: { root: process.cwd(), mode } })
  w.once('message', (r) => {
    if (r.ids) {
      for (const id of r.ids) all.add(id)
      total += r.ids.length
      const { decode } = require('.')
      results.push({ count: r.ids.length, workerIds: [...new Set(r.ids.map((id) => decode(id).workerId))] })
    } else results.push(r)
    w.terminate().then(next)
  })
  w.once('error', (e) => { results.push({ error: String(e) }); next() })
}
next()
`

function wasiThreads(loadFirst, mode, envs) {
  const r = runNode(
    WASI_THREADS,
    {
      NAPI_RS_FORCE_WASI: 'error',
      SNOWID_LEASE: 'off',
      SNOWID_WORKER_ID: '3',
      NODE_OPTIONS: '--disable-warning=ExperimentalWarning',
    },
    [JSON.stringify([loadFirst, mode, envs])],
  )
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

test(
  'WASI: a second worker_thread with the first one’s worker id gets ERR_SNOWID_WORKER_ID_IN_USE, not its ids',
  NEEDS_WASM,
  () => {
    for (const mode of ['default', 'snowflake']) {
      const { threads, total, distinct } = wasiThreads(true, mode, [null, null])
      const [first, second] = threads
      const workerId = mode === 'default' ? 3 : 5
      assert.deepEqual(first, { count: 20000, workerIds: [workerId] })
      assert.equal(distinct, total)
      assert.equal(second.count, undefined, 'the second thread made ids')
      assert.equal(second.code, 'ERR_SNOWID_WORKER_ID_IN_USE', second.message)
      assert.match(
        second.message,
        new RegExp(
          `^workerId ${workerId} \\(datacenterId 0\\) in worker_thread \\d+: expected one no other thread makes ids with, found it in use by worker_thread \\d+\\. `,
        ),
      )
      assert.match(second.message, /SNOWID_WORKER_ID/)
      assert.ok(second.message.length <= 400, second.message)
    }
  },
)

test('WASI: worker_threads with worker ids of their own make ids side by side, with 0 duplicates', NEEDS_WASM, () => {
  const { threads, total, distinct } = wasiThreads(true, 'default', ['1', '2', '4'])
  assert.deepEqual(threads, [
    { count: 20000, workerIds: [1] },
    { count: 20000, workerIds: [2] },
    { count: 20000, workerIds: [4] },
  ])
  assert.equal(total, 60000)
  assert.equal(distinct, 60000)
})

test(
  'WASI: a worker_thread started before the main thread loaded snowid gets ERR_SNOWID_WASI_THREAD',
  NEEDS_WASM,
  () => {
    const [r] = wasiThreads(false, 'default', [null]).threads
    assert.equal(r.count, undefined, 'the thread made ids')
    assert.equal(r.code, 'ERR_SNOWID_WASI_THREAD', r.message)
    assert.match(
      r.message,
      /^ids in worker_thread \d+: expected snowid loaded by the main thread before this thread started/,
    )
    assert.match(r.message, /require\('snowid'\) in the main thread first/)
    assert.ok(r.message.length <= 400, r.message)
  },
)
