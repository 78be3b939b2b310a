'use strict'

const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const ROOT = path.resolve(__dirname, '..')
const { tempLeaseDir, leaseNamespace, leaseEnv } = require('../scripts/lease-dir.js')

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

/**
 * The variables by which snowid knows an orchestrator where replicas are the norm (src/core/replicas.rs), and the one
 * that names a container. A test runs as one instance wherever its CI runs (a CI job in a Kubernetes pod has
 * KUBERNETES_SERVICE_HOST): they are left out of every child's environment, and out of this process's own, so that
 * no default generator is refused with ERR_SNOWID_IDENTITY_REQUIRED unless a test sets one.
 */
const PLATFORM_VARS = [
  'VERCEL',
  'NETLIFY',
  'SITE_ID',
  'SITE_NAME',
  'AWS_LAMBDA_FUNCTION_NAME',
  'ECS_CONTAINER_METADATA_URI_V4',
  'ECS_CONTAINER_METADATA_URI',
  'AWS_EXECUTION_ENV',
  'FUNCTION_TARGET',
  'K_SERVICE',
  'CLOUD_RUN_JOB',
  'GAE_SERVICE',
  'FUNCTIONS_WORKER_RUNTIME',
  'WEBSITE_INSTANCE_ID',
  'WEBSITE_SITE_NAME',
  'CONTAINER_APP_NAME',
  'CONTAINER_APP_JOB_NAME',
  'RENDER',
  'RAILWAY_REPLICA_ID',
  'RAILWAY_SERVICE_ID',
  'VCAP_APPLICATION',
  'CF_INSTANCE_GUID',
  'KUBERNETES_SERVICE_HOST',
  'NOMAD_ALLOC_ID',
  'DYNO',
  'FLY_ALLOC_ID',
  'FLY_APP_NAME',
  'container',
]
for (const key of PLATFORM_VARS) delete process.env[key]

/**
 * `stderr` without the one warning snowid gives in a plain container (/.dockerenv, /run/.containerenv) to a process
 * whose identity no one chose, `SNOWID_IDENTITY_UNCHOSEN`, and Node's hint after a first warning: a check that a
 * child wrote nothing else holds in and out of containers.
 */
const UNCHOSEN_WARNING =
  /^\(node:\d+\) \[SNOWID_IDENTITY_UNCHOSEN\] SnowidWarning: .*\n(\(Use `node --trace-warnings \.\.\.` to show where the warning was created\)\n)?/m
function withoutUnchosenWarning(stderr) {
  return stderr.replace(UNCHOSEN_WARNING, '')
}

/** A new, empty lease directory, removed when this process exits (once the marks of leases held in it pass). */
function freshLeaseDir() {
  return tempLeaseDir('snowid-test-')
}

/**
 * Gives this test process a lease directory and namespace of its own (SNOWID_LEASE_DIR, SNOWID_LEASE_NAMESPACE), so
 * its generators never meet another test's slots or the host's; returns the directory.
 */
function isolateLeases() {
  const dir = freshLeaseDir()
  Object.assign(process.env, leaseEnv(dir))
  return dir
}

/**
 * The test process's environment without any variable snowid reads, plus a lease directory of its own and the
 * namespace that goes with it (so tests never meet each other's leases, nor the host's), plus `extra`. A lease
 * directory given in `extra` comes with its own namespace unless `extra` names one (`SNOWID_LEASE_NAMESPACE:
 * undefined`: the host's slots), so processes a test points at one directory share their slots.
 */
function cleanEnv(extra = {}) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) {
    if (key.startsWith('SNOWID_') || key === 'datacenterId' || key === 'workerId' || PLATFORM_VARS.includes(key)) {
      delete env[key]
    }
  }
  // WASI has no host lease: there a child runs with leases off unless the test says otherwise.
  if (WASI) env.SNOWID_LEASE = 'off'
  const out =
    'SNOWID_LEASE_DIR' in extra ? { ...env, ...extra } : { ...env, SNOWID_LEASE_DIR: freshLeaseDir(), ...extra }
  if (!('SNOWID_LEASE_NAMESPACE' in extra) && out.SNOWID_LEASE_DIR !== undefined) {
    out.SNOWID_LEASE_NAMESPACE = leaseNamespace(out.SNOWID_LEASE_DIR)
  }
  // A variable given as undefined is left out (SNOWID_LEASE_DIR: undefined: the default lease directory).
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key]
  return out
}

