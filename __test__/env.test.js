'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')

const { once } = require('node:events')

const { ROOT, freshLeaseDir, holdWorker, probeFirstId: probe, runNode, wasiSkip } = require('./helpers.js')

test(
  'the default generator reads every SNOWID_ variable',
  wasiSkip('no host lease: SNOWID_LEASE=on fails there'),
  () => {
    const out = probe({
      SNOWID_DATACENTER_ID: '6',
      SNOWID_WORKER_ID: '21',
      SNOWID_CLOCK_BACK: '2',
      SNOWID_EPOCH: '2022-01-01T00:00:00Z',
      SNOWID_DATACENTER_BITS: '4',
      SNOWID_WORKER_BITS: '6',
      SNOWID_CLOCK_BACK_BITS: '3',
      SNOWID_SEQUENCE_BITS: '10',
      SNOWID_ON_CLOCK_BACK: 'wait',
      SNOWID_MAX_WAIT_MS: '20',
      SNOWID_MAX_LEAD_MS: '5',
      SNOWID_LEASE: 'on',
      SNOWID_WORKER_ID_IF_TAKEN: 'fail',
      // SNOWID_WORKER_ID wins over it, but it is read (and reported) all the same.
      SNOWID_WORKER_ID_FROM: 'statefulset',
      HOSTNAME: 'web-9',
      SNOWID_SINGLE_INSTANCE: 'false',
    })
    assert.equal(out.error, undefined, JSON.stringify(out.error))
    assert.deepEqual(
      { ...out.decoded, id: undefined, timestamp: undefined, sequence: undefined },
      { id: undefined, timestamp: undefined, datacenterId: 6, workerId: 21, clockBack: 2, sequence: undefined },
    )
    const c = out.config
    assert.equal(c.epoch, Date.parse('2022-01-01T00:00:00Z'))
    assert.equal(c.timestampBits, 63 - 4 - 6 - 3 - 10)
    assert.equal(c.onClockBack, 'wait')
    assert.equal(c.maxWaitMs, 20)
    assert.equal(c.maxLeadMs, 5)
    assert.equal(c.lease, true)
    assert.equal(c.workerIdIfTaken, 'fail')
    assert.equal(c.workerIdFrom, 'statefulset')
    assert.equal(c.singleInstance, false)
    assert.match(c.leaseNamespace, /^test-[0-9a-f]{16}$/, 'the namespace the test helpers give')
    assert.ok(
      Object.values(c.sources).every(s => s === 'env'),
      JSON.stringify(c.sources),
    )
    assert.ok(Math.abs(out.decoded.timestamp - Date.now()) < 5000)
  },
)

test("the article's own variable names are read when the SNOWID_ names are absent", () => {
  let out = probe({ datacenterId: '1', workerId: '3' })
  assert.equal(out.decoded.datacenterId, 1)
  assert.equal(out.decoded.workerId, 3)
  assert.equal(out.config.sources.workerId, 'env')
  out = probe({ workerId: '3', SNOWID_WORKER_ID: '4' })
  assert.equal(out.decoded.workerId, 4)
  // Each id reads its own variable (the article read workerId for both).
  out = probe({ workerId: '3' })
  assert.equal(out.decoded.datacenterId, 0)
})

