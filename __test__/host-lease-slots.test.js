'use strict'

// The host lease's slots, marks and directories: a slot per process (PM2's included), restarts behind the persisted
// mark, bad slot files and lease directories, and the default directory. Every scenario runs real processes.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')

const {
  ROOT,
  RECORD_SIZE,
  cleanEnv,
  encodeRecord,
  fnv1a,
  freshLeaseDir,
  leaseNamespace,
  probeFirstId: probe,
  runNode,
  wasiSkip,
  askToExit,
  EXIT_ON_STDIN,
} = require('./helpers.js')

// WASI has no flock, so no host lease: the tests of the host lease itself skip there.
const HOST_LEASE = wasiSkip('no flock, so no host lease')
const snowid = require('..')

// --- the lease file format, read here independently of the Rust code (helpers.js writes it) ---

function readMarks(file) {
  const bytes = fs.readFileSync(file)
  let best = null
  for (let off = 0; off + RECORD_SIZE <= bytes.length; off += RECORD_SIZE) {
    const text = bytes
      .subarray(off, off + RECORD_SIZE)
      .toString('latin1')
      .trimEnd()
    // Version 2 (since, host and command around the marks) or version 1.
    const m =
      /^(snowid-lease (?:v1 seq=(\d+) pid=(\d+) |v2 seq=(\d+) pid=(\d+) since=\d+ )marks=([\d:,]*)(?: host=\S* cmd=.*)?) sum=([0-9a-f]{16})$/.exec(
        text,
      )
    if (!m || fnv1a(m[1]) !== m[7] || (m[2] === undefined) !== m[1].includes(' host=')) continue
    const [seq, pid] = m[2] === undefined ? [m[4], m[5]] : [m[2], m[3]]
    if (!best || Number(seq) > best.seq) {
      const marks = m[6] ? m[6].split(',').map(p => p.split(':').map(Number)) : []
      best = { seq: Number(seq), pid: Number(pid), marks }
    }
  }
  return best
}

// --- helpers ---

/** Starts a process that takes an id, prints it, and holds its lease until asked to exit (askToExit). */
function holder(env, code) {
  const child = spawn(process.execPath, ['-e', code], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    let buf = ''
    child.stdout.on('data', d => {
      buf += d
      const nl = buf.indexOf('\n')
      if (nl >= 0) resolve({ child, info: JSON.parse(buf.slice(0, nl)) })
    })
    child.once('error', reject)
    child.once('exit', code => reject(new Error(`holder exited (${code}) before printing`)))
  })
}

const HOLD = `
const s = require('.')
const d = s.decode(s.nextId())
console.log(JSON.stringify({ pid: process.pid, workerId: d.workerId, source: s.config().sources.workerId }))
${EXIT_ON_STDIN}
`

function release(h) {
  return new Promise(resolve => {
    h.child.once('exit', resolve)
    askToExit(h.child)
  })
}

// --- scenarios ---

test(
  'two unconfigured processes get different worker ids; a third given a held slot fails, naming the holder',
  HOST_LEASE,
  async () => {
    const dir = freshLeaseDir()
    const a = await holder({ SNOWID_LEASE_DIR: dir }, HOLD)
    const b = await holder({ SNOWID_LEASE_DIR: dir }, HOLD)
    try {
      assert.equal(a.info.source, 'lease')
      assert.equal(b.info.source, 'lease')
      assert.deepEqual([a.info.workerId, b.info.workerId].sort(), [0, 1])
      const c = probe({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: String(a.info.workerId) })
      assert.equal(c.id, undefined, 'no id under a held slot')
      assert.equal(c.error.code, 'ERR_SNOWID_WORKER_ID_IN_USE')
      assert.match(c.error.message, new RegExp(`held by pid ${a.info.pid} `))
      // PM2's instance number is not read (every app's first instance is 0): the process takes a free slot, its
      // datacenter id chosen by the lease too.
      const d = probe({ SNOWID_LEASE_DIR: dir, NODE_APP_INSTANCE: String(b.info.workerId) })
      assert.equal(d.error, undefined, JSON.stringify(d.error))
      assert.deepEqual([d.decoded.datacenterId, d.decoded.workerId], [0, 2])
      assert.deepEqual([d.config.sources.datacenterId, d.config.sources.workerId], ['lease', 'lease'])
      const e = probe({ SNOWID_LEASE_DIR: dir, NODE_APP_INSTANCE: '5' })
      assert.deepEqual([e.decoded.datacenterId, e.decoded.workerId], [0, 2])
      assert.equal(e.config.sources.workerId, 'lease')
      // With leases off, nothing is checked: the worker id is the configured one (or 0).
      const off = probe({ SNOWID_LEASE_DIR: dir, SNOWID_LEASE: 'off' })
      assert.equal(off.decoded.workerId, 0)
      assert.deepEqual([off.config.sources.datacenterId, off.config.sources.workerId], ['default', 'default'])
    } finally {
      await release(a)
      await release(b)
    }
    // Released: the slots are free again.
    const again = probe({ SNOWID_LEASE_DIR: dir })
    assert.equal(again.decoded.workerId, 0)
  },
)

