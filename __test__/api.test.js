'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')

// This process's leases go to a directory of its own; the default generator reads it on first use.
require('./helpers.js').isolateLeases()

const snowid = require('..')
const { Snowflake } = snowid
const { ArticleSnowflake, articleFormula } = require('../benchmark/article.js')

const MAX_ID = 2n ** 63n - 1n

const { countDuplicates, expectError, wasiSkip } = require('./helpers.js')

test('nextId returns a positive 63-bit bigint and nextIdString its decimal form', () => {
  const a = snowid.nextId()
  const b = snowid.nextIdString()
  assert.equal(typeof a, 'bigint')
  assert.equal(typeof b, 'string')
  assert.match(b, /^[1-9]\d{0,18}$/)
  assert.ok(a > 0n && a <= MAX_ID)
  assert.ok(BigInt(b) > a, 'the string id comes after the bigint one')
  assert.equal(BigInt.asIntN(64, a), a, 'fits a signed 64-bit column')
})

test('decode returns a plain, JSON-safe object with the documented keys', () => {
  const before = Date.now()
  const id = snowid.nextId()
  const after = Date.now()
  const d = snowid.decode(id)
  assert.deepEqual(Object.keys(d), ['id', 'timestamp', 'datacenterId', 'workerId', 'clockBack', 'sequence'])
  assert.equal(d.id, id.toString())
  assert.ok(d.timestamp >= before && d.timestamp <= after, `${d.timestamp} within [${before}, ${after}]`)
  for (const key of ['timestamp', 'datacenterId', 'workerId', 'clockBack', 'sequence']) {
    assert.equal(typeof d[key], 'number', key)
  }
  assert.equal(Object.getPrototypeOf(d), Object.prototype)
  assert.deepEqual(JSON.parse(JSON.stringify(d)), d)
  assert.deepEqual(snowid.decode(id.toString()), d, 'a decimal string decodes the same')
})

test('decode reads every field at its extremes', () => {
  assert.deepEqual(snowid.decode(0n), {
    id: '0',
    timestamp: 1580486400000,
    datacenterId: 0,
    workerId: 0,
    clockBack: 0,
    sequence: 0,
  })
  assert.deepEqual(snowid.decode(MAX_ID), {
    id: MAX_ID.toString(),
    timestamp: 1580486400000 + 2 ** 41 - 1,
    datacenterId: 7,
    workerId: 31,
    clockBack: 3,
    sequence: 4095,
  })
  assert.equal(snowid.decode(Number.MAX_SAFE_INTEGER).id, String(Number.MAX_SAFE_INTEGER))
  // A decimal id has one form: "0007" is refused, not read as 7.
  assert.throws(() => snowid.decode('0007'), { name: 'TypeError', code: 'ERR_SNOWID_INVALID_ID', message: /"0007"/ })
})

// What an id of `widths` ({ datacenterBits, workerBits, clockBackBits, sequenceBits }) and `epoch` decodes to, in
// BigInt arithmetic.
function oracle(id, { epoch, datacenterBits, workerBits, clockBackBits, sequenceBits }) {
  let rest = id
  const take = bits => {
    const v = Number(rest & ((1n << BigInt(bits)) - 1n))
    rest >>= BigInt(bits)
    return v
  }
  const sequence = take(sequenceBits)
  const clockBack = take(clockBackBits)
  const workerId = take(workerBits)
  const datacenterId = take(datacenterBits)
  return { id: id.toString(), timestamp: epoch + Number(rest), datacenterId, workerId, clockBack, sequence }
}

