'use strict'

// The host lease's rule under the operations that used to fool it: the directory moved, mounted over, reached
// through a switched parent link, or renamed by another user while its holder runs; a holder that borrows time
// (maxLeadMs) with its file deleted; and clock steps. Real processes throughout. Each writes its ids to a file, and
// duplicates are counted by sorting them all.

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
  tamper,
  wasiSkip,
  withShm,
} = require('./helpers.js')

const WRITER = path.join(__dirname, 'fixtures', 'lease-writer.js')
const WASI = wasiSkip('no flock, so no host lease').skip
const isRoot = process.getuid && process.getuid() === 0
// libfaketime is Linux's (a Windows Node under Wine would find the files, and no LD_PRELOAD).
const FAKETIME =
  process.platform === 'linux' &&
  [
    '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
    '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  ].find(f => fs.existsSync(f))
// 16 ids per ms: a writer borrows up to its maxLeadMs within a few ms, with few ids to count.
const LAYOUT = { SNOWID_SEQUENCE_BITS: '4' }
const outputs = freshLeaseDir()
let made = 0

/**
 * A process issuing ids until stopped, writing them to a file; `user` runs it as that user, `shm` in a /dev/shm of
 * its own (see withShm; both need root).
 */
function writer(env, { user, shm } = {}) {
  const file = path.join(outputs, `ids-${made++}`)
  const as = user && !shm ? { uid: uidOf(user), gid: uidOf(user, '-g') } : {}
  if (user) fs.chmodSync(outputs, 0o777)
  const [cmd, args] = shm ? withShm(shm, [process.execPath, WRITER, file], user) : [process.execPath, [WRITER, file]]
  const run = leaseWriter(cmd, args, { ...as, env: cleanEnv({ ...LAYOUT, ...env }) }, file)
  running.add(run)
  const stop = run.stop
  run.stop = () => {
    running.delete(run)
    return stop()
  }
  return run
}

// The writers a test started and did not stop (it failed first): stopped after it, whatever happened, so that none
// goes on holding its slot.
const running = new Set()
test.afterEach(async () => {
  for (const run of running) await run.stop().catch(() => {})
})

function uidOf(user, flag = '-u') {
  return Number(spawnSync('id', [flag, user], { encoding: 'utf8' }).stdout)
}

/** Duplicates among all the ids of `results`, counted by sorting. */
function duplicates(...results) {
  const { dups } = countDuplicates(results.map(r => r.ids))
  if (dups && process.env.SNOWID_TEST_DEBUG) {
    const { SnowflakeLayout } = require('..')
    const layout = new SnowflakeLayout({ sequenceBits: 4 })
    for (const r of results) {
      if (!r.ids.length) continue
      const [a, b] = [layout.decode(r.ids[0]), layout.decode(r.ids[r.ids.length - 1])]
      console.log('source', r.ids.length, a.timestamp, a.clockBack, '->', b.timestamp, b.clockBack)
      const cbs = {}
      for (const id of r.ids) {
        const d = layout.decode(id)
        cbs[d.clockBack] = [
          Math.min(cbs[d.clockBack]?.[0] ?? Infinity, d.timestamp),
          Math.max(cbs[d.clockBack]?.[1] ?? 0, d.timestamp),
        ]
      }
      console.log(' by clockBack', JSON.stringify(cbs))
    }
  }
  return dups
}

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts })
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`)
}

/**
 * The scenario every directory case shares: a holder on `dir` at workerId 0, `change()` done to the directory under
 * it, then newcomers on the same path: one configured for workerId 0 (refused) and one automatic (another slot). All
 * issue ids for a while; 0 duplicates, the holder never stops, and it writes its marks where newcomers now look.
 */
async function directoryChanged({ env, change, user, shm }) {
  const holder = writer({ ...env, SNOWID_WORKER_ID: '0' }, { shm })
  assert.deepEqual(await holder.ready(), { workerId: 0, error: null })
  await sleep(300)
  change()
  const configured = writer({ ...env, SNOWID_WORKER_ID: '0' }, { user, shm })
  const auto = writer(env, { user, shm })
  const [c, a] = [await configured.ready(), await auto.ready()]
  await sleep(600)
  const [h, rc, ra] = [await holder.stop(), await configured.stop(), await auto.stop()]
  assert.deepEqual(c, { workerId: null, error: 'ERR_SNOWID_WORKER_ID_IN_USE' })
  assert.equal(a.error, null)
  assert.notEqual(a.workerId, 0)
  assert.deepEqual(h.errors, {}, 'the holder goes on in the directory now at its path')
  assert.ok(h.count > 1000 && ra.count > 1000, `${h.count} and ${ra.count} ids`)
  assert.equal(duplicates(h, rc, ra), 0)
}

test('the lease directory moved away under its holder: newcomers at the path cannot take its slot, 0 duplicates', {
  skip: WASI,
}, async () => {
  const dir = path.join(freshLeaseDir(), 'lease')
  await directoryChanged({
    env: { SNOWID_LEASE_DIR: dir },
    change: () => tamper(() => fs.renameSync(dir, `${dir}.old`)),
  })
  assert.ok(
    fs.existsSync(path.join(dir, 'dc0-worker0.lease')),
    'the holder made its directory and file again at the path',
  )
})

test('the lease directory removed with rm -rf: its holder makes it again and goes on, 0 duplicates', {
  skip: WASI,
}, async () => {
  const dir = path.join(freshLeaseDir(), 'lease')
  await directoryChanged({
    env: { SNOWID_LEASE_DIR: dir },
    change: () => tamper(() => fs.rmSync(dir, { recursive: true })),
  })
})

test('another directory mounted over the lease directory: 0 duplicates', {
  skip: WASI || (!isRoot && 'needs root to mount'),
}, async () => {
  const base = freshLeaseDir()
  const dir = path.join(base, 'lease')
  const other = path.join(base, 'other')
  fs.mkdirSync(other, { mode: 0o700 })
  let mounted = false
  try {
    await directoryChanged({
      env: { SNOWID_LEASE_DIR: dir },
      change: () => {
        sh('mount', ['--bind', other, dir])
        mounted = true
      },
    })
  } finally {
    if (mounted) sh('umount', [dir])
  }
})

test('a deploy switches a parent link of the lease directory: the same SNOWID_LEASE_DIR is the same slot, 0 duplicates', {
  // On Windows a relative link to a directory needs a privilege (or developer mode), and Wine 8 makes none.
  skip: WASI || (process.platform === 'win32' && 'relative directory links'),
}, async () => {
  const base = freshLeaseDir()
  for (const rel of ['rel1', 'rel2']) fs.mkdirSync(path.join(base, rel, 'lease'), { recursive: true, mode: 0o700 })
  fs.symlinkSync('rel1', path.join(base, 'current'))
  await directoryChanged({
    env: { SNOWID_LEASE_DIR: path.join(base, 'current', 'lease') },
    change: () => {
      // As deploy tools do it: a new link renamed over the old one, atomically.
      fs.symlinkSync('rel2', path.join(base, 'current.new'))
      fs.renameSync(path.join(base, 'current.new'), path.join(base, 'current'))
    },
  })
  assert.ok(
    fs.existsSync(path.join(base, 'rel2', 'lease', 'dc0-worker0.lease')),
    'the holder writes its marks behind the new link',
  )
})

test('another user makes the shared default directory first: only its own processes use it, others refuse it', {
  skip: WASI || (!isRoot && 'needs root to add a user and mount'),
}, async () => {
  const user = 'snowidtest'
  if (spawnSync('id', [user]).status !== 0) {
    sh('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user])
  }
  // `tmp` stands for /dev/shm (sticky, writable by all), bind-mounted over it in each process's own mount namespace:
  // the default lease directory is snowid/ in it, and the other user made it, as any user can after a boot. The
  // processes share a lease namespace of their own, so that the host's other processes do not count.
  const tmp = freshLeaseDir()
  fs.chmodSync(tmp, 0o1777)
  const shared = path.join(tmp, 'snowid')
  sh('runuser', ['-u', user, '--', 'mkdir', '-m', '1777', shared])
  const env = { SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: leaseNamespace(tmp) }
  // Root, and a user who is neither root nor its maker, refuse it, naming its owner and the way out.
  for (const as of [undefined, 'nobody']) {
    const other = writer(env, { user: as, shm: tmp })
    assert.deepEqual(await other.ready(), { workerId: null, error: 'ERR_SNOWID_LEASE_DIR' }, `as ${as ?? 'root'}`)
    const { messages } = await other.stop()
    assert.match(
      messages.ERR_SNOWID_LEASE_DIR,
      new RegExp(
        `belongs to uid ${uidOf(user)} \\(${user}\\), neither root nor this process's user .*another user made it first.*Have root remove it, or make it before any user does.*Set SNOWID_LEASE_DIR to another`,
      ),
    )
  }
  assert.deepEqual(fs.readdirSync(shared), [], 'no file was made in it')
  // Its maker's processes use it: it is their own. They take worker 0, even while a process of the host holds worker
  // 0 in its real default directory: the claim named after the directory's path (/dev/shm/snowid, as written) is the
  // namespace's own.
  const own = writer(env, { user, shm: tmp })
  assert.deepEqual(await own.ready(), { workerId: 0, error: null })
  assert.deepEqual((await own.stop()).errors, {})
  const files = fs.readdirSync(shared)
  assert.deepEqual(files, ['dc0-worker0.lease'])
  assert.equal(fs.statSync(path.join(shared, files[0])).uid, uidOf(user), "its slot file is its maker's")
})