test('every bad environment value fails the first id with a coded error, without aborting', () => {
  const cases = [
    [
      'SNOWID_WORKER_ID',
      '32',
      'RangeError',
      /^SNOWID_WORKER_ID: expected an integer from 0 to 31 \(workerBits is 5\), found "32"$/,
    ],
    ['SNOWID_WORKER_ID', '-1', 'RangeError', /found "-1"$/],
    ['SNOWID_WORKER_ID', '1.5', 'TypeError', /found "1\.5"$/],
    ['SNOWID_WORKER_ID', 'abc', 'TypeError', /found "abc"$/],
    ['SNOWID_WORKER_ID', '', 'TypeError', /found ""$/],
    ['SNOWID_WORKER_ID', ' 3', 'TypeError', /found " 3"$/],
    ['SNOWID_WORKER_ID', '0x10', 'TypeError', /found "0x10"$/],
    ['SNOWID_WORKER_ID', '3abc', 'TypeError', /found "3abc"$/],
    ['workerId', '99', 'RangeError', /^workerId: expected an integer from 0 to 31/],
    ['SNOWID_DATACENTER_ID', '8', 'RangeError', /^SNOWID_DATACENTER_ID: expected an integer from 0 to 7/],
    ['datacenterId', 'one', 'TypeError', /^datacenterId: /],
    ['SNOWID_CLOCK_BACK', '4', 'RangeError', /^SNOWID_CLOCK_BACK: expected an integer from 0 to 3/],
    ['SNOWID_EPOCH', '2999-01-01', 'RangeError', /^SNOWID_EPOCH: .*in the future$/],
    [
      'SNOWID_EPOCH',
      'last tuesday',
      'TypeError',
      /^SNOWID_EPOCH: expected Unix ms \(0, or from 2000-01-01\) or an ISO/,
    ],
    ['SNOWID_EPOCH', '1700000000', 'RangeError', /it looks like seconds; in ms it is 1700000000000 \(2023-11-14T/],
    ['SNOWID_EPOCH', '1700000000000000', 'RangeError', /it looks like microseconds; in ms it is 1700000000000 /],
    [
      'SNOWID_SEQUENCE_BITS',
      '64',
      'RangeError',
      /^SNOWID_SEQUENCE_BITS: expected an integer from 0 to 32, found "64"$/,
    ],
    ['SNOWID_SEQUENCE_BITS', '20', 'RangeError', /^layout: .*\(set by SNOWID_SEQUENCE_BITS\)$/],
    ['SNOWID_DATACENTER_BITS', 'x', 'TypeError', /^SNOWID_DATACENTER_BITS: /],
    ['SNOWID_WORKER_BITS', '-5', 'RangeError', /^SNOWID_WORKER_BITS: /],
    ['SNOWID_CLOCK_BACK_BITS', '1e1', 'TypeError', /^SNOWID_CLOCK_BACK_BITS: /],
    [
      'SNOWID_ON_CLOCK_BACK',
      'ignore',
      'RangeError',
      /^SNOWID_ON_CLOCK_BACK: expected one of 'bits', 'wait' or 'throw', found "ignore"$/,
    ],
    ['SNOWID_MAX_WAIT_MS', '60001', 'RangeError', /^SNOWID_MAX_WAIT_MS: expected an integer from 0 to 60000/],
    [
      'SNOWID_LEASE_NAMESPACE',
      'my tests',
      'RangeError',
      /^SNOWID_LEASE_NAMESPACE: expected 1 to 64 characters of A-Z, a-z, 0-9, '\.', '_' and '-', found "my tests"$/,
    ],
    ['SNOWID_LEASE_NAMESPACE', '', 'RangeError', /^SNOWID_LEASE_NAMESPACE: expected 1 to 64 characters .*, found ""$/],
    ['SNOWID_LEASE_NAMESPACE', 'n'.repeat(65), 'RangeError', /^SNOWID_LEASE_NAMESPACE: expected 1 to 64 characters/],
  ]
  for (const [name, value, className, message] of cases) {
    const out = probe({ [name]: value })
    assert.equal(out.id, undefined, `${name}=${JSON.stringify(value)} must not hand out an id`)
    assert.equal(out.error.code, 'ERR_SNOWID_INVALID_CONFIG', `${name}=${JSON.stringify(value)}`)
    assert.equal(out.error.name, className, `${name}=${JSON.stringify(value)}: ${out.error.message}`)
    assert.match(out.error.message, message)
  }
})

test('an uncaught config error ends the process with exit 1 and the message, never an abort', () => {
  for (const call of ['nextId()', 'nextIdString()', 'config()', 'nextIds(2)']) {
    const r = runNode(`const s = require('.'); const v = s.${call}; console.log('GOT', v)`, { SNOWID_WORKER_ID: '40' })
    assert.equal(r.signal, null)
    assert.equal(r.status, 1, `${call}: ${r.stderr}`)
    assert.doesNotMatch(r.stdout, /GOT/)
    assert.match(r.stderr, /RangeError: SNOWID_WORKER_ID: expected an integer from 0 to 31/)
    assert.match(r.stderr, /code: 'ERR_SNOWID_INVALID_CONFIG'/)
  }
})

test('configure() sets options over env before the first id, and is refused after it', () => {
  const r = runNode(
    `
    const s = require('.')
    const out = {}
    s.configure({ workerId: 7, sequenceBits: 11 })
    out.before = s.config()
    s.decode(1n) // does not start the generator
    // Each configuration's layout, read before the first id: sequenceBits 11, then the default 12, on other threads too.
    out.sequences = [s.decode(4095n).sequence]
    s.configure({ workerId: 9 }) // replaces the earlier options
    out.sequences.push(s.decode(4095n).sequence)
    const { Worker } = require('node:worker_threads')
    const w = new Worker("require('node:worker_threads').parentPort.postMessage(require(process.cwd()).decode(4095n).sequence)", { eval: true })
    w.on('message', (v) => { out.thread = v })
    out.replaced = s.config().workerId
    try { s.configure({ workerId: 99 }) } catch (e) { out.invalid = { name: e.constructor.name, code: e.code } }
    out.afterInvalid = s.config().workerId
    out.id = s.decode(s.nextId())
    try { s.configure({ workerId: 1 }) } catch (e) { out.late = { name: e.constructor.name, code: e.code, message: e.message } }
    out.after = s.config().workerId
    w.on('exit', () => console.log(JSON.stringify(out)))
    `,
    { SNOWID_WORKER_ID: '3', SNOWID_DATACENTER_ID: '2' },
  )
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.equal(out.before.workerId, 7)
  assert.equal(out.before.sources.workerId, 'option')
  assert.equal(out.before.datacenterId, 2)
  assert.equal(out.before.sources.datacenterId, 'env')
  assert.equal(out.before.sequenceBits, 11)
  assert.equal(out.replaced, 9)
  assert.deepEqual(out.sequences, [2047, 4095])
  assert.equal(out.thread, 4095)
  assert.deepEqual(out.invalid, { name: 'RangeError', code: 'ERR_SNOWID_INVALID_CONFIG' })
  assert.equal(out.afterInvalid, 9, 'a refused configure() changes nothing')
  assert.equal(out.id.workerId, 9)
  assert.equal(out.id.datacenterId, 2)
  assert.equal(out.late.code, 'ERR_SNOWID_ALREADY_CONFIGURED')
  assert.equal(out.late.name, 'Error')
  assert.equal(out.after, 9)
})

test(
  'configure() on another thread changes the layout decode() reads here, however warm it is',
  wasiSkip("each thread instantiates the module, so another thread's configure() is that thread's own"),
  () => {
    const r = runNode(`
    const s = require('.')
    const { Worker } = require('node:worker_threads')
    s.configure({ sequenceBits: 11 })
    const out = []
    for (let i = 0; i < 1000; i++) s.decode(4095n + BigInt(i))
    out.push(s.decode(4095n).sequence)
    const w = new Worker("require(process.cwd()).configure({ sequenceBits: 10 })", { eval: true })
    w.on('exit', (code) => {
      out.push(code, s.decode(4095n).sequence, s.decode(4095n).sequence, s.decode(s.nextId()).timestamp > Date.now() - 60000)
      console.log(JSON.stringify(out))
    })
  `)
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), [2047, 0, 1023, 1023, true])
  },
)