/**
 * `[command, args]` that run `argv` with `/dev/shm` replaced by `dir` (a bind mount, in a mount namespace of its own),
 * as `user` when given: there the default lease directory, `/dev/shm/snowid` on Linux, is `dir`/snowid, as shared
 * as the host's. Needs root.
 */
function withShm(dir, argv, user) {
  // setpriv replaces itself with `argv` (runuser would stay its parent), so a signal reaches the process itself.
  const gid = user && Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout)
  const run = user ? ['setpriv', `--reuid=${user}`, `--regid=${gid}`, '--init-groups', '--', ...argv] : argv
  return [
    'unshare',
    ['--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$0" /dev/shm && exec "$@"', dir, ...run],
  ]
}

/**
 * Runs Node with `argv` in the package root, in a clean environment plus `extraEnv`, and waits for it; with `shm`,
 * in a `/dev/shm` of its own (see `withShm`).
 */
function spawnNode(argv, extraEnv = {}, { shm, input } = {}) {
  const env = cleanEnv(extraEnv)
  try {
    const [cmd, args] = shm ? withShm(shm, [process.execPath, ...argv]) : [process.execPath, argv]
    const result = spawnSync(cmd, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000, input })
    // A process that could not be started, or was stopped at the timeout, has no status: its stderr says why, so that
    // the tests' `assert.equal(r.status, 0, r.stderr)` does.
    const why = result.error ? `\n(spawnNode: ${result.error.message})` : ''
    return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: (result.stderr ?? '') + why }
  } finally {
    // The lease directory made for this one process goes with it; one the caller passed is the caller's.
    if (!('SNOWID_LEASE_DIR' in extraEnv)) fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true })
  }
}

/** Runs `code` in a new Node process with `require('snowid')` resolving to this package. */
function runNode(code, extraEnv = {}, args = [], opts = {}) {
  return spawnNode(['-e', code, ...args], extraEnv, opts)
}

/** Runs the CLI with `args`, and `input` (if given) on its stdin. */
function runCli(args, extraEnv = {}, { input } = {}) {
  return spawnNode([path.join(ROOT, 'bin', 'snowid.js'), ...args], extraEnv, { input })
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

/**
 * A new process's first id from the default generator under `env` (in a `/dev/shm` of its own with `shm`):
 * `{ id, ms, decoded, config, stats }` or `{ ms, error }`.
 */
function probeFirstId(env, opts = {}) {
  const r = runNode(PROBE, env, [], opts)
  assert.equal(r.signal, null, r.stderr)
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

/**
 * Does `change` (a delete, rename or replace of a lease file or directory that a live process holds) where the
 * platform allows it, and returns true. On Windows, which refuses it while the holder has the file or directory open
 * (the lease shares neither's deletion), asserts that it is refused, and returns false.
 */
function tamper(change) {
  if (process.platform !== 'win32') {
    change()
    return true
  }
  assert.throws(change, err => ['EBUSY', 'EPERM', 'EACCES'].includes(err.code), 'Windows refuses it to another process')
  return false
}

/** Asserts that `fn` throws an error of the class named `name`, with `code`, and a message matching `message`. */
function expectError(fn, { name, code, message }) {
  assert.throws(fn, err => {
    assert.equal(err.constructor.name, name, err.message)
    assert.equal(err.code, code)
    if (message) assert.match(err.message, message)
    return true
  })
}

/**
 * Starts `cmd` with `args` (spawn options `opts`; stdout and stderr piped) and collects what it writes: `{ child, out,
 * err, exited, lines() }`, where `out` and `err` grow as it writes, `exited` resolves to its exit code and `lines()`
 * are the non-empty lines of `out` so far.
 */
function spawnChild(cmd, args, opts = {}) {
  // stdin is a pipe that stopChild closes: how a fixture is asked to stop on Windows (fixtures/stop.js).
  const child = spawn(cmd, args, { ...opts, stdio: ['pipe', 'pipe', 'pipe'] })
  const run = {
    child,
    out: '',
    err: '',
    // 'close', not 'exit': its stdio read to the end, so that lines() has its last line.
    exited: new Promise(resolve => child.on('close', resolve)),
    lines: () => run.out.split('\n').filter(Boolean),
  }
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', d => (run.out += d))
  child.stderr.on('data', d => (run.err += d))
  return run
}

/**
 * Asks a fixture started by `spawnChild` to stop (fixtures/stop.js): SIGTERM, or on Windows, where SIGTERM ends a
 * process at once with no handler run, a line on its stdin and the end of it.
 */
function stopChild(run) {
  if (process.platform === 'win32') askToExit(run.child)
  else run.child.kill('SIGTERM')
}

/**
 * What a process started with `-e` runs to exit when its parent asks it to (askToExit): at a line on its stdin or at
 * the end of it, whichever comes first, as fixtures/stop.js stops.
 */
const EXIT_ON_STDIN = "process.stdin.on('data', () => process.exit(0)).on('end', () => process.exit(0)).resume()"

/** Asks `child`, started with a stdin pipe, to exit: a line on its stdin, then its end (EXIT_ON_STDIN, stop.js). */
function askToExit(child) {
  if (child.stdin.writable) child.stdin.end('stop\n')
}

/**
 * The first chunk `child` (spawned with its stdout piped) writes to stdout, as a string; rejects once its stdio has
 * closed without one, or after `ms` without one, so that a child that fails or hangs at start makes its test fail
 * instead of wait for good.
 */
function firstOutput(child, ms = 120_000) {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer)
      child.off('close', closed)
    }
    const closed = (code, signal) => {
      done()
      reject(new Error(`the child exited (${signal ?? code}) before writing to stdout`))
    }
    const timer = setTimeout(() => {
      child.stdout.off('data', first)
      done()
      reject(new Error(`the child (pid ${child.pid}) wrote nothing to stdout in ${ms} ms`))
    }, ms)
    const first = chunk => {
      done()
      resolve(String(chunk))
    }
    child.once('close', closed)
    child.stdout.once('data', first)
  })
}