// Ids at every magnitude and at the edges of the decimal and 32-bit splits, then random ones of random width.
function sampleIds(random, count) {
  const ids = [
    0n,
    1n,
    MAX_ID,
    MAX_ID - 1n,
    10n ** 9n - 1n,
    10n ** 9n,
    2n ** 31n,
    2n ** 32n - 1n,
    2n ** 32n,
    2n ** 32n + 1n,
  ]
  ids.push(
    10n ** 18n - 1n,
    10n ** 18n,
    10n ** 18n + 1n,
    10n ** 17n,
    2n ** 53n + 1n,
    999_999_999_999_999_999n,
    4_294_967_296_000_000_000n,
  )
  for (let i = 0; i < count; i++) {
    const id = (BigInt(Math.floor(random() * 2 ** 32)) << 31n) ^ BigInt(Math.floor(random() * 2 ** 32))
    ids.push(id >> BigInt(Math.floor(random() * 63)))
  }
  return ids
}

function seeded(seed) {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 2 ** 32
  }
}

test('decode reads a bigint exactly as the BigInt arithmetic does, for every layout, on every call', () => {
  const seed = Date.now() % 1_000_000
  const random = seeded(seed)
  const ids = sampleIds(random, 300)
  // The default generator's, a Snowflake's, and then reading layouts with fields from 0 to 32 bits wide, at any
  // position, and so across the 32-bit boundary too.
  const cases = [
    [snowid, { epoch: 1580486400000, datacenterBits: 3, workerBits: 5, clockBackBits: 2, sequenceBits: 12 }],
    [
      new Snowflake({ workerId: 3, lease: false, sequenceBits: 10, workerBits: 7 }),
      { epoch: 1580486400000, datacenterBits: 3, workerBits: 7, clockBackBits: 2, sequenceBits: 10 },
    ],
  ]
  for (const widths of [
    [0, 0, 0, 32],
    [0, 0, 30, 32],
    [32, 0, 0, 0],
    [0, 30, 32, 0],
    [32, 30, 0, 0],
    [10, 10, 10, 10],
    [1, 31, 1, 29],
    [0, 0, 0, 11],
  ]) {
    const [datacenterBits, workerBits, clockBackBits, sequenceBits] = widths
    const options = { epoch: 1288834974657, datacenterBits, workerBits, clockBackBits, sequenceBits }
    cases.push([new snowid.SnowflakeLayout(options), options])
  }
  while (cases.length < 160) {
    const widths = Array.from({ length: 4 }, () => Math.floor(random() * 33))
    const sum = widths.reduce((a, b) => a + b)
    if (sum < 11 || sum > 62) continue
    const [datacenterBits, workerBits, clockBackBits, sequenceBits] = widths
    // An epoch given as a number: 0, or from 2000-01-01 (an earlier one is refused as likely seconds).
    const epoch = random() < 0.1 ? 0 : 946_684_800_000 + Math.floor(random() * (1.7e12 - 946_684_800_000))
    const options = { epoch, datacenterBits, workerBits, clockBackBits, sequenceBits }
    cases.push([new snowid.SnowflakeLayout(options), options])
  }
  for (const [reader, layout] of cases) {
    for (const id of ids) {
      const expected = oracle(id, layout)
      // Twice each, and as a string: the first call of a reader, and any string, goes to the binding.
      assert.deepEqual(reader.decode(id), expected, `seed ${seed}, ${JSON.stringify(layout)}, id ${id}`)
      assert.deepEqual(reader.decode(id), expected, `seed ${seed}, ${JSON.stringify(layout)}, id ${id}, again`)
      assert.deepEqual(reader.decode(String(id)), expected, `seed ${seed}, ${JSON.stringify(layout)}, id "${id}"`)
    }
  }
})

test('a layout refuses a field wider than 32 bits, which could not be read whole', () => {
  expectError(
    () => new snowid.SnowflakeLayout({ datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 33 }),
    {
      name: 'RangeError',
      code: 'ERR_SNOWID_INVALID_CONFIG',
      message: /^options\.sequenceBits: expected an integer from 0 to 32, found 33$/,
    },
  )
})