test('decode() and config() do not start the default generator', () => {
  const r = runNode(`
    const s = require('.')
    s.decode(12345n); s.config()
    s.configure({ workerId: 5 })
    console.log(s.decode(s.nextId()).workerId)
  `)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), '5')
})

test('new Snowflake() reads the environment for the options it is not given', () => {
  const r = runNode(
    `
    const { Snowflake } = require('.')
    const g = new Snowflake({ datacenterId: 1 })
    const c = g.config()
    console.log(JSON.stringify([g.decode(g.nextId()).workerId, c.sources.workerId, c.sources.datacenterId]))
    `,
    { SNOWID_WORKER_ID: '12', SNOWID_DATACENTER_ID: '4' },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [12, 'env', 'option'])
})

test('an unknown SNOWID_ variable is refused, naming the nearest known one', () => {
  for (const [typo, nearest] of [
    ['SNOWID_DATACENTER', 'SNOWID_DATACENTER_ID'],
    ['SNOWID_WORKERID', 'SNOWID_WORKER_ID'],
    ['SNOWID_LEASEDIR', 'SNOWID_LEASE_DIR'],
  ]) {
    const out = probe({ [typo]: '1' })
    assert.equal(out.id, undefined, `${typo} must not hand out an id`)
    assert.equal(out.error.code, 'ERR_SNOWID_INVALID_CONFIG', typo)
    assert.equal(
      out.error.message,
      `${typo}: expected a variable snowid reads (did you mean ${nearest}?), found an unknown SNOWID_ variable: rename it or unset it`,
    )
  }
  // One set from JS after start-up counts as well.
  const r = runNode(
    `process.env.SNOWID_EPOCHS = '2024-01-01'; try { require('.').decode(1n) } catch (e) { console.log(e.code, e.message) }`,
  )
  assert.match(
    r.stdout,
    /^ERR_SNOWID_INVALID_CONFIG SNOWID_EPOCHS: expected a variable snowid reads \(did you mean SNOWID_EPOCH\?\)/,
  )
})

