'use strict'

// Replicas that cannot see each other, made without Docker: each one a process in its own network and mount
// namespaces (`unshare --net --mount --fork`) with tmpfs on /tmp, /var/tmp, /run and /dev/shm, as a container has.
// With KUBERNETES_SERVICE_HOST set and no identity chosen, every replica refuses its first id; with a SNOWID_WORKER_ID
// each, or a SNOWID_DATACENTER_ID each (the worker id from the replica's own lease), they issue ids at full speed,
// written to files and counted by sorting, with no duplicate.
//
// Needs root and util-linux's unshare: without them it skips loudly, and fails when CI is set. Slow (several
// processes at full speed for seconds), so not in npm test's glob.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')

const { ROOT, cleanEnv, countDuplicates, readIds } = require('../helpers.js')

const REPLICAS = 4
const RUN_MS = 1500
// The directories a container has of its own, and so each replica here.
const PRIVATE_DIRS = ['/tmp', '/var/tmp', '/run', '/dev/shm']

function missing() {
  if (process.platform !== 'linux') return 'namespaces are Linux only'
  if (process.getuid() !== 0) return 'unshare --net --mount needs root'
  if (spawnSync('unshare', ['--version']).status !== 0) return 'unshare (util-linux) is not installed'
  if (spawnSync('unshare', ['--net', '--mount', '--fork', 'true']).status !== 0)
    return 'unshare --net --mount fails here'
  return null
}

const why = missing()
if (why && process.env.CI) {
  test('replicas can be made with unshare (required when CI is set)', () => {
    throw new Error(why)
  })
} else if (why) {
  process.stderr.write(`\n*** SKIPPED: ${why}: the replica tests cannot run ***\n\n`)
}

// The package, as a replica reaches it: a checkout under one of the private directories is bound to /mnt first.
const HIDDEN = PRIVATE_DIRS.some(d => ROOT === d || ROOT.startsWith(d + '/'))
const PACKAGE = HIDDEN ? '/mnt' : ROOT

// One replica: its first id, or the error that refused it, on stdout; then, for RUN_MS, ids at full speed, written
// to fd 3 (a file its parent opened) as 64-bit integers.
const REPLICA = `
const fs = require('node:fs')
const s = require(process.argv[1])
let first
try {
  first = s.nextId()
} catch (e) {
  console.log(JSON.stringify({ code: e.code, message: e.message }))
  process.exit(0)
}
const chunks = [BigInt64Array.of(first)]
const end = Date.now() + Number(process.argv[2])
while (Date.now() < end) chunks.push(s.nextIds(4096))
const ids = new BigInt64Array(chunks.reduce((n, c) => n + c.length, 0))
let at = 0
for (const c of chunks) {
  ids.set(c, at)
  at += c.length
}
const bytes = Buffer.from(ids.buffer)
for (let off = 0; off < bytes.length; ) off += fs.writeSync(3, bytes, off)
const c = s.config()
console.log(JSON.stringify({ ids: ids.length, datacenterId: c.datacenterId, workerId: c.workerId, sources: c.sources }))
`

// Mounts the private directories, then runs the replica's command (the arguments after $1); $1 is the package root
// to bind, when it would be hidden.
const SHELL = `set -e
if [ -n "$1" ]; then mount --bind "$1" /mnt; fi
shift
for d in ${PRIVATE_DIRS.join(' ')}; do if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi; done
exec "$@"`

/** Runs REPLICAS replicas at once, the i-th with `envOf(i)`; resolves to each one's report and ids. */
function replicas(dir, envOf) {
  return run(dir, REPLICAS, envOf, [process.execPath, '-e', REPLICA, PACKAGE, String(RUN_MS)])
}

/**
 * Runs `count` replicas at once, each `argv` (which writes its ids to fd 3 and its report as JSON on stdout), the
 * i-th with `envOf(i)`; resolves to each one's report and ids.
 */
