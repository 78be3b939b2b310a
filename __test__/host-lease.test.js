'use strict'

// The host lease when the host works against it: lease files deleted or replaced under a running process, special
// files and links in the lease directory, directories others can write to, forged marks, and two users sharing the
// default directory. Real processes throughout.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const {
  ROOT,
  cleanEnv,
  countDuplicates,
  encodeRecord,
  freshLeaseDir,
  leaseNamespace,
  probeFirstId: probe,
  readyLine,
  spawnChild,
  endChildOrFail,
  tamper,
  wasiSkip,
  withShm,
} = require('./helpers.js')

// Every test here is about the host lease, which WASI cannot hold (no flock).
const HOST_LEASE = wasiSkip('no flock, so no host lease')

const STREAMER = path.join(__dirname, 'fixtures', 'lease-streamer.js')
const isRoot = process.getuid && process.getuid() === 0

/** A process issuing ids until stopped; `user` runs it as that user, `shm` in a /dev/shm of its own (need root). */
function streamer(env, { user, cwd = ROOT, shm } = {}) {
  const node = [process.execPath, STREAMER]
  const argv = shm
    ? withShm(shm, node, user)
    : user
      ? ['runuser', ['-u', user, '--', ...node]]
      : [node[0], node.slice(1)]
  const run = spawnChild(argv[0], argv[1], { cwd, env: cleanEnv(env) })
  return {
    ready: (ms = 30_000) => readyLine(run, ms),
    async stop() {
      await endChildOrFail(run, 'streamer')
      const last = run.out.trim().split('\n').pop()
      return JSON.parse(last)
    },
  }
}

/** Duplicates among lists of decimal ids, counted by sorting them all. */
function duplicates(...lists) {
  return countDuplicates(lists).dups
}

test(
  'a held lease file deleted under a running process: 0 duplicates, and the holder keeps its slot',
  HOST_LEASE,
  async () => {
    const dir = freshLeaseDir()
    const file = path.join(dir, 'dc0-worker0.lease')
    const a = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
    assert.deepEqual(await a.ready(), { workerId: 0, error: null })
    await sleep(200)
    tamper(() => fs.unlinkSync(file))
    // The holder notices at its next mark write (every 100 ms while it issues ids) and makes the file again.
    await sleep(300)
    const b = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
    const bReady = await b.ready()
    await sleep(300)
    const [ra, rb] = [await a.stop(), await b.stop()]
    assert.equal(bReady.error, 'ERR_SNOWID_WORKER_ID_IN_USE', 'the holder made its file again and holds it')
    assert.equal(duplicates(ra.ids, rb.ids), 0)
    assert.deepEqual(ra.errors, {})
    assert.ok(ra.ids.length > 1000)
  },
)

test(
  'a lease file deleted under its holder: newcomers at once cannot take its slot, 0 duplicates',
  HOST_LEASE,
  async () => {
    const dir = freshLeaseDir()
    const file = path.join(dir, 'dc0-worker0.lease')
    const a = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
    await a.ready()
    await sleep(200)
    tamper(() => fs.unlinkSync(file))
    const b = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
    const c = streamer({ SNOWID_LEASE_DIR: dir })
    assert.deepEqual(await b.ready(), { workerId: null, error: 'ERR_SNOWID_WORKER_ID_IN_USE' })
    assert.deepEqual(await c.ready(), { workerId: 1, error: null }, 'the automatic lease moves on to the next slot')
    await sleep(500)
    const [ra, rb, rc] = [await a.stop(), await b.stop(), await c.stop()]
    assert.deepEqual(ra.errors, {})
    assert.equal(duplicates(ra.ids, rb.ids, rc.ids), 0, `${ra.ids.length} and ${rc.ids.length} ids`)
    assert.ok(ra.ids.length > 1000 && rc.ids.length > 1000)
  },
)

test(
  'a lease file replaced by a rename under a running process: the holder takes over the new file, 0 duplicates',
  HOST_LEASE,
  async () => {
    const dir = freshLeaseDir()
    const file = path.join(dir, 'dc0-worker0.lease')
    const a = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
    await a.ready()
    await sleep(200)
    fs.writeFileSync(path.join(dir, 'fresh'), '')
    tamper(() => fs.renameSync(path.join(dir, 'fresh'), file))
    const b = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
    assert.deepEqual(await b.ready(), { workerId: null, error: 'ERR_SNOWID_WORKER_ID_IN_USE' })
    await sleep(500)
    const [ra, rb] = [await a.stop(), await b.stop()]
    assert.deepEqual(ra.errors, {})
    assert.equal(duplicates(ra.ids, rb.ids), 0)
    assert.ok(
      fs.readFileSync(file, 'latin1').startsWith('snowid-lease v2 '),
      'the holder writes its record in the new file',
    )
  },
)