test('every SNOWID_ variable snowid reads is accepted together', () => {
  const dir = require('node:fs').mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'snowid-known-'))
  try {
    const out = probe({
      SNOWID_LEASE: 'off',
      SNOWID_LEASE_DIR: dir,
      SNOWID_LEASE_NAMESPACE: 'known-vars',
      SNOWID_WORKER_ID_IF_TAKEN: 'next',
      SNOWID_MAX_WAIT_MS: '5',
      SNOWID_MAX_LEAD_MS: '5',
      SNOWID_ON_CLOCK_BACK: 'wait',
      SNOWID_WORKER_ID: '3',
      SNOWID_DATACENTER_ID: '1',
      SNOWID_CLOCK_BACK: '0',
      SNOWID_EPOCH: '2024-01-01',
      SNOWID_DATACENTER_BITS: '5',
      SNOWID_WORKER_BITS: '5',
      SNOWID_CLOCK_BACK_BITS: '0',
      SNOWID_SEQUENCE_BITS: '12',
    })
    assert.equal(out.error, undefined, JSON.stringify(out.error))
    assert.ok(out.id)
  } finally {
    require('node:fs').rmSync(dir, { recursive: true, force: true })
  }
})

test('workerIdIfTaken and workerIdFrom are options too, and config() reports each with its source', () => {
  const report = `const { Snowflake } = require('.')
    const c = new Snowflake(JSON.parse(process.argv[1])).config()
    console.log(JSON.stringify([c.workerIdIfTaken, c.sources.workerIdIfTaken, c.workerIdFrom, c.sources.workerIdFrom, c.workerId, c.sources.workerId]))`
  const run = (options, env) => {
    const r = runNode(report, { SNOWID_LEASE: 'off', ...env }, [JSON.stringify(options)])
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  }
  assert.deepEqual(run({}, {}), ['fail', 'default', null, 'default', 0, 'default'])
  const env = { SNOWID_WORKER_ID_IF_TAKEN: 'next', SNOWID_WORKER_ID_FROM: 'statefulset', HOSTNAME: 'web-5' }
  assert.deepEqual(run({}, env), ['next', 'env', 'statefulset', 'env', 5, 'statefulset'])
  // The options win over the variables, and ask for the same things.
  assert.deepEqual(run({ workerIdIfTaken: 'fail' }, env), ['fail', 'option', 'statefulset', 'env', 5, 'statefulset'])
  assert.deepEqual(run({ workerIdIfTaken: 'next', workerIdFrom: 'statefulset' }, { HOSTNAME: 'web-6' }), [
    'next',
    'option',
    'statefulset',
    'option',
    6,
    'statefulset',
  ])
  // The default generator's configure() takes them as well.
  const r = runNode(
    `const s = require('.'); s.configure({ workerIdFrom: 'statefulset', lease: false }); const c = s.config()
     console.log(JSON.stringify([s.decode(s.nextId()).workerId, c.workerIdFrom, c.sources.workerIdFrom]))`,
    { HOSTNAME: 'orders-3' },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [3, 'statefulset', 'option'])
})

