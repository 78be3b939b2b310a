'use strict'

// The smoke check of a native binary, run by scripts/test-linux.js (on each Node, and under qemu) and by the release
// workflow on each platform's runner: the package's own entry loads the binary that NAPI_RS_NATIVE_LIBRARY_PATH
// names (else the one the loader finds), makes and reads ids, and prints one JSON line.

const assert = require('node:assert/strict')
const { Worker } = require('node:worker_threads')
const path = require('node:path')

const snowid = require(path.join(__dirname, '..'))

const ids = snowid.nextIds(10000)
for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'ids increase')
const id = snowid.nextId()
const fields = snowid.decode(id)
assert.equal(fields.id, String(id))
assert.ok(Math.abs(fields.timestamp - Date.now()) < 60_000, 'the timestamp is now')
assert.equal(snowid.parse(snowid.encode(id, 'base62'), 'base62'), id)
const own = new snowid.Snowflake({ lease: false, workerId: 7 })
assert.equal(own.decode(own.nextId()).workerId, 7)
const discord = new snowid.SnowflakeLayout({
  epoch: 1420070400000,
  datacenterBits: 5,
  workerBits: 5,
  clockBackBits: 0,
  sequenceBits: 12,
})
assert.equal(new Date(discord.timestampOf(175928847299117063n)).toISOString(), '2016-04-30T11:18:25.796Z')

const worker = new Worker(
  `const s = require(${JSON.stringify(path.join(__dirname, '..'))}); require('node:worker_threads').parentPort.postMessage(String(s.nextId()))`,
  { eval: true },
)
worker.once('message', fromThread => {
  assert.ok(BigInt(fromThread) > id, 'a worker_thread shares the generator')
  // Linux's C library the process runs on: the report names glibc's version, and nothing on musl.
  const libc =
    process.platform !== 'linux' ? null : process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl'
  // Which build loaded: 'native', or 'wasm32-wasi' when the loader fell back to the WASI package.
  const binding = require(path.join(__dirname, '..', 'binding.js')).__napiBindingTarget
  console.log(JSON.stringify({ arch: process.arch, libc, binding, node: process.version, ok: true }))
})
worker.once('error', e => {
  console.error(e)
  process.exitCode = 1
})