/**
 * Stops a `spawnChild` run (stopChild) and waits for it to end; one still running after `ms` is killed outright
 * (SIGKILL; TerminateProcess on Windows), so that a test never waits for good on what it started. Resolves to
 * whether it ended when asked.
 */
async function endChild(run, ms = 60_000) {
  if (run.child.exitCode === null && run.child.signalCode === null) stopChild(run)
  let timer
  const late = new Promise(resolve => {
    timer = setTimeout(resolve, ms, 'late')
  })
  const asked = (await Promise.race([run.exited.then(() => 'ended'), late])) === 'ended'
  clearTimeout(timer)
  if (!asked) {
    run.child.kill('SIGKILL')
    await run.exited
  }
  return asked
}

/**
 * Stops a `spawnChild` run as endChild does, and fails (naming it `what`, with its last output and stderr) when it
 * did not end within 60 s of being asked; resolves to its exit code.
 */
async function endChildOrFail(run, what) {
  const asked = await endChild(run)
  assert.ok(asked, `the ${what} did not end within 60 s of being asked to stop: ${run.out.slice(-200)} ${run.err}`)
  return run.exited
}

/** Waits at most `ms` for the first line of a `spawnChild` run, `ready <json>`, and returns the JSON, parsed. */
async function readyLine(run, ms) {
  const end = Date.now() + ms
  while (run.lines().length < 1) {
    if (Date.now() > end) throw new Error(`no ready line in ${ms} ms: ${run.err}`)
    await sleep(10)
  }
  return JSON.parse(run.lines()[0].slice('ready '.length))
}

/**
 * A running fixtures/lease-writer.js (`cmd` with `args`, spawn options `opts`) that writes its ids to `file`:
 * `ready(ms)` waits for its ready line; `stop()` stops it (stopChild), asserts it exited 0 having written as many ids
 * as it says, removes `file` and returns its summary with its `ids`.
 */
function leaseWriter(cmd, args, opts, file) {
  const run = spawnChild(cmd, args, opts)
  return {
    ready: (ms = 60_000) => readyLine(run, ms),
    async stop() {
      const code = await endChildOrFail(run, 'writer')
      assert.equal(code, 0, `writer exited ${code}: ${run.err}`)
      const summary = JSON.parse(run.lines().pop())
      const ids = readIds(file)
      fs.rmSync(file)
      assert.equal(ids.length, summary.count)
      return { ...summary, ids }
    },
  }
}

/** The ids in `file`, written as a BigInt64Array. */
function readIds(file) {
  const bytes = fs.readFileSync(file)
  return new BigInt64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8)
}

/**
 * A layout for tests that run it both in this process and through the CLI: `options` as a Snowflake takes them, and
 * `env`, the same layout as the SNOWID_* variables (datacenterBits as SNOWID_DATACENTER_BITS, epoch as SNOWID_EPOCH).
 */
