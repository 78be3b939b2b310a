'use strict'

// One slot namespace per host: two processes that make ids in one id space never hold the same slot, whatever
// lease directory each one's TMPDIR, user or SNOWID_LEASE_DIR gives it; SNOWID_LEASE_NAMESPACE is the one way to a
// separate set of slots. Real processes, their ids written to files and counted by sorting.
//
// The default-configured processes run with /dev/shm replaced by a directory of the test's own (a bind mount in a
// mount namespace of their own, see withShm), so that they find the default lease directory as the host's processes
// do without touching the host's: that needs root, as do the users made here.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const {
  cleanEnv,
  countDuplicates,
  freshLeaseDir,
  leaseNamespace,
  leaseWriter,
  probeFirstId: probe,
  wasiSkip,
  withShm,
} = require('./helpers.js')
const { SnowflakeLayout } = require('..')

const HOST_LEASE = wasiSkip('no flock, so no host lease')
const WRITER = path.join(__dirname, 'fixtures', 'lease-writer.js')
const LINUX = process.platform === 'linux'
const ROOT_ONLY = !LINUX ? 'Linux only' : process.getuid() !== 0 ? 'needs root to mount /dev/shm and to add users' : ''
const USERS = ['snowid-space-a', 'snowid-space-b']
// How long both processes of a case issue ids at once.
const RUN_MS = 1000

// The writers' id files, in a directory every user may write to.
const outputs = freshLeaseDir()
fs.chmodSync(outputs, 0o1777)
let made = 0

/** Skips a test that needs root (loudly; CI must run it). */
function needsRoot(t) {
  if (!ROOT_ONLY) return false
  t.diagnostic(`*** SKIPPED: ${ROOT_ONLY} ***`)
  assert.ok(!process.env.CI || !LINUX, `${ROOT_ONLY}: CI must run this test`)
  t.skip(ROOT_ONLY)
  return true
}

/**
 * A process issuing ids from the default generator until stopped, writing them to a file; `user` runs it as that
 * user and `shm` with /dev/shm replaced by that directory (both need root). `env` goes through cleanEnv.
 */
function writer(env, { user, shm } = {}) {
  const file = path.join(outputs, `ids-${made++}`)
  const run = [process.execPath, WRITER, file]
  const [cmd, args] = shm ? withShm(shm, run, user) : [run[0], run.slice(1)]
  return leaseWriter(cmd, args, { env: cleanEnv(env) }, file)
}

/** The (datacenterId, workerId) of a writer's ids, read from its first id (default layout). */
function slotOf({ ids }) {
  const d = new SnowflakeLayout().decode(ids[0])
  return `dc${d.datacenterId}-worker${d.workerId}`
}

/** Duplicates among all the ids of `results`, counted by sorting. */
function duplicates(...results) {
  return countDuplicates(results.map(r => r.ids)).dups
}

/** Two writers started at once, issuing ids together for RUN_MS: their results, each with its slot. */
async function both(a, b) {
  const writers = [writer(a.env, a), writer(b.env, b)]
  const ready = await Promise.all(writers.map(w => w.ready()))
  await sleep(RUN_MS)
  const results = []
  for (const w of writers) results.push(await w.stop())
  for (const [i, r] of results.entries()) {
    assert.deepEqual([ready[i].error, r.errors], [null, {}], JSON.stringify(r.messages))
    assert.ok(r.count > 1000, `${r.count} ids`)
  }
  return results.map(r => ({ ...r, slot: slotOf(r) }))
}

/** A directory standing for /dev/shm: sticky and writable by all, as the real one is. */
function fakeShm() {
  const dir = freshLeaseDir()
  fs.chmodSync(dir, 0o1777)
  return dir
}

test('the default lease directory does not follow TMPDIR', {
  skip: HOST_LEASE.skip || (!LINUX && 'Linux only'),
}, () => {
  const expected = fs.statSync('/dev/shm', { throwIfNoEntry: false })?.isDirectory() ? '/dev/shm/snowid' : '/tmp/snowid'
  for (const tmpdir of ['/tmp', freshLeaseDir()]) {
    const out = probe({ TMPDIR: tmpdir, SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '1', SNOWID_LEASE_DIR: undefined })
    assert.deepEqual([out.config?.leaseDir, out.config?.sources.leaseDir], [expected, 'default'], JSON.stringify(out))
  }
})

test(
  'one user, default configuration, TMPDIR=/tmp and TMPDIR=/tmp/x: distinct slots, 0 duplicates',
  HOST_LEASE,
  async t => {
    if (needsRoot(t)) return
    const shm = fakeShm()
    const env = { SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: undefined }
    const [a, b] = await both(
      { env: { ...env, TMPDIR: '/tmp' }, shm },
      { env: { ...env, TMPDIR: freshLeaseDir() }, shm },
    )
    assert.notEqual(a.slot, b.slot)
    assert.equal(duplicates(a, b), 0)
  },
)