test(
  "ERR_SNOWID_WORKER_ID_IN_USE's advice works when followed, wherever the worker id came from",
  wasiSkip('no flock, so no host lease to find the holder by'),
  async t => {
    const dir = freshLeaseDir()
    await holdWorker(t, dir, 3)
    const take = `const { Snowflake } = require('.')
    try {
      const g = new Snowflake(JSON.parse(process.argv[1]))
      console.log(JSON.stringify({ workerId: g.decode(g.nextId()).workerId }))
    } catch (e) { console.log(JSON.stringify({ error: e.code, message: e.message })) }`
    const run = (options, env) => {
      const r = runNode(take, { SNOWID_LEASE_DIR: dir, ...env }, [JSON.stringify(options)])
      assert.equal(r.status, 0, r.stderr)
      return JSON.parse(r.stdout)
    }
    const sources = [
      ['env', {}, { SNOWID_WORKER_ID: '3' }],
      ['option', { workerId: 3 }, {}],
      ['statefulset', {}, { SNOWID_WORKER_ID_FROM: 'statefulset', HOSTNAME: 'web-3' }],
    ]
    for (const [source, options, env] of sources) {
      const first = run(options, env)
      assert.equal(first.error, 'ERR_SNOWID_WORKER_ID_IN_USE', `${source}: ${JSON.stringify(first)}`)
      // The way out the message names, taken as it says.
      const byVariable = first.message.includes('SNOWID_WORKER_ID_IF_TAKEN=next')
      const byOption = first.message.includes("workerIdIfTaken: 'next'")
      if (!byVariable && !byOption) continue
      const again = run(
        byOption ? { ...options, workerIdIfTaken: 'next' } : options,
        byVariable ? { ...env, SNOWID_WORKER_ID_IF_TAKEN: 'next' } : env,
      )
      assert.equal(again.error, undefined, `${source}: the advice of "${first.message}" gave ${JSON.stringify(again)}`)
      assert.notEqual(again.workerId, 3)
    }
  },
)

