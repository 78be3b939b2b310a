'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')

const fs = require('node:fs')
const path = require('node:path')

const {
  ROOT,
  cleanEnv,
  encodeRecord,
  firstOutput,
  freshLeaseDir,
  leaseHostName,
  runCli,
  spawnChild,
  endChild,
  wasiSkip,
  EXIT_ON_STDIN,
} = require('./helpers.js')

test('snowid [count] prints that many increasing ids', () => {
  let r = runCli([])
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /^\d+\n$/)
  r = runCli(['3'])
  const ids = r.stdout.trim().split('\n').map(BigInt)
  assert.equal(ids.length, 3)
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2])
  r = runCli(['5', '--json'])
  const json = JSON.parse(r.stdout)
  assert.equal(json.length, 5)
  assert.ok(json.every(s => typeof s === 'string' && /^\d+$/.test(s)))
})

test('snowid uses the SNOWID_ environment', () => {
  const r = runCli(['decode', ...runCli(['2'], { SNOWID_WORKER_ID: '13' }).stdout.trim().split('\n')])
  for (const line of r.stdout.trim().split('\n')) assert.equal(JSON.parse(line).workerId, 13)
})

test('snowid decode prints JSON per id, or one array with --json', () => {
  let r = runCli(['decode', '0', '9223372036854775807'])
  assert.equal(r.status, 0, r.stderr)
  const lines = r.stdout
    .trim()
    .split('\n')
    .map(l => JSON.parse(l))
  assert.deepEqual(lines[0], {
    id: '0',
    timestamp: 1580486400000,
    datacenterId: 0,
    workerId: 0,
    clockBack: 0,
    sequence: 0,
  })
  assert.equal(lines[1].sequence, 4095)
  r = runCli(['decode', '--json', '4194304'])
  assert.deepEqual(JSON.parse(r.stdout), [
    { id: '4194304', timestamp: 1580486400001, datacenterId: 0, workerId: 0, clockBack: 0, sequence: 0 },
  ])
})

test('a bad id exits 1 with the error on stderr and nothing on stdout', () => {
  for (const bad of ['12x', '-5', '9223372036854775808', '']) {
    const r = runCli(['decode', '1', bad])
    assert.equal(r.status, 1, bad)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^snowid: id: expected .*\(ERR_SNOWID_INVALID_ID\)\n$/)
  }
})

test('snowid config prints the effective configuration and sources', () => {
  let r = runCli(['config'], { SNOWID_WORKER_ID: '4' })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /^workerId +4 +\(env\)$/m)
  assert.match(r.stdout, /^datacenterId +0 +\(default\)$/m)
  assert.match(r.stdout, /^expiresAt +3779509655551$/m)
  r = runCli(['config', '--json'], { SNOWID_WORKER_ID: '4' })
  const c = JSON.parse(r.stdout)
  assert.equal(c.workerId, 4)
  assert.equal(c.sources.workerId, 'env')
})

test('bad configuration exits 1 with a coded message; decode needs only the layout, so it still works', () => {
  const decoded = runCli(['decode', '1'], { SNOWID_WORKER_ID: '32' })
  assert.equal(decoded.status, 0, decoded.stderr)
  for (const args of [['1'], ['config']]) {
    const r = runCli(args, { SNOWID_WORKER_ID: '32' })
    assert.equal(r.status, 1, args.join(' '))
    assert.equal(r.stdout, '')
    assert.match(
      r.stderr,
      /^snowid: SNOWID_WORKER_ID: expected an integer from 0 to 31 \(workerBits is 5\), found "32" \(ERR_SNOWID_INVALID_CONFIG\)\n$/,
    )
  }
})

test('usage errors exit 2 with one line that points to --help; --help and help exit 0', () => {
  for (const args of [
    ['0'],
    ['-1'],
    ['1.5'],
    ['abc'],
    ['1000001'],
    ['--nope'],
    ['decode'],
    ['config', 'x'],
    ['2', '3'],
    ['sql'],
  ]) {
    const r = runCli(args)
    assert.equal(r.status, 2, args.join(' '))
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^snowid: [^\n]+ \(snowid --help shows the usage\)\n$/, args.join(' '))
  }
  for (const args of [['--help'], ['-h'], ['help'], ['decode', '--help']]) {
    const r = runCli(args)
    assert.equal(r.status, 0, args.join(' '))
    assert.match(r.stdout, /^Usage:\n {2}snowid \[count\]/)
    assert.equal(r.stderr, '')
  }
})