test('decode refuses what is not an id', () => {
  const cases = [
    [-1n, 'RangeError', /negative bigint/],
    [MAX_ID + 1n, 'RangeError', /above 2\^63 - 1/],
    [2n ** 64n, 'RangeError', /above 2\^63 - 1/],
    [-1, 'RangeError', /negative/],
    [1.5, 'RangeError', /not an integer/],
    [NaN, 'RangeError', /NaN/],
    [2 ** 53, 'RangeError', /MAX_SAFE_INTEGER/],
    ['', 'TypeError', /found the string ""/],
    [' 1', 'TypeError', /found the string " 1"/],
    ['1.0', 'TypeError', /"1\.0"/],
    ['0x10', 'TypeError', /"0x10"/],
    ['-5', 'RangeError', /negative/],
    ['9223372036854775808', 'RangeError', /above 2\^63 - 1/],
    [undefined, 'TypeError', /found undefined/],
    [null, 'TypeError', /found null/],
    [{}, 'TypeError', /found an object/],
    [true, 'TypeError', /found the boolean true/],
  ]
  for (const [input, name, message] of cases) {
    expectError(() => snowid.decode(input), { name, code: 'ERR_SNOWID_INVALID_ID', message })
    expectError(() => new Snowflake().decode(input), { name, code: 'ERR_SNOWID_INVALID_ID', message })
  }
  expectError(() => snowid.decode('abc'), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_ID',
    message:
      /^id: expected a bigint, a decimal string or a safe integer from 0 to 9223372036854775807, found the string "abc"$/,
  })
})

test('1M ids from nextId are unique and strictly increasing', t => {
  const n = 1_000_000
  const ids = new BigInt64Array(n)
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) ids[i] = snowid.nextId()
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  let increasing = 0
  for (let i = 1; i < n; i++) if (ids[i] > ids[i - 1]) increasing++
  assert.equal(increasing, n - 1)
  assert.equal(countDuplicates([ids]).dups, 0)
  t.diagnostic(`1M nextId(): ${ms.toFixed(0)} ms`)
})

test('1M ids from nextIdString are unique and strictly increasing', () => {
  const n = 1_000_000
  const ids = new Array(n)
  for (let i = 0; i < n; i++) ids[i] = snowid.nextIdString()
  let prev = 0n
  for (const s of ids) {
    const v = BigInt(s)
    assert.ok(v > prev)
    prev = v
  }
  assert.equal(countDuplicates([ids]).dups, 0)
})

test('ids made by the JS article decode to the same fields', () => {
  const article = new ArticleSnowflake({ datacenterId: 5, workerId: 17 })
  const before = Date.now()
  const ids = Array.from({ length: 5000 }, () => article.nextId())
  const after = Date.now()
  let lastTs = 0
  for (const id of ids) {
    const d = snowid.decode(id)
    assert.equal(d.datacenterId, 5)
    assert.equal(d.workerId, 17)
    assert.equal(d.clockBack, 0)
    assert.ok(d.timestamp >= before && d.timestamp <= after)
    assert.ok(d.timestamp >= lastTs)
    lastTs = d.timestamp
  }
  const fields = [
    { timestamp: 1580486400000, datacenterId: 0, workerId: 0, clockBack: 0, sequence: 0 },
    { timestamp: 1763779200123, datacenterId: 1, workerId: 3, clockBack: 0, sequence: 0 },
    { timestamp: 1795000000000, datacenterId: 7, workerId: 31, clockBack: 3, sequence: 4095 },
    { timestamp: 1700000000001, datacenterId: 4, workerId: 16, clockBack: 2, sequence: 2048 },
  ]
  for (const f of fields) {
    const id = articleFormula(f)
    assert.deepEqual(snowid.decode(id), { id: id.toString(), ...f })
  }
  // And snowid's own ids carry their fields where the article put them.
  const gen = new Snowflake({ datacenterId: 5, workerId: 17 })
  const d = gen.decode(gen.nextId())
  assert.equal(articleFormula(d), BigInt(d.id))
})