async function run(dir, count, envOf, argv) {
  const runs = []
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `ids-${i}`)
    const fd = fs.openSync(file, 'w')
    // The default lease directory: each replica's own, as in a container.
    const env = cleanEnv({ SNOWID_LEASE_DIR: undefined, ...envOf(i) })
    const child = spawn(
      'unshare',
      ['--net', '--mount', '--fork', '--kill-child', 'sh', '-c', SHELL, 'replica', HIDDEN ? ROOT : '', ...argv],
      { env, stdio: ['ignore', 'pipe', 'pipe', fd] },
    )
    fs.closeSync(fd)
    let out = ''
    let err = ''
    child.stdout.on('data', d => (out += d))
    child.stderr.on('data', d => (err += d))
    runs.push(
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
        child.on('error', reject)
        child.on('close', (code, signal) => {
          clearTimeout(timer)
          if (code !== 0) return reject(new Error(`replica ${i} exited ${code ?? signal}: ${err}`))
          try {
            const ids = readIds(file)
            resolve({ report: JSON.parse(out), ids, stderr: err })
          } catch (e) {
            reject(new Error(`replica ${i}: ${e.message}; stdout ${out}; stderr ${err}`))
          }
        })
      }),
    )
  }
  return Promise.all(runs)
}

let dir
test.before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-replicas-'))
})
test.after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

test('replicas in Kubernetes with no identity chosen all refuse their first id', {
  skip: why ?? false,
  timeout: 120_000,
}, async () => {
  const runs = await replicas(dir, () => ({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }))
  const issued = runs.filter(r => r.ids.length > 0)
  // Were they issued, as before this refusal, the replicas would all have taken workerId 0 of their own leases.
  const { dups: dup, total } = countDuplicates(runs.map(r => r.ids))
  assert.equal(
    issued.length,
    0,
    `${issued.length} of ${REPLICAS} replicas issued ids (${dup} duplicates in ${total}): ${JSON.stringify(issued.map(r => ({ ids: r.report.ids, workerId: r.report.workerId, from: r.report.sources.workerId })))}`,
  )
  for (const { report } of runs) {
    assert.equal(report.code, 'ERR_SNOWID_IDENTITY_REQUIRED', JSON.stringify(report))
    assert.match(report.message, /in Kubernetes \(KUBERNETES_SERVICE_HOST is set\)/)
    assert.match(report.message, /SNOWID_WORKER_ID_FROM=statefulset/)
  }
})

test('replicas with a SNOWID_WORKER_ID each issue ids at full speed with no duplicate', {
  skip: why ?? false,
  timeout: 120_000,
}, async t => {
  const runs = await replicas(dir, i => ({ KUBERNETES_SERVICE_HOST: '10.96.0.1', SNOWID_WORKER_ID: String(i) }))
  runs.forEach(({ report, ids }, i) => {
    assert.equal(report.workerId, i, JSON.stringify(report))
    assert.equal(report.sources.workerId, 'env')
    assert.ok(ids.length > 1000, `replica ${i} issued ${ids.length} ids`)
  })
  const { dups: dup, total } = countDuplicates(runs.map(r => r.ids))
  assert.equal(dup, 0, `${dup} duplicates in ${total} ids`)
  t.diagnostic(`${REPLICAS} replicas, ${RUN_MS} ms: ${total} ids, ${dup} duplicates`)
})

test('replicas with a SNOWID_DATACENTER_ID each, the worker id from their own leases, issue ids with no duplicate', {
  skip: why ?? false,
  timeout: 120_000,
}, async t => {
  const runs = await replicas(dir, i => ({ KUBERNETES_SERVICE_HOST: '10.96.0.1', SNOWID_DATACENTER_ID: String(i) }))
  runs.forEach(({ report, ids }, i) => {
    // Each replica's lease is empty: each takes workerId 0, under its own datacenter id.
    assert.deepEqual([report.datacenterId, report.workerId], [i, 0], JSON.stringify(report))
    assert.deepEqual([report.sources.datacenterId, report.sources.workerId], ['env', 'lease'])
    assert.ok(ids.length > 1000, `replica ${i} issued ${ids.length} ids`)
  })
  const { dups: dup, total } = countDuplicates(runs.map(r => r.ids))
  assert.equal(dup, 0, `${dup} duplicates in ${total} ids`)
  t.diagnostic(`${REPLICAS} replicas, ${RUN_MS} ms, a datacenter id each: ${total} ids, ${dup} duplicates`)
})

