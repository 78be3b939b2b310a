'use strict'

const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')

/** The suite runs on the WASI build (npm run test:wasi sets NAPI_RS_FORCE_WASI=error): no native binary loads. */
const WASI = process.env.NAPI_RS_FORCE_WASI === 'error'

/** Test options that skip a test on the WASI build, naming what WASI cannot do. */
function wasiSkip(reason) {
  return { skip: WASI ? `WASI: ${reason}` : false }
}

/** Test options that run a test on the WASI build as a todo: a known difference there, named, that fails no run. */
function wasiTodo(reason) {
  return { todo: WASI ? `WASI: ${reason}` : false }
}

// Lease directories made for this process, removed when it exits, so a test run leaves the OS temp dir as it was.
// A lease this process still holds keeps its marks where newcomers look while they reach past the clock: removed
// sooner, its directory would be made again by the holder's repair thread in the moments before the process ends.
// So each directory goes once its latest mark has passed (and the repair thread has looked once more).
const made = []
process.on('exit', () => {
  const until = Math.max(0, ...made.map(latestMark))
  const wait = Math.min(until - Date.now() + 3 * REPAIR_EVERY_MS, MAX_EXIT_WAIT_MS)
  if (wait > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait)
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

/** How often a holder's repair thread looks at its leases (src/core/lease.rs, REPAIR_EVERY_MS). */
const REPAIR_EVERY_MS = 10
/** The longest an exiting test process waits for its marks to pass: longer leads are the tests' own to wait out. */
const MAX_EXIT_WAIT_MS = 6_000

/** The latest Unix ms any lease file in `dir` reserves (0 for none), from the marks of both records. */
function latestMark(dir) {
  let latest = 0
  let names = []
  try {
    names = fs.readdirSync(dir)
  } catch {
    return 0
  }
  for (const name of names) {
    let text = ''
    try {
      text = fs.readFileSync(path.join(dir, name), 'latin1')
    } catch {
      continue
    }
    for (const [, marks] of text.matchAll(/ marks=([\d:,]*)/g)) {
      for (const [, ms] of marks.matchAll(/\d+:(\d+)/g)) latest = Math.max(latest, Number(ms))
    }
  }
  return latest
}

/** A new, empty lease directory, removed when this process exits. */
function freshLeaseDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-test-'))
  made.push(dir)
  return dir
}

/**
 * The test process's environment without any variable snowid reads, plus a lease directory of its own (so tests
 * never meet each other's leases), plus `extra`.
 */
function cleanEnv(extra = {}) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) {
    if (key.startsWith('SNOWID_') || key === 'datacenterId' || key === 'workerId' || key === 'NODE_APP_INSTANCE') {
      delete env[key]
    }
  }
  // WASI has no host lease: there a child runs with leases off unless the test says otherwise.
  if (WASI) env.SNOWID_LEASE = 'off'
  const out = 'SNOWID_LEASE_DIR' in extra ? { ...env, ...extra } : { ...env, SNOWID_LEASE_DIR: freshLeaseDir(), ...extra }
  // A variable given as undefined is left out (SNOWID_LEASE_DIR: undefined: the default lease directory).
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key]
  return out
}

/** Runs Node with `argv` in the package root, in a clean environment plus `extraEnv`, and waits for it. */
function spawnNode(argv, extraEnv = {}) {
  const env = cleanEnv(extraEnv)
  try {
    const result = spawnSync(process.execPath, argv, { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 })
    return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr }
  } finally {
    // The lease directory made for this one process goes with it; one the caller passed is the caller's.
    if (!('SNOWID_LEASE_DIR' in extraEnv)) fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true })
  }
}

/** Runs `code` in a new Node process with `require('snowid')` resolving to this package. */
function runNode(code, extraEnv = {}, args = []) {
  return spawnNode(['-e', code, ...args], extraEnv)
}

/** Runs the CLI with `args`. */
function runCli(args, extraEnv = {}) {
  return spawnNode([path.join(ROOT, 'bin', 'snowid.js'), ...args], extraEnv)
}

// Takes the default generator's first id and prints it with its fields, the config, the stats and how long the call
// took, or the error that replaced it, as JSON.
const PROBE = `
const snowid = require('.')
const t0 = process.hrtime.bigint()
try {
  const id = snowid.nextId()
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  console.log(JSON.stringify({ id: id.toString(), ms, decoded: snowid.decode(id), config: snowid.config(), stats: snowid.stats() }))
} catch (e) {
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  console.log(JSON.stringify({ ms, error: { name: e.constructor.name, code: e.code, message: e.message } }))
}
`

/** A new process's first id from the default generator under `env`: `{ id, ms, decoded, config, stats }` or `{ ms, error }`. */
function probeFirstId(env) {
  const r = runNode(PROBE, env)
  assert.equal(r.signal, null, r.stderr)
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

/** Asserts that `fn` throws an error of the class named `name`, with `code`, and a message matching `message`. */
function expectError(fn, { name, code, message }) {
  assert.throws(fn, (err) => {
    assert.equal(err.constructor.name, name, err.message)
    assert.equal(err.code, code)
    if (message) assert.match(err.message, message)
    return true
  })
}

module.exports = { ROOT, WASI, wasiSkip, wasiTodo, cleanEnv, freshLeaseDir, runNode, runCli, probeFirstId, expectError }