test(
  'config reports the effective values, their sources, maxIdsPerMs and expiresAt',
  wasiSkip('no host lease, so the suite runs with SNOWID_LEASE=off'),
  () => {
    const c = snowid.config()
    assert.deepEqual(
      { ...c, sources: undefined },
      {
        datacenterId: 0,
        workerId: 0,
        clockBack: 0,
        epoch: 1580486400000,
        datacenterBits: 3,
        workerBits: 5,
        clockBackBits: 2,
        sequenceBits: 12,
        timestampBits: 41,
        onClockBack: 'bits',
        maxWaitMs: 1000,
        maxLeadMs: 0,
        lease: true,
        leaseDir: process.env.SNOWID_LEASE_DIR,
        leaseNamespace: process.env.SNOWID_LEASE_NAMESPACE,
        workerIdIfTaken: 'fail',
        workerIdFrom: null,
        singleInstance: false,
        // helpers.js leaves out the variables of orchestrators; a container is known by its marker file.
        environment: ['/.dockerenv', '/run/.containerenv'].some(f => require('node:fs').existsSync(f))
          ? 'container'
          : null,
        maxIdsPerMs: 4096,
        expiresAt: 1580486400000 + 2 ** 41 - 1,
        sources: undefined,
      },
    )
    const { datacenterId, workerId, leaseDir, leaseNamespace, ...rest } = c.sources
    assert.equal(workerId, 'lease', 'nothing configured: the first free slot of this fresh lease directory')
    assert.equal(datacenterId, 'lease', 'and with no datacenter id configured either, the lease chose it too')
    assert.equal(leaseDir, 'env')
    assert.equal(leaseNamespace, 'env')
    assert.ok(
      Object.values(rest).every(s => s === 'default'),
      JSON.stringify(rest),
    )
    assert.equal(Object.keys(c.sources).length, 17)
  },
)

test('a Snowflake takes its options, reports them, and stamps its ids with them', () => {
  const gen = new Snowflake({
    datacenterId: 2,
    workerId: 9,
    epoch: '2024-01-01',
    workerBits: 6,
    sequenceBits: 10,
    onClockBack: 'wait',
    maxWaitMs: 50,
  })
  const c = gen.config()
  assert.equal(c.epoch, Date.parse('2024-01-01'))
  assert.equal(c.timestampBits, 63 - 3 - 6 - 2 - 10)
  assert.equal(c.maxIdsPerMs, 1024)
  assert.equal(c.onClockBack, 'wait')
  assert.equal(c.sources.workerId, 'option')
  assert.equal(c.sources.clockBackBits, 'default')
  const id = gen.nextId()
  const d = gen.decode(id)
  assert.equal(d.datacenterId, 2)
  assert.equal(d.workerId, 9)
  assert.ok(Math.abs(d.timestamp - Date.now()) < 1000)
  assert.equal(BigInt(gen.nextIdString()) > id, true)
  // The same fields as the article's layout would read them differently: decode is per layout.
  assert.notDeepEqual(snowid.decode(id), d)
  assert.equal(
    // (With no host lease: this process's automatic slot makes ids with the default epoch, and a slot has one epoch.)
    new Snowflake({ epoch: new Date('2021-06-01T00:00:00Z'), lease: false }).config().epoch,
    Date.parse('2021-06-01T00:00:00Z'),
  )
})

test('generators with the same identity share one sequence', () => {
  const ids = new BigInt64Array(20_000)
  for (let i = 0; i < ids.length; i++) {
    // A new generator per call, as a careless request handler would make.
    ids[i] = new Snowflake({ datacenterId: 3, workerId: 4 }).nextId()
  }
  assert.equal(countDuplicates([ids]).dups, 0)
  const a = new Snowflake({ datacenterId: 3, workerId: 4 })
  const b = new Snowflake({ datacenterId: 3, workerId: 4 })
  const seq = [a.nextId(), b.nextId(), a.nextId(), b.nextId()]
  for (let i = 1; i < seq.length; i++) assert.ok(seq[i] > seq[i - 1])
  // Checked when the generator starts, with its first id.
  expectError(() => new Snowflake({ datacenterId: 3, workerId: 4, clockBack: 1 }).nextId(), {
    name: 'RangeError',
    code: 'ERR_SNOWID_INVALID_CONFIG',
    message: /^clockBack: expected 0, the clockBack of the generator already running/,
  })
})