test('kill -9 a holder: a new process takes its slot and starts past its mark', HOST_LEASE, async t => {
  const dir = freshLeaseDir()
  const code = `
    const s = require('.')
    const tick = () => {
      let id
      for (let i = 0; i < 20000; i++) id = s.nextId()
      console.log(id.toString())
      setImmediate(tick)
    }
    tick()
  `
  const child = spawn(process.execPath, ['-e', code], {
    cwd: ROOT,
    env: cleanEnv({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '7' }),
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  await new Promise((resolve, reject) => {
    child.stdout.on('data', d => {
      out += d
      if (out.split('\n').length > 20) resolve()
    })
    child.once('close', code => reject(new Error(`the writer exited (${code}) after ${out.length} bytes`)))
  })
  child.kill('SIGKILL')
  await new Promise(resolve => child.once('exit', resolve))
  const printed = out
    .trim()
    .split('\n')
    .filter(l => /^\d+$/.test(l))
    .map(BigInt)
  const lastPrinted = printed[printed.length - 1]
  const record = readMarks(path.join(dir, 'dc0-worker7.lease'))
  assert.equal(record.pid, child.pid)
  const mark = Math.max(...record.marks.filter(([c]) => c === 0).map(([, m]) => m))
  assert.ok(snowid.decode(lastPrinted).timestamp <= mark, 'the dead holder issued nothing past its mark')

  const next = probe({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '7' })
  assert.equal(next.error, undefined, JSON.stringify(next.error))
  // The first id does not wait: while the dead holder's mark is ahead of the clock, the new holder starts on
  // clockBack 1, under which the dead holder issued nothing; once it is past, on clockBack 0, past the mark.
  assert.equal(next.stats.waits, 0, 'the first id did not wait for the mark')
  if (next.decoded.clockBack === 0) {
    assert.ok(next.decoded.timestamp > mark, `new holder's first id at ${next.decoded.timestamp}, mark ${mark}`)
  } else {
    assert.equal(next.decoded.clockBack, 1)
    assert.equal(next.stats.clockBackEvents, 1)
  }
  assert.ok(
    next.decoded.timestamp >= snowid.decode(lastPrinted).timestamp,
    "its ids are not older than the dead holder's last",
  )
  t.diagnostic(
    `kill -9: mark was ${mark - snowid.decode(lastPrinted).timestamp} ms past the last id seen; new holder started on clockBack ${next.decoded.clockBack}`,
  )
})

test(
  'restart with the clock behind the mark: no timestamp reused, no wait past maxWaitMs, under each policy',
  HOST_LEASE,
  () => {
    const cases = [
      // A mark 5 s ahead, maxWaitMs 200: waiting cannot help.
      { ahead: 5000, policy: 'bits', expect: 'clockBack' },
      { ahead: 5000, policy: 'wait', expect: 'error' },
      { ahead: 5000, policy: 'throw', expect: 'error' },
      // A mark that waiting would pass (2 s ahead, maxWaitMs 5000): 'bits' starts at once on a clockBack value whose
      // mark is past. 2 s, so that a slow start on a busy machine cannot find the mark already behind the clock.
      { ahead: 2000, policy: 'bits', expect: 'clockBack', maxWait: 5000 },
      // A mark 150 ms ahead, maxWaitMs 1000: the policies that spend no clockBack value wait it out (a start slower
      // than 150 ms finds it passed, and the same id).
      { ahead: 150, policy: 'wait', expect: 'waited', maxWait: 1000 },
      { ahead: 150, policy: 'throw', expect: 'waited', maxWait: 1000 },
    ]
    for (const { ahead, policy, expect, maxWait = 200 } of cases) {
      const dir = freshLeaseDir()
      const mark = Date.now() + ahead
      fs.writeFileSync(path.join(dir, 'dc0-worker3.lease'), encodeRecord({ seq: 1, pid: 1, marks: [[0, mark]] }))
      const out = probe({
        SNOWID_LEASE_DIR: dir,
        SNOWID_WORKER_ID: '3',
        SNOWID_ON_CLOCK_BACK: policy,
        SNOWID_MAX_WAIT_MS: String(maxWait),
      })
      const label = `${policy}, mark ${ahead} ms ahead`
      // No wait past maxWaitMs (the 5 s mark would show), with a margin for a busy machine.
      assert.ok(out.ms < maxWait + 2000, `${label}: took ${out.ms} ms`)
      if (expect === 'error') {
        assert.equal(out.error.code, 'ERR_SNOWID_CLOCK_BACKWARDS', label)
        assert.match(out.error.message, /mark an earlier holder of this slot left for clockBack 0/)
        continue
      }
      assert.equal(out.error, undefined, `${label}: ${JSON.stringify(out.error)}`)
      if (expect === 'clockBack') {
        assert.equal(out.decoded.clockBack, 1, label)
        assert.ok(out.decoded.timestamp <= mark, 'it did not wait')
        assert.equal(out.stats.clockBackEvents, 1)
        assert.equal(out.stats.waits, 0, label)
      } else {
        assert.equal(out.decoded.clockBack, 0, label)
        assert.ok(out.decoded.timestamp > mark, `${label}: ${out.decoded.timestamp} > ${mark}`)
      }
      // The earlier holder's mark is kept for clockBack 0 next to the new holder's own.
      const after = readMarks(path.join(dir, 'dc0-worker3.lease'))
      assert.ok(
        after.marks.some(([c, m]) => c === 0 && m >= mark),
        label,
      )
    }
  },
)

test('a garbage slot file and an unusable lease directory give coded errors, and no id', HOST_LEASE, () => {
  const dir = freshLeaseDir()
  fs.writeFileSync(path.join(dir, 'dc0-worker0.lease'), 'this is not a lease\n')
  // Configured on that slot: refused loudly.
  const out = probe({ SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '0' })
  assert.equal(out.id, undefined)
  assert.equal(out.error.code, 'ERR_SNOWID_LEASE_CORRUPT')
  assert.match(out.error.message, /dc0-worker0\.lease": expected a snowid lease record \(version 2 or 1\)/)
  assert.doesNotMatch(out.error.message, /this is not/, "the file's content is never echoed")
  // The automatic lease moves on to the next slot.
  const auto = probe({ SNOWID_LEASE_DIR: dir })
  assert.equal(auto.error, undefined)
  assert.equal(auto.decoded.workerId, 1)
  assert.equal(fs.readFileSync(path.join(dir, 'dc0-worker0.lease'), 'utf8'), 'this is not a lease\n', 'left as found')

  const notADir = path.join(freshLeaseDir(), 'file')
  fs.writeFileSync(notADir, '')
  for (const leaseDir of [notADir, path.join(notADir, 'sub')]) {
    const out = probe({ SNOWID_LEASE_DIR: leaseDir })
    assert.equal(out.id, undefined)
    assert.equal(out.error.code, 'ERR_SNOWID_LEASE_DIR', leaseDir)
    assert.match(
      out.error.message,
      /^lease directory .*: expected a directory this process can create and lock files in/,
    )
  }
})

// Windows has access rights, not Unix modes: a lease directory and its files have those of the folder they are made
// in, which snowid neither sets nor checks (docs/platforms.md#windows).
const UNIX_MODES = process.platform === 'win32' ? { skip: 'Unix modes; Windows has access rights' } : HOST_LEASE

test(
  'a new lease directory is private to its owner; slot files are readable by all, writable by their owner',
  UNIX_MODES,
  () => {
    const parent = freshLeaseDir()
    const dir = path.join(parent, 'leases')
    const out = probe({ SNOWID_LEASE_DIR: dir })
    assert.equal(out.error, undefined)
    assert.equal(fs.statSync(dir).mode & 0o7777, 0o700)
    assert.equal(fs.statSync(path.join(dir, 'dc0-worker0.lease')).mode & 0o777, 0o644)
  },
)

test(
  'the default directory, /dev/shm/snowid on Linux, is shared by every user of the host: sticky and writable by all',
  HOST_LEASE,
  t => {
    // It is made in a /dev/shm of the test's own (a bind mount in a mount namespace), which needs root.
    const cannot =
      process.platform !== 'linux' ? 'Linux only' : process.getuid() !== 0 ? 'needs root to mount /dev/shm' : ''
    if (cannot) {
      t.diagnostic(`*** SKIPPED: ${cannot} ***`)
      assert.ok(!process.env.CI || process.platform !== 'linux', `${cannot}: CI must run this test`)
      return t.skip(cannot)
    }
    const tmp = freshLeaseDir()
    const shared = probe({ SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: leaseNamespace(tmp) }, { shm: tmp })
    assert.equal(shared.error, undefined)
    assert.deepEqual([shared.config.leaseDir, shared.config.sources.leaseDir], ['/dev/shm/snowid', 'default'])
    assert.equal(fs.statSync(path.join(tmp, 'snowid')).mode & 0o7777, 0o1777)
  },
)

test(
  'the default directory on Windows, %ProgramData%\\snowid, is one for the machine, whatever TEMP a process has',
  process.platform === 'win32' ? HOST_LEASE : { skip: 'Windows only' },
  () => {
    // A namespace of the test's own: the machine's other processes keep their slots, and this one takes its own.
    const namespace = leaseNamespace(freshLeaseDir())
    const made = []
    try {
      for (const temp of [freshLeaseDir(), freshLeaseDir()]) {
        const out = probe({ SNOWID_LEASE_DIR: undefined, SNOWID_LEASE_NAMESPACE: namespace, TEMP: temp, TMP: temp })
        assert.equal(out.error, undefined, JSON.stringify(out.error))
        const dir = path.join(process.env.ProgramData, 'snowid')
        assert.deepEqual([out.config.leaseDir, out.config.sources.leaseDir], [dir, 'default'])
        made.push(path.join(dir, `dc${out.decoded.datacenterId}-worker${out.decoded.workerId}.lease`))
      }
      assert.ok(made.every(f => fs.existsSync(f)))
    } finally {
      for (const file of made) fs.rmSync(file, { force: true })
    }
  },
)

test('stats() reports the lead, clock-back events, waits and mark writes', HOST_LEASE, () => {
  const dir = freshLeaseDir()
  const out = runNode(
    `
    const { Snowflake, stats } = require('.')
    const before = stats()
    const g = new Snowflake({ workerId: 2, maxLeadMs: 1000 })
    for (let i = 0; i < 200000; i++) g.nextId()
    console.log(JSON.stringify({ before, after: g.stats(), config: g.config() }))
    `,
    { SNOWID_LEASE_DIR: dir },
  )
  assert.equal(out.status, 0, out.stderr)
  const { before, after, config } = JSON.parse(out.stdout)
  assert.deepEqual(before, {
    leadMs: 0,
    clockBack: 0,
    clockBackEvents: 0,
    clockBackRefusals: 0,
    waits: 0,
    sequenceWaits: 0,
    markWaits: 0,
    clockWaits: 0,
    sequenceWaitMs: 0,
    markWaitMs: 0,
    clockWaitMs: 0,
    markWrites: 0,
    hostLease: null,
  })
  assert.equal(config.maxLeadMs, 1000)
  assert.ok(after.markWrites >= 1)
  assert.ok(after.leadMs >= 0 && after.leadMs <= 1000, `lead ${after.leadMs}`)
  assert.equal(after.clockBackEvents, 0)
  assert.deepEqual(after.hostLease, { datacenterId: 0, workerId: 2, requestedWorkerId: null, lost: null })
  const marks = readMarks(path.join(dir, 'dc0-worker2.lease'))
  assert.ok(marks.marks[0][1] >= Date.now() - 1000)
})