/**
 * A holder borrowing up to `holderLead` ms has its lease file deleted; a newcomer with `newcomerLead` is refused
 * while it runs; once it exits, a second newcomer takes the slot at once, starting past every id the holder issued.
 */
async function borrowed(holderLead, newcomerLead) {
  const dir = freshLeaseDir()
  const env = { SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' }
  const holder = writer({ ...env, SNOWID_MAX_LEAD_MS: String(holderLead) })
  await holder.ready()
  await sleep(Math.min(holderLead, 1000) + 200)
  tamper(() => fs.rmSync(path.join(dir, 'dc0-worker0.lease')))
  const refused = writer({ ...env, SNOWID_MAX_LEAD_MS: String(newcomerLead) })
  assert.deepEqual(await refused.ready(), { workerId: null, error: 'ERR_SNOWID_WORKER_ID_IN_USE' })
  await sleep(300)
  const h = await holder.stop()
  const next = writer({ ...env, SNOWID_MAX_LEAD_MS: String(newcomerLead) })
  assert.deepEqual(await next.ready(), { workerId: 0, error: null })
  await sleep(500)
  const [r, n] = [await refused.stop(), await next.stop()]
  if (holderLead > 0) assert.ok(h.lead > 100, `the holder borrowed (${h.lead} ms ahead)`)
  assert.deepEqual(h.errors, {})
  assert.deepEqual(n.errors, {})
  assert.ok(n.count > 1000, `${n.count} ids`)
  assert.equal(duplicates(h, r, n), 0)
}

for (const [holderLead, newcomerLead] of [
  [1000, 1000],
  [200, 200],
  [5000, 0],
  [0, 5000],
]) {
  test(
    `leads ${holderLead}/${newcomerLead}: a borrowing holder's deleted file, newcomers during and after it, 0 duplicates`,
    { skip: WASI },
    () => borrowed(holderLead, newcomerLead),
  )
}

/** A clock that a file steps (libfaketime), for processes started with `env`. */
function steppedClock() {
  const file = path.join(freshLeaseDir(), 'faketime')
  fs.writeFileSync(file, '+0\n')
  return {
    env: {
      LD_PRELOAD: FAKETIME,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    // Written aside and renamed over, so a process never reads a half-written file (which libfaketime takes as no
    // offset: a step forward and back again).
    step: offset => {
      fs.writeFileSync(`${file}.new`, `${offset}\n`)
      fs.renameSync(`${file}.new`, file)
    },
  }
}

const noFaketime =
  WASI ||
  (process.platform !== 'linux' && 'libfaketime: Linux only') ||
  (!FAKETIME && 'libfaketime not installed (apt-get install faketime)')

test('clock steps: back 2 s under a running holder, its file deleted, newcomers during and after it: 0 duplicates', {
  skip: noFaketime,
}, async () => {
  const clock = steppedClock()
  const dir = freshLeaseDir()
  const env = { ...clock.env, SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' }
  const holder = writer(env)
  await holder.ready()
  await sleep(300)
  clock.step('-2s')
  await sleep(300)
  fs.rmSync(path.join(dir, 'dc0-worker0.lease'))
  await sleep(500)
  const refused = writer(env)
  assert.equal((await refused.ready()).error, 'ERR_SNOWID_WORKER_ID_IN_USE')
  const h = await holder.stop()
  // The clock steps back once more between the holder's exit and the next process's start.
  clock.step('-3s')
  const next = writer(env)
  assert.deepEqual(await next.ready(), { workerId: 0, error: null })
  await sleep(500)
  const [r, n] = [await refused.stop(), await next.stop()]
  assert.deepEqual(h.errors, {}, JSON.stringify(h.messages))
  assert.ok(h.count > 1000 && n.count > 1000, `${h.count} and ${n.count} ids`)
  assert.equal(duplicates(h, r, n), 0)
})

test("clock steps: a newcomer started while the clock steps back 1 s takes no running holder's slot: 0 duplicates", {
  skip: noFaketime,
}, async () => {
  const clock = steppedClock()
  const dir = freshLeaseDir()
  const env = { ...clock.env, SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' }
  const holder = writer(env)
  await holder.ready()
  await sleep(300)
  fs.rmSync(path.join(dir, 'dc0-worker0.lease'))
  const newcomer = writer(env)
  clock.step('-1s')
  assert.equal((await newcomer.ready()).error, 'ERR_SNOWID_WORKER_ID_IN_USE')
  await sleep(500)
  const [h, n] = [await holder.stop(), await newcomer.stop()]
  assert.ok(h.count > 1000)
  assert.equal(duplicates(h, n), 0)
})