test('Snowflakes of one resolved configuration share a native core; another configuration, or a changed variable, gets its own', () => {
  const a = new Snowflake({ datacenterId: 5, workerId: 6 })
  const b = new Snowflake({ workerId: 6, datacenterId: 5 })
  // One core: the methods made for it are the same functions.
  assert.equal(a.nextId, b.nextId)
  assert.notEqual(a, b)
  const other = new Snowflake({ datacenterId: 5, workerId: 7 })
  assert.notEqual(other.nextId, a.nextId)
  assert.equal(other.decode(other.nextId()).workerId, 7)
  // More configurations than the cache keeps: each still gets its own identity, and the first one its own again.
  for (let w = 10; w < 30; w++) {
    const g = new Snowflake({ datacenterId: 5, workerId: w })
    assert.equal(g.decode(g.nextId()).workerId, w)
  }
  const again = new Snowflake({ datacenterId: 5, workerId: 6 })
  const ids = [a.nextId(), again.nextId(), b.nextId(), again.nextId()]
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'one sequence for the identity')
  // The environment is read by each constructor: a changed variable is a different configuration.
  const saved = process.env.SNOWID_MAX_WAIT_MS
  try {
    process.env.SNOWID_MAX_WAIT_MS = '7'
    const seven = new Snowflake({ datacenterId: 5, workerId: 6 })
    process.env.SNOWID_MAX_WAIT_MS = '8'
    const eight = new Snowflake({ datacenterId: 5, workerId: 6 })
    assert.equal(seven.config().maxWaitMs, 7)
    assert.equal(eight.config().maxWaitMs, 8)
    assert.notEqual(seven.nextId, eight.nextId)
    process.env.SNOWID_MAX_WAIT_MS = 'x'
    expectError(() => new Snowflake({ datacenterId: 5, workerId: 6 }), {
      name: 'TypeError',
      code: 'ERR_SNOWID_INVALID_CONFIG',
      message: /^SNOWID_MAX_WAIT_MS: expected an integer from 0 to 60000, found "x"/,
    })
  } finally {
    if (saved === undefined) delete process.env.SNOWID_MAX_WAIT_MS
    else process.env.SNOWID_MAX_WAIT_MS = saved
  }
  // A subclass's instance is its own object of its own prototype, with the same core.
  class Tagged extends Snowflake {}
  const t = new Tagged({ datacenterId: 5, workerId: 6 })
  assert.ok(t instanceof Tagged && t instanceof Snowflake)
  assert.equal(t.nextId, again.nextId)
})