test(
  "workerIdIfTaken: 'next' moves a taken workerId on; SNOWID_WORKER_ID_IF_TAKEN covers only a worker id from the environment",
  wasiSkip('no flock, so no host lease to find the holder by'),
  async t => {
    const dir = freshLeaseDir()
    await holdWorker(t, dir, 3)
    const take = `const { Snowflake } = require('.')
    try {
      const g = new Snowflake(JSON.parse(process.argv[1])); const c = g.config()
      console.log(JSON.stringify({ workerId: g.decode(g.nextId()).workerId, source: c.sources.workerId, ifTaken: c.workerIdIfTaken }))
    } catch (e) { console.log(JSON.stringify({ error: e.code })) }`
    const run = (options, env = {}) => {
      const r = runNode(take, { SNOWID_LEASE_DIR: dir, ...env }, [JSON.stringify(options)])
      assert.equal(r.status, 0, r.stderr)
      return JSON.parse(r.stdout)
    }
    assert.deepEqual(run({ workerId: 3 }), { error: 'ERR_SNOWID_WORKER_ID_IN_USE' })
    assert.deepEqual(run({ workerId: 3, workerIdIfTaken: 'fail' }), { error: 'ERR_SNOWID_WORKER_ID_IN_USE' })
    assert.deepEqual(run({ workerId: 3, workerIdIfTaken: 'next' }), { workerId: 4, source: 'lease', ifTaken: 'next' })
    // The option covers a worker id from the environment too.
    assert.deepEqual(run({ workerIdIfTaken: 'next' }, { SNOWID_WORKER_ID: '3' }), {
      workerId: 4,
      source: 'lease',
      ifTaken: 'next',
    })
    assert.deepEqual(run({}, { SNOWID_WORKER_ID: '3', SNOWID_WORKER_ID_IF_TAKEN: 'next' }), {
      workerId: 4,
      source: 'lease',
      ifTaken: 'next',
    })
    // The variable, which snowid/cluster sets in its workers, does not move a workerId option on.
    assert.deepEqual(run({ workerId: 3 }, { SNOWID_WORKER_ID_IF_TAKEN: 'next' }), {
      error: 'ERR_SNOWID_WORKER_ID_IN_USE',
    })
    // The default generator's config() before the first id reports the slot it moved on to, which its ids then carry.
    const r = runNode(
      `const s = require('.'); s.configure({ workerIdIfTaken: 'next' }); const c = s.config()
     console.log(JSON.stringify([c.workerId, c.sources.workerId, s.decode(s.nextId()).workerId]))`,
      { SNOWID_LEASE_DIR: dir, SNOWID_WORKER_ID: '3' },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), [4, 'lease', 4])
  },
)

test('new Snowflake() reads process.env as it is at each construction: assigned, deleted, replaced, in a worker_thread', () => {
  const r = runNode(`
    const { Snowflake } = require('.')
    const { Worker } = require('node:worker_threads')
    const dc = () => { try { return new Snowflake({ lease: false, workerId: 1 }).config().datacenterId } catch (e) { return e.code } }
    const out = [dc()]
    process.env.SNOWID_DATACENTER_ID = '3'
    out.push(dc())
    process.env.SNOWID_DATACENTER_ID = 5
    out.push(dc())
    process.env.SNOWID_DATACENTR_ID = '1'
    out.push(dc())
    delete process.env.SNOWID_DATACENTR_ID
    delete process.env.SNOWID_DATACENTER_ID
    out.push(dc())
    const real = process.env
    process.env = { ...real, SNOWID_DATACENTER_ID: '6' }
    out.push(dc())
    process.env = real
    out.push(dc())
    const w = new Worker("const { Snowflake } = require(" + JSON.stringify(process.cwd()) + "); require('node:worker_threads').parentPort.postMessage(new Snowflake({ lease: false, workerId: 1 }).config().datacenterId)", { eval: true, env: { ...process.env, SNOWID_DATACENTER_ID: '7' } })
    w.once('message', (m) => { out.push(m); console.log(JSON.stringify(out)) })
  `)
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [0, 3, 5, 'ERR_SNOWID_INVALID_CONFIG', 0, 6, 0, 7])
})

test("the environment's prototype chain is never read in a worker_thread", async () => {
  // Loaded here first, as the WASI build asks of a process whose threads make ids.
  require(ROOT)
  // A Snowflake reads its thread's process.env when it is made (the default generator is the process's).
  const inWorker = async env => {
    const worker = new (require('node:worker_threads').Worker)(
      `const { Snowflake } = require(${JSON.stringify(ROOT)})
       Object.prototype.SNOWID_WORKER_ID = '9'
       Object.prototype.SNOWID_DATACENTER_ID = '2'
       const c = new Snowflake().config()
       require('node:worker_threads').parentPort.postMessage([c.workerId, c.sources.workerId, c.datacenterId])`,
      { eval: true, env },
    )
    const [message] = await once(worker, 'message')
    return message
  }
  const env = { ...process.env, SNOWID_LEASE: 'off' }
  assert.deepEqual(await inWorker({ ...env, SNOWID_WORKER_ID: '7' }), [7, 'env', 0])
  assert.deepEqual(await inWorker(env), [0, 'default', 0])
})