test('snowid --version prints the package version', () => {
  const r = runCli(['--version'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, `${require('../package.json').version}\n`)
})

test('snowid decode with no ids reads them from stdin', () => {
  const made = runCli(['3'])
  assert.equal(made.status, 0, made.stderr)
  const ids = made.stdout.trim().split('\n')
  // What `snowid 3 | snowid decode` does, with other white space too.
  let r = runCli(['decode'], {}, { input: made.stdout })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(
    r.stdout
      .trim()
      .split('\n')
      .map(line => JSON.parse(line).id),
    ids,
  )
  r = runCli(['decode', '--json'], {}, { input: `  ${ids[0]}\t${ids[1]}\r\n\n${ids[2]}` })
  assert.deepEqual(
    JSON.parse(r.stdout).map(d => d.id),
    ids,
  )
  r = runCli(['decode', '--encoding', 'hex'], {}, { input: '7fffffffffffffff\n' })
  assert.equal(JSON.parse(r.stdout).id, '9223372036854775807')
  // A bad id among them prints nothing but the error, as with arguments.
  r = runCli(['decode'], {}, { input: `${ids[0]}\n12x\n` })
  assert.equal(r.status, 1)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /ERR_SNOWID_INVALID_ID/)
  // Nothing on stdin is a usage error, as ids given nowhere.
  r = runCli(['decode'], {}, { input: ' \n' })
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^snowid: decode: expected ids as arguments or on stdin, found neither/)
})

test('snowid --encoding prints fixed-width text, and decode --encoding reads it back', () => {
  const widths = { base62: 11, base36: 13, hex: 16 }
  for (const [encoding, width] of Object.entries(widths)) {
    let r = runCli(['4', '--encoding', encoding])
    assert.equal(r.status, 0, r.stderr)
    const texts = r.stdout.trim().split('\n')
    assert.equal(texts.length, 4)
    assert.ok(
      texts.every(t => t.length === width),
      texts.join(' '),
    )
    assert.deepEqual([...texts].sort(), texts, 'texts come out in id order')
    r = runCli(['decode', `--encoding=${encoding}`, '--json', ...texts])
    assert.equal(r.status, 0, r.stderr)
    const decoded = JSON.parse(r.stdout)
    assert.equal(decoded.length, 4)
    const ids = decoded.map(d => BigInt(d.id))
    assert.ok(ids.every((id, i) => i === 0 || ids[i - 1] < id))
    assert.ok(decoded.every(d => Math.abs(d.timestamp - Date.now()) < 60_000))
  }
  const r = runCli(['decode', '--encoding', 'base62', 'AzL8n0Y58m7'])
  assert.equal(JSON.parse(r.stdout).id, '9223372036854775807')
})

test('a bad --encoding is a usage error, and text that is not an id exits 1', () => {
  for (const args of [
    ['--encoding'],
    ['--encoding', 'base64'],
    ['--encoding=HEX', '2'],
    ['config', '--encoding', 'hex'],
  ]) {
    const r = runCli(args)
    assert.equal(r.status, 2, args.join(' '))
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /--encoding/)
  }
  for (const bad of ['AzL8n0Y58m8', '1234', 'AzL8n0Y58m7x']) {
    const r = runCli(['decode', '--encoding', 'base62', bad])
    assert.equal(r.status, 1, bad)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /ERR_SNOWID_INVALID_ID/)
  }
})