test('bad options are refused with a coded error naming the option, the value and the range', () => {
  const cases = [
    [
      { workerId: 32 },
      'RangeError',
      /^options\.workerId: expected an integer from 0 to 31 \(workerBits is 5\), found 32$/,
    ],
    [{ workerId: -1 }, 'RangeError', /found -1$/],
    [{ workerId: 0.6 }, 'RangeError', /found 0\.6$/],
    [{ workerId: 2 ** 32 + 5 }, 'RangeError', /found 4294967301$/],
    [{ workerId: NaN }, 'RangeError', /found NaN$/],
    [{ workerId: '3' }, 'TypeError', /found the string "3"$/],
    [{ workerId: 3n }, 'TypeError', /found a bigint$/],
    [{ datacenterId: null }, 'TypeError', /^options\.datacenterId: .*found null$/],
    [{ datacenterId: 8 }, 'RangeError', /0 to 7/],
    [{ clockBack: 4 }, 'RangeError', /^options\.clockBack: expected an integer from 0 to 3/],
    [{ sequenceBits: 64 }, 'RangeError', /^options\.sequenceBits: expected an integer from 0 to 32, found 64$/],
    [{ sequenceBits: 33 }, 'RangeError', /^options\.sequenceBits: expected an integer from 0 to 32, found 33$/],
    [
      { sequenceBits: 16 },
      'RangeError',
      /^layout: expected a timestamp field that lasts at least 10 years.*\(set by options\.sequenceBits\)$/,
    ],
    [
      { datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 0 },
      'RangeError',
      /at most 52 timestamp bits/,
    ],
    [{ epoch: Date.now() + 60_000 }, 'RangeError', /^options\.epoch: .*in the future$/],
    [{ epoch: 'yesterday' }, 'TypeError', /^options\.epoch: .*found "yesterday"$/],
    [{ epoch: new Date(NaN) }, 'RangeError', /invalid Date/],
    [{ epoch: -1 }, 'RangeError', /found -1$/],
    [
      { onClockBack: 'ignore' },
      'RangeError',
      /^options\.onClockBack: expected one of 'bits', 'wait' or 'throw', found "ignore"$/,
    ],
    [{ maxWaitMs: 60_001 }, 'RangeError', /0 to 60000/],
    [{ workerID: 3 }, 'TypeError', /^options: expected only the options .*found an unknown option "workerID"$/],
    [{ workerIdIfTaken: 'skip' }, 'RangeError', /^options\.workerIdIfTaken: expected 'fail' or 'next', found "skip"$/],
    [
      { workerIdIfTaken: true },
      'TypeError',
      /^options\.workerIdIfTaken: expected 'fail' or 'next', found the boolean true$/,
    ],
    [{ workerIdFrom: 'hostname' }, 'RangeError', /^options\.workerIdFrom: expected "statefulset" .*found "hostname"$/],
    [{ workerIdFrom: 1 }, 'TypeError', /^options\.workerIdFrom: expected "statefulset" .*found 1$/],
    [
      { leaseNamespace: 'a/b' },
      'RangeError',
      /^options\.leaseNamespace: expected 1 to 64 characters of A-Z, a-z, 0-9, '\.', '_' and '-', found "a\/b"$/,
    ],
    [
      { leaseNamespace: true },
      'TypeError',
      /^options\.leaseNamespace: expected 1 to 64 characters .*found the boolean true$/,
    ],
  ]
  for (const [options, name, message] of cases) {
    expectError(() => new Snowflake(options), { name, code: 'ERR_SNOWID_INVALID_CONFIG', message })
  }
  expectError(() => new Snowflake(5), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_CONFIG',
    message: /^options: expected a plain object, found the number 5$/,
  })
  assert.doesNotThrow(() => new Snowflake({ workerId: undefined }))
  assert.doesNotThrow(() => new Snowflake(null))
})

test('errors carry stable codes and the documented classes', () => {
  try {
    snowid.decode('x')
    assert.fail('no throw')
  } catch (err) {
    assert.ok(err instanceof TypeError)
    assert.ok(err instanceof Error)
    assert.equal(err.code, 'ERR_SNOWID_INVALID_ID')
  }
})