test(
  'two users, each with a TMPDIR of its own (pam_tmpdir), default configuration: distinct slots, 0 duplicates',
  HOST_LEASE,
  async t => {
    if (needsRoot(t)) return
    t.after(() => {
      for (const user of USERS) spawnSync('userdel', [user])
    })
    const shm = fakeShm()
    // Root makes the default directory, as a tmpfiles.d line does at boot: one another user made first is that user's
    // alone (lease-takeover.test.js), so users share it only when root made it.
    fs.mkdirSync(path.join(shm, 'snowid'))
    fs.chmodSync(path.join(shm, 'snowid'), 0o1777)
    const tmps = freshLeaseDir()
    fs.chmodSync(tmps, 0o755)
    const sides = USERS.map(user => {
      if (spawnSync('id', [user]).status !== 0) {
        const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user], {
          encoding: 'utf8',
        })
        assert.equal(r.status, 0, r.stderr)
      }
      const uid = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout)
      // As pam_tmpdir makes them: /tmp/user/<uid>, the user's own, mode 0700.
      const tmp = path.join(tmps, String(uid))
      fs.mkdirSync(tmp, { mode: 0o700 })
      fs.chownSync(tmp, uid, uid)
      return { user, shm, env: { SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: undefined, TMPDIR: tmp } }
    })
    const [a, b] = await both(...sides)
    assert.notEqual(a.slot, b.slot)
    assert.equal(duplicates(a, b), 0)
    // Each slot file is in the one default directory, and belongs to the user whose process made it.
    const owners = fs.readdirSync(path.join(shm, 'snowid')).map(f => fs.statSync(path.join(shm, 'snowid', f)).uid)
    assert.equal(new Set(owners).size, 2, JSON.stringify(owners))
  },
)

test(
  'two processes each with a /dev/shm of its own, one network (containers with --network host): distinct slots, 0 duplicates',
  HOST_LEASE,
  async t => {
    if (needsRoot(t)) return
    // The default directory is /dev/shm/snowid for both, but two directories: only the claims keep them apart.
    const env = { SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: undefined }
    const shms = [fakeShm(), fakeShm()]
    const [a, b] = await both({ env, shm: shms[0] }, { env, shm: shms[1] })
    assert.notEqual(a.slot, b.slot)
    assert.equal(duplicates(a, b), 0)
    // Each made its slot file in its own directory.
    const files = shms.map(dir => fs.readdirSync(path.join(dir, 'snowid')))
    assert.deepEqual(files, [[`${a.slot}.lease`], [`${b.slot}.lease`]])
  },
)

test(
  'two lease directories (SNOWID_LEASE_DIR), one id space: distinct slots, 0 duplicates; a configured slot is held once',
  HOST_LEASE,
  async () => {
    const [a, b] = await both(
      { env: { SNOWID_LEASE_DIR: freshLeaseDir(), SNOWID_LEASE_NAMESPACE: undefined } },
      { env: { SNOWID_LEASE_DIR: freshLeaseDir(), SNOWID_LEASE_NAMESPACE: undefined } },
    )
    assert.notEqual(a.slot, b.slot)
    assert.equal(duplicates(a, b), 0)
    // The same configured worker id in two directories: the second process is refused, naming why.
    const namespace = leaseNamespace(outputs)
    const first = writer({
      SNOWID_LEASE_DIR: freshLeaseDir(),
      SNOWID_LEASE_NAMESPACE: namespace,
      SNOWID_WORKER_ID: '3',
    })
    assert.deepEqual(await first.ready(), { workerId: 3, error: null })
    const out = probe({ SNOWID_LEASE_DIR: freshLeaseDir(), SNOWID_LEASE_NAMESPACE: namespace, SNOWID_WORKER_ID: '3' })
    await first.stop()
    assert.equal(out.error?.code, 'ERR_SNOWID_WORKER_ID_IN_USE', JSON.stringify(out))
    assert.match(
      out.error.message,
      /held by another process of the same id space on this host \(the layout's widths and the lease namespace, whatever its epoch; its lease directory may differ\)/,
    )
  },
)

test(
  'two lease directories, epochs 1 s apart: distinct slots, 0 duplicates; a configured slot is held once',
  HOST_LEASE,
  async () => {
    // Ids of one layout and another epoch are numbers of the same kind: the later epoch's process, a second later,
    // makes the ids the other made. So the slots are claimed whatever the epoch.
    const namespace = leaseNamespace(outputs)
    const epochs = ['2020-01-01T00:00:00.000Z', '2020-01-01T00:00:01.000Z']
    const env = i => ({ SNOWID_LEASE_DIR: freshLeaseDir(), SNOWID_LEASE_NAMESPACE: namespace, SNOWID_EPOCH: epochs[i] })
    const [a, b] = await both({ env: env(0) }, { env: env(1) })
    assert.notEqual(a.slot, b.slot)
    assert.equal(duplicates(a, b), 0)
    const first = writer({ ...env(0), SNOWID_WORKER_ID: '3' })
    assert.deepEqual(await first.ready(), { workerId: 3, error: null })
    const out = probe({ ...env(1), SNOWID_WORKER_ID: '3' })
    await first.stop()
    assert.equal(out.error?.code, 'ERR_SNOWID_WORKER_ID_IN_USE', JSON.stringify(out))
    assert.match(out.error.message, /held by another process of the same id space on this host/)
  },
)

test('SNOWID_LEASE_NAMESPACE isolates: processes of two namespaces both take slot 0', HOST_LEASE, async () => {
  const [a, b] = ['a', 'b'].map(n =>
    writer({ SNOWID_LEASE_DIR: freshLeaseDir(), SNOWID_LEASE_NAMESPACE: `${leaseNamespace(outputs)}-${n}` }),
  )
  const ready = [await a.ready(), await b.ready()]
  await Promise.all([a.stop(), b.stop()])
  assert.deepEqual(ready, [
    { workerId: 0, error: null },
    { workerId: 0, error: null },
  ])
  // And the namespace is reported, with its source.
  const out = probe({ SNOWID_LEASE: 'off', SNOWID_LEASE_NAMESPACE: 'reported.ns_1' })
  assert.deepEqual([out.config.leaseNamespace, out.config.sources.leaseNamespace], ['reported.ns_1', 'env'])
})