// snowid/cluster in replicas: each replica a primary that forks CLUSTER_WORKERS workers with `fork()`, each worker
// making ids at full speed for RUN_MS (fixtures/cluster-forks.js).
const CLUSTER_REPLICAS = 3
const CLUSTER_WORKERS = 2
const CLUSTER = [
  process.execPath,
  path.join(PACKAGE, '__test__', 'fixtures', 'cluster-forks.js'),
  JSON.stringify(Array(CLUSTER_WORKERS).fill({})),
  PACKAGE,
  String(RUN_MS),
]

test('snowid/cluster in Kubernetes replicas with no identity chosen: every fork is refused, no id issued', {
  skip: why ?? false,
  timeout: 120_000,
}, async () => {
  const runs = await run(dir, CLUSTER_REPLICAS, () => ({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }), CLUSTER)
  const { dups, total } = countDuplicates(runs.map(r => r.ids))
  assert.equal(total, 0, `${total} ids issued (${dups} duplicates): ${JSON.stringify(runs.map(r => r.report))}`)
  for (const { report } of runs) {
    for (const f of report.forks) assert.equal(f.forkError, 'ERR_SNOWID_IDENTITY_REQUIRED', JSON.stringify(report))
  }
})

test('snowid/cluster in Kubernetes replicas with a SNOWID_DATACENTER_ID each: every worker on a slot of its own, 0 duplicates', {
  skip: why ?? false,
  timeout: 120_000,
}, async t => {
  const runs = await run(
    dir,
    CLUSTER_REPLICAS,
    i => ({ KUBERNETES_SERVICE_HOST: '10.96.0.1', SNOWID_DATACENTER_ID: String(i) }),
    CLUSTER,
  )
  const slots = runs.flatMap(({ report }) => report.forks.map(f => f.slot ?? JSON.stringify(f)))
  assert.deepEqual(slots.sort(), ['0:0', '0:1', '1:0', '1:1', '2:0', '2:1'])
  for (const { ids } of runs) assert.ok(ids.length > 1000, `a replica issued ${ids.length} ids`)
  const { dups, total } = countDuplicates(runs.map(r => r.ids))
  assert.equal(dups, 0, `${dups} duplicates in ${total} ids`)
  t.diagnostic(
    `${CLUSTER_REPLICAS} replicas of ${CLUSTER_WORKERS} workers, ${RUN_MS} ms: ${total} ids, ${dups} duplicates`,
  )
})

test('snowid/cluster in plain container replicas with no identity chosen: the primary and the workers warn', {
  skip: why ?? false,
  timeout: 120_000,
}, async t => {
  const runs = await run(dir, 2, () => ({ container: 'docker' }), CLUSTER)
  for (const { report } of runs) {
    assert.ok(
      report.primaryWarnings.includes('SNOWID_IDENTITY_UNCHOSEN'),
      `the primary did not warn: ${JSON.stringify(report)}`,
    )
    for (const f of report.forks) {
      assert.ok(f.warnings?.includes('SNOWID_IDENTITY_UNCHOSEN'), `a worker did not warn: ${JSON.stringify(f)}`)
    }
  }
  // Warned, not refused: replicas of a container still take the same slots, as plain processes there do.
  const { dups, total } = countDuplicates(runs.map(r => r.ids))
  t.diagnostic(`2 container replicas of ${CLUSTER_WORKERS} workers, warned: ${total} ids, ${dups} duplicates`)
})