test('a reader that goes away ends the CLI quietly; a full disk is one coded line', t => {
  const { spawnSync } = require('node:child_process')
  const fs = require('node:fs')
  const { cleanEnv, withoutUnchosenWarning } = require('./helpers.js')
  const bin = require('node:path').join(__dirname, '..', 'bin', 'snowid.js')
  const env = cleanEnv({ SNOWID_LEASE: 'off' })
  t.after(() => fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true }))
  // `head -1` closes the pipe after one line, while the CLI is still writing a million ids.
  const piped = spawnSync('sh', ['-c', `"${process.execPath}" "${bin}" 1000000 | head -1; echo "status $?"`], {
    env,
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.match(piped.stdout, /^\d+\nstatus 0\n$/)
  assert.equal(withoutUnchosenWarning(piped.stderr), '')
  if (fs.existsSync('/dev/full')) {
    const full = spawnSync('sh', ['-c', `"${process.execPath}" "${bin}" 5 > /dev/full`], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(full.status, 1)
    assert.equal(
      withoutUnchosenWarning(full.stderr),
      'snowid: cannot write the output: ENOSPC: no space left on device, write (ENOSPC)\n',
    )
  }
})

test('usage errors show a long argument cut to 40 characters with its length', () => {
  const long = 'x'.repeat(100_000)
  for (const args of [[long], ['1', long], ['config', long], ['sql', long], [`--${long}`], ['--encoding', long]]) {
    const r = runCli(args)
    assert.equal(r.status, 2)
    const first = r.stderr.split('\n')[0]
    assert.ok(first.length < 200, `${first.slice(0, 80)}: ${first.length} characters`)
    assert.match(first, /\.\.\. \(100\d{3} characters\)/)
  }
})

test('snowid sql postgres --functions needs only the layout and epoch', () => {
  const layoutOnly = { SNOWID_EPOCH: '2024-01-01', SNOWID_SEQUENCE_BITS: '10' }
  const good = runCli(['sql', 'postgres', '--functions'], layoutOnly)
  const bad = runCli(['sql', 'postgres', '--functions'], {
    ...layoutOnly,
    SNOWID_WORKER_ID: '99',
    SNOWID_MAX_WAIT_MS: 'x',
  })
  assert.equal(bad.status, 0, bad.stderr)
  assert.equal(bad.stdout, good.stdout)
  assert.match(good.stdout, /epoch 1704067200000 \(2024-01-01T00:00:00\.000Z\), timestamp 43 bits/)
  assert.match(good.stdout, /datacenterId 3 bits, workerId 5 bits, clockBack 2 bits, sequence 10 bits/)
  const { postgresFunctions } = require('../lib/sql.js')
  const { SnowflakeLayout } = require('..')
  const spec = new SnowflakeLayout({ epoch: '2024-01-01', sequenceBits: 10 }).layout()
  assert.equal(good.stdout.trimEnd(), postgresFunctions(spec).trimEnd())
})

test(
  'snowid leases lists the host slots: live holders and those gone, as a table and as JSON',
  wasiSkip('no host lease'),
  async () => {
    const env = cleanEnv({ SNOWID_DATACENTER_ID: '1', SNOWID_SINGLE_INSTANCE: 'true' })
    const dir = env.SNOWID_LEASE_DIR
    const code = `require('.').nextId(); console.log('ready'); ${EXIT_ON_STDIN}`
    const run = spawnChild(process.execPath, ['-e', code], { cwd: ROOT, env })
    try {
      fs.writeFileSync(
        path.join(dir, 'dc0-worker4.lease'),
        encodeRecord({
          seq: 1,
          pid: 4242,
          marks: [],
          since: Date.UTC(2026, 0, 2),
          host: 'web-1',
          command: 'node a\nb.js',
        }),
      )
      fs.writeFileSync(path.join(dir, 'dc0-worker5.lease'), encodeRecord({ version: 1, pid: 4343, marks: [] }))
      await firstOutput(run.child)
      // The environment's datacenter and worker ids do not narrow the list; --lease-dir names the directory.
      const narrow = { SNOWID_LEASE_DIR: undefined, SNOWID_DATACENTER_ID: '3', SNOWID_WORKER_ID: '9' }
      let r = runCli(['leases', '--json', '--lease-dir', dir], narrow)
      assert.equal(r.status, 0, r.stderr)
      const slots = JSON.parse(r.stdout)
      const mine = slots.find(s => s.pid === run.child.pid)
      assert.deepEqual(
        slots.map(s => [s.datacenterId, s.workerId, s.pid, s.live]),
        [
          [0, 4, 4242, false],
          [0, 5, 4343, false],
          [1, 0, run.child.pid, true],
        ],
      )
      assert.equal(mine.host, leaseHostName())
      assert.equal(mine.command, `${process.execPath} -e ${code}`)
      r = runCli(['leases'], { SNOWID_LEASE_DIR: dir })
      assert.equal(r.status, 0, r.stderr)
      const since = new Date(mine.since).toISOString()
      const lines = r.stdout.trimEnd().split('\n')
      assert.deepEqual(
        lines.map(l => l.split(/ {2,}/)),
        [
          ['SLOT', 'PID', 'STATE', 'SINCE', 'COMMAND'],
          ['0/4', '4242', 'gone', '2026-01-02T00:00:00.000Z', 'node a\\x0ab.js'],
          ['0/5', '4343', 'gone', '-', '-'],
          ['1/0', String(run.child.pid), 'live', since, `${process.execPath} -e ${code}`],
        ],
      )
      assert.ok(await endChild(run), 'the holder ends when asked')
      r = runCli(['leases', '--json'], { SNOWID_LEASE_DIR: dir })
      const gone = JSON.parse(r.stdout).find(s => s.pid === run.child.pid)
      assert.deepEqual(gone, { ...mine, live: false }, 'a holder that has exited is shown as gone')
    } finally {
      await endChild(run)
      fs.rmSync(dir, { recursive: true, force: true })
    }
  },
)

test('snowid leases: an empty directory, usage errors, and a bad lease directory', wasiSkip('no host lease'), () => {
  const dir = freshLeaseDir()
  try {
    // Listing makes no ids: neither the identity rule of a Kubernetes pod nor SNOWID_LEASE=off stops it.
    let r = runCli(['leases', `--lease-dir=${dir}`], { KUBERNETES_SERVICE_HOST: '10.96.0.1', SNOWID_LEASE: 'off' })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, 'no slot of this host has a lease file\n')
    assert.equal(runCli(['leases', '--json', '--lease-dir', dir]).stdout, '[]\n')
    for (const [args, message] of [
      [['leases', 'extra'], /leases: expected no arguments, found "extra"/],
      [['leases', '--lease-dir'], /--lease-dir: expected a directory, found nothing/],
      [['leases', '--lease-dir='], /--lease-dir: expected a directory, found an empty path/],
      [['3', '--lease-dir', dir], /--lease-dir applies to snowid leases only/],
      [['leases', '--encoding', 'hex'], /leases: --encoding applies to ids only/],
    ]) {
      r = runCli(args)
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
      assert.equal(r.stdout, '')
    }
    const file = path.join(dir, 'file')
    fs.writeFileSync(file, '')
    r = runCli(['leases', '--lease-dir', file])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /\(ERR_SNOWID_LEASE_DIR\)\n$/)
    assert.equal(r.stdout, '')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