test('nextIds and nextIdStrings: unique, increasing, interleaved correctly with single calls', () => {
  for (const gen of [snowid, new Snowflake({ workerId: 6 }), new Snowflake({ workerId: 7, maxLeadMs: 1000 })]) {
    const before = gen.nextId()
    const batch = gen.nextIds(10_000)
    assert.ok(batch instanceof BigInt64Array)
    assert.equal(batch.length, 10_000)
    const middle = BigInt(gen.nextIdString())
    const strings = gen.nextIdStrings(5000)
    assert.ok(Array.isArray(strings) && strings.every(s => typeof s === 'string' && /^\d+$/.test(s)))
    // Each is its id's own decimal form (a batch writes consecutive ids by stepping the previous one's digits).
    assert.ok(strings.every(s => BigInt(s).toString() === s))
    const into = new BigInt64Array(4096)
    assert.equal(gen.nextIds(into), into, "fills and returns the caller's array")
    const after = gen.nextId()
    const all = [before, ...batch, middle, ...strings.map(BigInt), ...into, after]
    for (let i = 1; i < all.length; i++) assert.ok(all[i] > all[i - 1], `position ${i}`)
    assert.equal(countDuplicates([all]).dups, 0)
    assert.equal(gen.decode(batch[0]).workerId, gen.decode(before).workerId)
  }
})

test('a bad batch count is a coded RangeError or TypeError', () => {
  const ranges = [0, -1, 1.5, NaN, Infinity, 2 ** 20 + 1, new BigInt64Array(0)]
  const types = ['3', null, undefined, 3n, {}, [], new BigUint64Array(2), new Float64Array(2)]
  for (const gen of [snowid, new Snowflake()]) {
    for (const bad of ranges)
      expectError(() => gen.nextIds(bad), {
        name: 'RangeError',
        code: 'ERR_SNOWID_INVALID_ARGUMENT',
        message: /^count: expected an integer from 1 to 1048576 or a BigInt64Array/,
      })
    for (const bad of types)
      expectError(() => gen.nextIds(bad), {
        name: 'TypeError',
        code: 'ERR_SNOWID_INVALID_ARGUMENT',
        message: /^count: /,
      })
    for (const bad of [0, -1, 1.5, 2 ** 20 + 1])
      expectError(() => gen.nextIdStrings(bad), {
        name: 'RangeError',
        code: 'ERR_SNOWID_INVALID_ARGUMENT',
        message: /^count: expected an integer from 1 to 1048576, found/,
      })
    expectError(() => gen.nextIdStrings(new BigInt64Array(2)), {
      name: 'TypeError',
      code: 'ERR_SNOWID_INVALID_ARGUMENT',
    })
  }
  assert.equal(snowid.nextIds(2 ** 20).length, 2 ** 20, 'the largest batch is allowed')
})

test("a Snowflake's methods become its own, hidden, on first access, and work detached; the prototype's agree", () => {
  const gen = new Snowflake({ workerId: 8 })
  const methods = [
    'nextId',
    'nextIdString',
    'nextIds',
    'nextIdStrings',
    'timestampOf',
    'isId',
    'decode',
    'minIdAt',
    'maxIdAt',
    'config',
    'stats',
  ]
  // A new instance holds no functions: they are made on its first method access, all at once.
  assert.deepEqual(Object.getOwnPropertyNames(gen), [])
  assert.equal(typeof gen.decode, 'function')
  assert.deepEqual(Object.getOwnPropertyNames(gen).sort(), [...methods].sort())
  assert.deepEqual(Object.keys(gen), [])
  for (const name of methods) {
    const d = Object.getOwnPropertyDescriptor(gen, name)
    assert.equal(typeof d.value, 'function', name)
    assert.equal(d.writable || d.configurable || d.enumerable, false, name)
    assert.equal(typeof Snowflake.prototype[name], 'function', name)
  }
  // The same function each time: the getters on the prototype are shadowed.
  assert.equal(gen.nextId, gen.nextId)
  // A frozen instance, which can take no property, still gets working methods.
  const frozen = Object.freeze(new Snowflake({ workerId: 8 }))
  assert.equal(frozen.decode(frozen.nextIds(2)[1]).workerId, 8)
  assert.deepEqual(Object.getOwnPropertyNames(frozen), [])
  const detached = gen.nextId
  const a = detached()
  const b = Snowflake.prototype.nextId.call(gen)
  const c = Snowflake.prototype.nextIds.call(gen, 3)
  const d = BigInt(Snowflake.prototype.nextIdString.call(gen))
  assert.ok(a < b && b < c[0] && c[2] < d)
  assert.equal(gen.decode(d).workerId, 8)
  // Many short-lived generators: their methods are collected without harm.
  for (let i = 0; i < 20_000; i++) new Snowflake({ workerId: 9 }).nextId()
  global.gc?.()
  assert.equal(new Snowflake({ workerId: 9 }).decode(new Snowflake({ workerId: 9 }).nextId()).workerId, 9)
})