function layoutCase(name, options = {}) {
  const env = {}
  for (const [key, value] of Object.entries(options)) {
    env[`SNOWID_${key.replace(/[A-Z]/g, c => `_${c}`).toUpperCase()}`] = String(value)
  }
  return { name, env, options }
}

/**
 * Duplicates among all the ids of `lists` (BigInt64Arrays, or arrays of what BigInt takes), counted by sorting one
 * BigInt64Array of them all: `{ total, dups, repeated }`, `repeated` being the ids found more than once (one entry per
 * extra copy), in order.
 */
function countDuplicates(lists) {
  const all = new BigInt64Array(lists.reduce((n, l) => n + l.length, 0))
  let at = 0
  for (const l of lists) {
    all.set(l instanceof BigInt64Array ? l : BigInt64Array.from(l, BigInt), at)
    at += l.length
  }
  all.sort()
  const repeated = []
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) repeated.push(all[i])
  return { total: all.length, dups: repeated.length, repeated }
}

// --- the lease file format (docs/one-host.md, "The lease file"), written here independently of the Rust code ---

/** The size of one lease record: a line padded with spaces. */
const RECORD_SIZE = 1024

/** The FNV-1a 64-bit hash of `text` (latin1), in 16 hex digits: a lease record's `sum`. */
function fnv1a(text) {
  let h = 0xcbf29ce484222325n
  for (const b of Buffer.from(text, 'latin1')) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 0x100000001b3n)
  return h.toString(16).padStart(16, '0')
}

/**
 * A lease record: version 2 as snowid writes it (with `since`, `host` and `command`), or version 1 (`version: 1`, as
 * earlier versions wrote it), with `marks` as [clockBack, Unix ms] pairs.
 */
function encodeRecord({ version = 2, seq = 1, pid = 1, marks, since = 0, host = '', command = '' }) {
  const pairs = marks.map(([c, m]) => `${c}:${m}`).join(',')
  // A byte outside printable ASCII, and %, as %XX; in the host name a space too.
  const escaped = (text, space) =>
    [...Buffer.from(text, 'utf8')]
      .map(b =>
        (b > 0x20 && b < 0x7f && b !== 0x25) || (space && b === 0x20)
          ? String.fromCharCode(b)
          : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
      )
      .join('')
  const body =
    version === 1
      ? `snowid-lease v1 seq=${seq} pid=${pid} marks=${pairs}`
      : `snowid-lease v2 seq=${seq} pid=${pid} since=${since} marks=${pairs} host=${escaped(host, false)} cmd=${escaped(command, true)}`
  const line = `${body} sum=${fnv1a(body)}`
  return Buffer.from(line.padEnd(RECORD_SIZE - 1, ' ') + '\n', 'latin1')
}

/**
 * The host name a host-lease record carries: the host's name on Unix (as os.hostname() gives it), the computer's name
 * (COMPUTERNAME, which Windows upper-cases) on Windows.
 */
function leaseHostName() {
  return process.platform === 'win32' && process.env.COMPUTERNAME
    ? process.env.COMPUTERNAME
    : require('node:os').hostname()
}

/** A process that holds worker id `workerId` in lease directory `dir` until asked to exit (by `t.after`). */
async function holdWorker(t, dir, workerId) {
  const child = spawn(process.execPath, ['-e', `require('.').nextId(); console.log('ready'); ${EXIT_ON_STDIN}`], {
    cwd: ROOT,
    env: cleanEnv({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: String(workerId) }),
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise(resolve => child.once('exit', resolve))
      askToExit(child)
      await exited
    }
  })
  const ready = await firstOutput(child)
  if (ready.trim() !== 'ready') throw new Error(`the holder of worker id ${workerId} printed ${JSON.stringify(ready)}`)
}

module.exports = {
  leaseHostName,
  ROOT,
  RECORD_SIZE,
  fnv1a,
  encodeRecord,
  WASI,
  PLATFORM_VARS,
  wasiSkip,
  wasiTodo,
  cleanEnv,
  freshLeaseDir,
  spawnNode,
  isolateLeases,
  leaseNamespace,
  withShm,
  runNode,
  runCli,
  probeFirstId,
  tamper,
  expectError,
  withoutUnchosenWarning,
  spawnChild,
  stopChild,
  endChild,
  endChildOrFail,
  askToExit,
  EXIT_ON_STDIN,
  firstOutput,
  holdWorker,
  readyLine,
  leaseWriter,
  readIds,
  countDuplicates,
  layoutCase,
}