const WASI_SKIP = HOST_LEASE.skip
const noFlock = spawnSync('sh', ['-c', 'command -v flock']).status !== 0 && 'flock (util-linux) not installed'

test('a lease file replaced by one another process locks: the holder stops with ERR_SNOWID_LEASE_LOST', {
  skip: WASI_SKIP || (process.platform === 'win32' && 'Windows refuses to replace a held file') || noFlock,
}, async () => {
  // What a process in another network namespace, which the claims do not reach, would do.
  const dir = freshLeaseDir()
  const file = path.join(dir, 'dc0-worker0.lease')
  const a = streamer({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
  await a.ready()
  const other = path.join(dir, 'other')
  fs.writeFileSync(other, '')
  const locker = spawn('flock', ['--exclusive', other, 'sleep', '30'], { stdio: 'ignore' })
  try {
    await sleep(300)
    fs.renameSync(other, file)
    await sleep(500)
    const ra = await a.stop()
    assert.ok(ra.errors.ERR_SNOWID_LEASE_LOST > 0, JSON.stringify(ra.errors))
  } finally {
    locker.kill()
  }
})

// FIFOs, devices, Unix modes and sticky directories are Unix's; the Windows test follows these.
const UNIX_FILES = process.platform === 'win32' ? { skip: "Unix's special files and modes" } : HOST_LEASE

test('special files and links never hang, never get followed, and are left as found', UNIX_FILES, async () => {
  const dir = freshLeaseDir()
  const outside = path.join(freshLeaseDir(), 'precious')
  fs.writeFileSync(outside, '')
  spawnSync('mkfifo', [path.join(dir, 'dc0-worker0.lease')])
  fs.symlinkSync(outside, path.join(dir, 'dc0-worker1.lease'))
  fs.symlinkSync('/dev/zero', path.join(dir, 'dc0-worker2.lease'))
  fs.closeSync(fs.openSync(path.join(dir, 'dc0-worker3.lease'), 'w'))
  fs.truncateSync(path.join(dir, 'dc0-worker3.lease'), 1 << 30) // 1 GiB, sparse
  const refused = [
    ['0', /expected a regular file, found a FIFO/],
    ['1', /expected a regular file, found a symbolic link/],
    ['2', /expected a regular file, found a symbolic link/],
    ['3', /expected at most 2048 bytes \(two records\), found 1073741824/],
  ]
  for (const [worker, message] of refused) {
    const t0 = Date.now()
    const out = probe({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: worker })
    assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_CORRUPT', `worker ${worker}: ${JSON.stringify(out)}`)
    assert.match(out.error.message, message)
    assert.ok(Date.now() - t0 < 20_000)
  }
  // The automatic lease skips them all.
  const auto = probe({ SNOWID_LEASE_DIR: dir })
  assert.equal(auto.decoded?.workerId, 4, JSON.stringify(auto))
  // workerSlots reads the directory without hanging on the FIFO, and names no process that does not hold a slot: the
  // automatic process wrote its file and has exited.
  const { workerSlots } = require('..')
  assert.ok(fs.existsSync(path.join(dir, 'dc0-worker4.lease')))
  assert.deepEqual(workerSlots({ SNOWID_LEASE_DIR: dir }).recorded, [])
  assert.equal(fs.readFileSync(outside, 'utf8'), '', 'nothing was written through the link')
  assert.equal(fs.statSync(path.join(dir, 'dc0-worker0.lease')).isFIFO(), true)
})

test("a directory, a socket or a file another user made unreadable in a slot's place: skipped by the automatic lease, refused for a configured worker id", {
  skip: UNIX_FILES.skip || (!isRoot && 'needs root to run as another user'),
}, () => {
  const user = 'snowidtest'
  if (spawnSync('id', [user]).status !== 0) {
    const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user])
    assert.equal(r.status, 0, String(r.stderr))
  }
  const id = flag => Number(spawnSync('id', [flag, user], { encoding: 'utf8' }).stdout)
  // A directory every user shares (sticky), where root planted an entry in each of the first three slots' places.
  const dir = freshLeaseDir()
  fs.chmodSync(dir, 0o1777)
  fs.mkdirSync(path.join(dir, 'dc0-worker0.lease'))
  const socket = spawnSync('python3', [
    '-c',
    'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])',
    path.join(dir, 'dc0-worker1.lease'),
  ])
  assert.equal(socket.status, 0, String(socket.stderr))
  fs.writeFileSync(path.join(dir, 'dc0-worker2.lease'), '', { mode: 0o000 })
  fs.chmodSync(path.join(dir, 'dc0-worker2.lease'), 0o000)
  const asUser = env => {
    const code = `const snowid = require('.')
      try { console.log(JSON.stringify({ decoded: snowid.decode(snowid.nextId()) })) }
      catch (e) { console.log(JSON.stringify({ error: { code: e.code, message: e.message } })) }`
    const r = spawnSync(process.execPath, ['-e', code], {
      cwd: ROOT,
      env: cleanEnv({ SNOWID_LEASE_DIR: dir, ...env }),
      uid: id('-u'),
      gid: id('-g'),
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  }
  const refused = [
    ['0', /expected a regular file, found a directory; it is left as found/],
    ['1', /expected a regular file, found a socket; it is left as found/],
    ['2', /expected a regular file, found a file this user may not read \(mode 0, uid 0\); it is left as found/],
  ]
  for (const [worker, message] of refused) {
    const out = asUser({ SNOWID_WORKER_ID: worker })
    assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_CORRUPT', `worker ${worker}: ${JSON.stringify(out)}`)
    assert.match(out.error.message, message)
  }
  // The automatic lease takes the next slot: one entry is no denial of service of the host.
  const auto = asUser({})
  assert.equal(auto.decoded?.workerId, 3, JSON.stringify(auto))
  assert.ok(fs.statSync(path.join(dir, 'dc0-worker0.lease')).isDirectory())
  assert.ok(fs.statSync(path.join(dir, 'dc0-worker1.lease')).isSocket())
  assert.equal(fs.statSync(path.join(dir, 'dc0-worker2.lease')).mode & 0o777, 0)
})

test(
  'a lease directory that is a link, or that others may write to without the sticky bit, is refused',
  UNIX_FILES,
  () => {
    const parent = freshLeaseDir()
    const real = path.join(parent, 'real')
    fs.mkdirSync(real, { mode: 0o700 })
    fs.symlinkSync(real, path.join(parent, 'link'))
    let out = probe({ SNOWID_LEASE_DIR: path.join(parent, 'link') })
    assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_DIR')
    assert.match(out.error.message, /found a symbolic link/)
    fs.chmodSync(real, 0o777)
    out = probe({ SNOWID_LEASE_DIR: real })
    assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_DIR')
    assert.match(out.error.message, /others may write to it but it is not sticky.*chmod 700/)
    fs.chmodSync(real, 0o1777)
    out = probe({ SNOWID_LEASE_DIR: real })
    assert.equal(out.error, undefined, 'sticky: each file belongs to its creator')
  },
)

/** Makes a link of `type` ('file' or 'junction') at `link` to `target`: whether there is one (Windows gives file links
 * only to administrators or in developer mode, and Wine 8 makes neither). */
function madeLink(target, link, type) {
  try {
    fs.symlinkSync(target, link, type)
    return fs.lstatSync(link).isSymbolicLink()
  } catch {
    return false
  }
}

test(
  "on Windows, a directory, an oversized file or a link in a slot file's place is refused and left as found, and a junction as the lease directory is refused",
  process.platform === 'win32' ? HOST_LEASE : { skip: 'Windows only' },
  t => {
    const dir = freshLeaseDir()
    const outside = path.join(freshLeaseDir(), 'precious')
    fs.writeFileSync(outside, '')
    fs.mkdirSync(path.join(dir, 'dc0-worker0.lease'))
    fs.closeSync(fs.openSync(path.join(dir, 'dc0-worker1.lease'), 'w'))
    fs.truncateSync(path.join(dir, 'dc0-worker1.lease'), 1 << 20)
    const refused = [
      ['0', /expected a regular file, found a directory/],
      ['1', /expected at most 2048 bytes \(two records\), found 1048576/],
    ]
    const fileLink = madeLink(outside, path.join(dir, 'dc0-worker2.lease'), 'file')
    if (fileLink) refused.push(['2', /expected a regular file, found a symbolic link or junction/])
    for (const [worker, message] of refused) {
      const out = probe({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: worker })
      assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_CORRUPT', `worker ${worker}: ${JSON.stringify(out)}`)
      assert.match(out.error.message, message)
    }
    const auto = probe({ SNOWID_LEASE_DIR: dir })
    assert.equal(auto.decoded?.workerId, refused.length, JSON.stringify(auto))
    const { workerSlots } = require('..')
    assert.deepEqual(workerSlots({ SNOWID_LEASE_DIR: dir }).recorded, [], 'the process that took a slot has exited')
    assert.equal(fs.readFileSync(outside, 'utf8'), '', 'nothing was written through a link')
    assert.equal(fs.statSync(path.join(dir, 'dc0-worker1.lease')).size, 1 << 20)
    const real = path.join(freshLeaseDir(), 'real')
    fs.mkdirSync(real)
    const junction = path.join(path.dirname(real), 'junction')
    if (madeLink(real, junction, 'junction')) {
      const out = probe({ SNOWID_LEASE_DIR: junction })
      assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_DIR')
      assert.match(out.error.message, /found a symbolic link or junction/)
    }
    if (!fileLink) t.diagnostic('no file link could be made here: that part did not run')
  },
)

test('a lease directory of another user is refused unless it is sticky', {
  skip: HOST_LEASE.skip || (!isRoot && 'needs root to chown'),
}, () => {
  const dir = path.join(freshLeaseDir(), 'theirs')
  fs.mkdirSync(dir)
  fs.chownSync(dir, 65534, 65534)
  fs.chmodSync(dir, 0o777)
  let out = probe({ SNOWID_LEASE_DIR: dir })
  assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_DIR')
  assert.match(out.error.message, /belongs to uid 65534 and is not sticky/)
  fs.chmodSync(dir, 0o1777)
  out = probe({ SNOWID_LEASE_DIR: dir })
  assert.equal(out.error, undefined)
})

test('a relative lease directory is refused, whichever directory a process starts in', HOST_LEASE, () => {
  for (const cwd of [ROOT, os.tmpdir()]) {
    const r = spawnSync(
      process.execPath,
      ['-e', `try { require(${JSON.stringify(ROOT)}).nextId() } catch (e) { console.log(e.code, e.message) }`],
      {
        cwd,
        env: cleanEnv({ SNOWID_LEASE_DIR: 'leases' }),
        encoding: 'utf8',
      },
    )
    assert.match(r.stdout, /^ERR_SNOWID_INVALID_CONFIG SNOWID_LEASE_DIR: expected an absolute directory path/)
    assert.equal(fs.existsSync(path.join(cwd, 'leases')), false)
  }
})

// Linux shows a thread's context switches in /proc; elsewhere this is not measured.
const PROC = process.platform === 'linux' ? HOST_LEASE : { skip: 'needs /proc/self/task (Linux)' }

test("an idle process's lease thread sleeps until a mark reaches past the clock", PROC, () => {
  const dir = freshLeaseDir()
  // Over a second once the first id's marks have passed: wake-ups of the snowid-lease thread, then the same after a
  // second id (whose marks it watches for about 100 ms, a look every 10 ms, then sleeps again).
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs')
       const snowid = require('.')
       const wakes = () => {
         const tid = fs.readdirSync('/proc/self/task').find(t => fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim() === 'snowid-lease')
         return Number(/voluntary_ctxt_switches:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/task/' + tid + '/status', 'utf8'))[1])
       }
       const sleep = ms => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
       snowid.nextId()
       sleep(500)
       const a = wakes()
       sleep(1000)
       const idle = wakes() - a
       snowid.nextId()
       sleep(1000)
       const busy = wakes() - a - idle
       console.log(JSON.stringify({ idle, busy }))`,
    ],
    { cwd: ROOT, env: cleanEnv({ SNOWID_LEASE_DIR: dir }), encoding: 'utf8' },
  )
  assert.equal(r.status, 0, r.stderr)
  const { idle, busy } = JSON.parse(r.stdout)
  // A thread that looked every 10 ms would wake about 100 times a second.
  assert.ok(idle <= 2, `the lease thread woke ${idle} times in an idle second`)
  assert.ok(busy >= 1, `the lease thread woke ${busy} times while a mark reached past the clock`)
})

test('a Snowflake used only to read ids takes no slot: the lease is taken by its first id', HOST_LEASE, () => {
  const dir = freshLeaseDir()
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `const { Snowflake } = require('.')
       const reader = new Snowflake({ epoch: 1420070400000, datacenterBits: 5, workerBits: 5, clockBackBits: 0, sequenceBits: 12 })
       const fields = reader.decode(175928847299117063n)
       const files = require('node:fs').readdirSync(process.env.SNOWID_LEASE_DIR)
       const other = require('node:child_process').spawnSync(process.execPath, ['-e', "console.log(String(require('.').nextId()))"], { env: { ...process.env, SNOWID_WORKER_ID: '0' }, encoding: 'utf8' })
       reader.nextId()
       console.log(JSON.stringify({ files, sequence: fields.sequence, other: other.stdout.trim(), otherError: other.stderr.split('\\n')[0], worker: reader.config().workerId }))`,
    ],
    { cwd: ROOT, env: cleanEnv({ SNOWID_LEASE_DIR: dir }), encoding: 'utf8' },
  )
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.deepEqual(out.files, [], 'decoding took no slot')
  assert.equal(out.sequence, 7)
  assert.match(out.other, /^\d+$/, `a generator configured on worker 0 runs beside it: ${out.otherError}`)
  assert.equal(out.worker, 0, 'its first id took the lowest free slot, which the other process had given back')
})

test(
  'two cluster primaries on one host: their workers take distinct slots, none dies, and workers() follows them',
  HOST_LEASE,
  async () => {
    // Automatic (each worker takes its slot from the lease), and assigned (a worker id configured in the primaries'
    // environment, so fork hands out worker ids: a worker whose slot the other primary took first moves on).
    for (const mode of [{}, { SNOWID_WORKER_ID: '0' }]) {
      const dir = freshLeaseDir()
      const primary = () =>
        new Promise(resolve => {
          const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'cluster-primary.js')], {
            cwd: ROOT,
            env: cleanEnv({ SNOWID_LEASE_DIR: dir, COUNT: '8', HOLD_MS: '3000', ...mode }),
            stdio: ['ignore', 'pipe', 'pipe'],
          })
          let out = ''
          let err = ''
          child.stdout.on('data', d => (out += d))
          child.stderr.on('data', d => (err += d))
          child.on('exit', (code, signal) => resolve({ out, err, code: code ?? signal }))
        })
      const [a, b] = await Promise.all([primary(), primary()])
      for (const p of [a, b]) {
        assert.match(p.out, /^\{/, `a primary printed no result (exit ${p.code}): ${JSON.stringify(p.out)} ${p.err}`)
      }
      const [ra, rb] = [JSON.parse(a.out), JSON.parse(b.out)]
      assert.equal(ra.died + rb.died, 0, `${a.err}${b.err}`)
      const all = [...ra.slots, ...rb.slots]
      assert.equal(new Set(all).size, 16, `16 distinct slots: ${ra.slots} / ${rb.slots}`)
      assert.deepEqual(ra.listed, ra.slots, 'workers() follows the workers to the slots they hold')
      assert.deepEqual(rb.listed, rb.slots)
    }
  },
)

test('snowid/cluster follows a worker to the worker id another of its workers was handed', HOST_LEASE, () => {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'fixtures', 'cluster-follow.js')], {
    cwd: ROOT,
    env: cleanEnv({ SNOWID_LEASE_DIR: freshLeaseDir() }),
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  const { slots, listed } = JSON.parse(r.stdout)
  assert.deepEqual(slots, [1, 2], 'each worker moved on past a taken worker id')
  assert.deepEqual(listed, [1, 2], 'workers() lists both')
})

const cleaner = ['systemd-tmpfiles', 'faketime'].filter(
  tool => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0,
)

test("an age-based tmp cleaner (systemd-tmpfiles) leaves a live process's lease files alone", HOST_LEASE, async t => {
  if (cleaner.length) {
    t.diagnostic(`*** SKIPPED: ${cleaner.join(' and ')} not installed (apt-get install systemd faketime) ***`)
    assert.ok(!process.env.CI, `${cleaner.join(' and ')} must be installed when CI is set`)
    return t.skip(`${cleaner.join(' and ')} not installed`)
  }
  // A tmp dir of the test with the lease directory in it (as /tmp/snowid is in /tmp), and a tmpfiles.d rule that
  // removes anything in it older than 10 days; the cleaner runs 400 days in the future (faketime), so every file is
  // that old.
  const tmp = freshLeaseDir()
  const rule = path.join(freshLeaseDir(), 'snowid-test.conf')
  fs.writeFileSync(rule, `e ${tmp} - - - 10d\n`)
  const clean = () => spawnSync('faketime', ['-f', '+400d', 'systemd-tmpfiles', '--clean', rule], { encoding: 'utf8' })
  const file = path.join(tmp, 'snowid', 'dc0-worker0.lease')
  const holder = streamer({ SNOWID_LEASE_DIR: path.join(tmp, 'snowid') })
  assert.equal((await holder.ready()).error, null)
  clean()
  const whileHeld = fs.existsSync(file)
  await holder.stop()
  clean()
  assert.equal(whileHeld, true, 'the lease file survives the cleaner while its process runs')
  assert.equal(fs.existsSync(file), false, 'and is cleaned once no process holds a lease there')
})

test('forged far-future marks: the automatic lease moves on; a configured slot still fails loudly', HOST_LEASE, () => {
  const dir = freshLeaseDir()
  const far = Date.now() + 365 * 86_400_000
  fs.writeFileSync(
    path.join(dir, 'dc0-worker0.lease'),
    encodeRecord({
      marks: [
        [0, far],
        [1, far],
        [2, far],
        [3, far],
      ],
    }),
  )
  const auto = probe({ SNOWID_LEASE_DIR: dir })
  assert.equal(auto.decoded?.workerId, 1, JSON.stringify(auto))
  const configured = probe({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
  assert.equal(configured.error?.code, 'ERR_SNOWID_CLOCK_BACKWARDS')
})

test('two users on the default configuration share its directory: both issue ids, 0 duplicates', {
  skip: HOST_LEASE.skip || (!isRoot && 'needs root to add a user'),
}, async () => {
  const user = 'snowidtest'
  if (spawnSync('id', [user]).status !== 0) {
    const made = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user], {
      encoding: 'utf8',
    })
    assert.equal(made.status, 0, made.stderr)
  }
  // `tmp` stands for /dev/shm: the default lease directory is snowid/ inside it. The processes share a namespace of
  // their own, so that the host's other processes do not count.
  const tmp = freshLeaseDir()
  fs.chmodSync(tmp, 0o755)
  const env = { SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: leaseNamespace(tmp) }
  const mine = streamer(env, { shm: tmp })
  assert.equal((await mine.ready()).error, null)
  const theirs = streamer(env, { user, shm: tmp })
  const ready = await theirs.ready()
  assert.equal(ready.error, null)
  await sleep(300)
  const [a, b] = [await mine.stop(), await theirs.stop()]
  assert.equal(duplicates(a.ids, b.ids), 0)
  assert.ok(a.ids.length > 100 && b.ids.length > 100)
  const shared = path.join(tmp, 'snowid')
  assert.equal(fs.statSync(shared).mode & 0o7777, 0o1777)
  const uid = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout)
  const owners = fs
    .readdirSync(shared)
    .map(f => fs.statSync(path.join(shared, f)).uid)
    .sort()
  assert.deepEqual(owners, [0, uid].sort(), 'each slot file belongs to the user whose process made it')
  // The other user cannot make this user's process follow a link: its planted link is refused, its target untouched.
  const target = path.join(tmp, 'root-only')
  fs.writeFileSync(target, 'secret', { mode: 0o600 })
  spawnSync('runuser', ['-u', user, '--', 'ln', '-s', target, path.join(shared, 'dc0-worker9.lease')])
  const out = probe({ ...env, SNOWID_WORKER_ID: '9' }, { shm: tmp })
  assert.equal(out.error?.code, 'ERR_SNOWID_LEASE_CORRUPT')
  assert.doesNotMatch(out.error.message, /secret/)
  assert.equal(fs.readFileSync(target, 'utf8'), 'secret')
})