test("the article's transcription handles a step back of the clock, which the original's logger.warn line broke", () => {
  const a = new ArticleSnowflake({ workerId: 1 })
  const start = Date.now() + 10_000
  let now = start
  a.getTimestamp = () => now
  const first = a.nextId()
  now -= 5
  const second = a.nextId()
  const fields = id => ({ tsBack: Number((id >> 12n) & 3n), ts: Number(id >> 22n) + 1580486400000 })
  assert.deepEqual(fields(first), { tsBack: 0, ts: start })
  assert.deepEqual(fields(second), { tsBack: 1, ts: start - 5 })
  // As published, the warning line is `console.log.warn(...)`, which throws on that same call.
  assert.throws(() => console.log.warn('clock is moving backwards'), TypeError)
  const header = require('node:fs').readFileSync(require.resolve('../benchmark/article.js'), 'utf8').split('\n\n')[1]
  assert.match(header, /Three things differ from the original/)
  assert.match(header, /logger\.warn/)
})

test('small and large batches are fresh arrays of increasing, distinct ids, whatever the size', () => {
  for (const gen of [snowid, new Snowflake({ workerId: 10 })]) {
    // Small batches are written to a scratch and copied out: each call must return its own array.
    const a = gen.nextIds(2)
    const b = gen.nextIds(2)
    assert.notEqual(a.buffer, b.buffer)
    a[0] = 0n
    assert.ok(b[0] > 0n && b[1] > b[0])
    const all = []
    for (const n of [1, 2, 63, 64, 65, 1000, 64, 3]) {
      const ids = gen.nextIds(n)
      assert.ok(ids instanceof BigInt64Array)
      assert.equal(ids.length, n)
      all.push(...ids)
    }
    for (const n of [1, 2, 100, 5000]) {
      const strings = gen.nextIdStrings(n)
      assert.ok(Array.isArray(strings))
      assert.equal(strings.length, n)
      for (const s of strings) assert.match(s, /^[1-9][0-9]*$/)
      all.push(...strings.map(BigInt))
    }
    for (let i = 1; i < all.length; i++) assert.ok(all[i] > all[i - 1], `id ${i} increases`)
    assert.equal(gen.decode(all.at(-1)).workerId, gen === snowid ? snowid.config().workerId : 10)
  }
})

test('decode gives a fresh plain object per call, with every field of the id it was given', () => {
  const gen = new Snowflake({ workerId: 11, datacenterId: 2, clockBack: 1 })
  const [x, y] = gen.nextIds(2)
  const dx = gen.decode(x)
  const dy = gen.decode(String(y))
  assert.notEqual(dx, dy)
  assert.deepEqual(Object.keys(dx), ['id', 'timestamp', 'datacenterId', 'workerId', 'clockBack', 'sequence'])
  assert.equal(dx.id, String(x))
  assert.equal(dy.id, String(y))
  assert.deepEqual([dx.datacenterId, dx.workerId, dx.clockBack], [2, 11, 1])
  assert.equal(dy.sequence, dx.sequence + 1)
  // Each decoder reads the layout it belongs to: the same id through three layouts.
  const layout = new snowid.SnowflakeLayout({ datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 22 })
  const wide = layout.decode(x)
  assert.equal(wide.sequence, Number(x & (2n ** 22n - 1n)))
  assert.equal(wide.datacenterId, 0)
  assert.equal(gen.decode(x).workerId, 11)
  assert.equal(snowid.decode(x).workerId, 11)
})
