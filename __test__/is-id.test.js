'use strict'

// `isId`: a guard for values that come from clients. It never throws for a value, and is true only for an id in one
// of its three forms (a bigint, a canonical decimal string, a safe integer) from 0 to 2^63 - 1, and, with a window,
// only for one whose time lies in it; options that are not one are the programmer's mistake, and throw. `decode`,
// `timestampOf` and `encode` refuse a decimal id with leading zeros.

const test = require('node:test')
const assert = require('node:assert')
const vm = require('node:vm')

const snowid = require('..')
const { isId, decode, timestampOf, encode, Snowflake, SnowflakeLayout, minIdAt, maxIdAt } = snowid
const { ID_PATTERN, decimalsUpTo, isCanonical } = require('../lib/ids.js')

const MAX = 2n ** 63n - 1n

const GOOD = [
  0n,
  1n,
  MAX,
  '0',
  '1',
  '10',
  '9223372036854775807',
  '9223372036854775806',
  '1000000000000000000',
  '8999999999999999999',
  '9223372036854775799',
  0,
  1,
  Number.MAX_SAFE_INTEGER,
]
const BAD = [
  -1n,
  MAX + 1n,
  2n ** 64n,
  '',
  ' 1',
  '1 ',
  '+1',
  '-5',
  '-0',
  '0x10',
  '1e3',
  '1.0',
  '00012',
  '00',
  '01',
  '9223372036854775808',
  '9999999999999999999',
  '10000000000000000000',
  '١٢',
  '１２',
  -1,
  0.5,
  Number.MAX_SAFE_INTEGER + 1,
  2 ** 63,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  null,
  undefined,
  true,
  {},
  [],
  [1],
  { valueOf: () => 1n },
  new String('1'),
  Symbol('1'),
  () => 1,
]

test('isId is true for ids in each of their three forms, and false for anything else, without throwing', () => {
  for (const v of GOOD) assert.strictEqual(isId(v), true, `isId(${String(v)})`)
  for (const v of BAD) assert.strictEqual(isId(v), false, `isId(${typeof v === 'symbol' ? 'symbol' : String(v)})`)
  // A Proxy or an object whose getters throw is not an id, and nothing of it is read.
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error('read')
      },
      getPrototypeOf() {
        throw new Error('read')
      },
    },
  )
  assert.strictEqual(isId(hostile), false)
})

test('isId agrees with decode: every value isId accepts decodes, every other value decode refuses', () => {
  for (const v of GOOD) assert.doesNotThrow(() => decode(v), `decode(${String(v)})`)
  for (const v of BAD) {
    if (typeof v === 'symbol') continue
    assert.throws(() => decode(v), { code: 'ERR_SNOWID_INVALID_ID' }, `decode(${String(v)})`)
  }
})

test('decode, timestampOf and encode refuse a decimal id with leading zeros, which they once read as its digits', () => {
  const layout = new SnowflakeLayout()
  const generator = new Snowflake({ workerId: 1, lease: false })
  const calls = {
    decode: v => decode(v),
    timestampOf: v => timestampOf(v),
    encode: v => encode(v, 'hex'),
    'SnowflakeLayout decode': v => layout.decode(v),
    'SnowflakeLayout timestampOf': v => layout.timestampOf(v),
    'Snowflake decode': v => generator.decode(v),
    'Snowflake timestampOf': v => generator.timestampOf(v),
  }
  for (const [name, call] of Object.entries(calls)) {
    for (const v of ['00012', '00', '09223372036854775807']) {
      assert.throws(
        () => call(v),
        { name: 'TypeError', code: 'ERR_SNOWID_INVALID_ID', message: new RegExp(`no leading zeros.*"${v}"`) },
        `${name}(${v})`,
      )
    }
    // The canonical forms still read, and other bad strings get the binding's own errors.
    assert.doesNotThrow(() => call('12'), name)
    assert.doesNotThrow(() => call('0'), name)
    assert.throws(() => call('-012'), { name: 'RangeError', code: 'ERR_SNOWID_INVALID_ID' }, name)
    assert.throws(() => call('0x12'), { name: 'TypeError', code: 'ERR_SNOWID_INVALID_ID' }, name)
  }
  assert.equal(decode('12').id, '12')
})

test('ID_PATTERN accepts exactly the canonical decimal ids, at every boundary', () => {
  const re = new RegExp(ID_PATTERN)
  for (const v of GOOD.filter(v => typeof v === 'string')) assert.ok(re.test(v), v)
  for (const v of BAD.filter(v => typeof v === 'string')) assert.ok(!re.test(v), v)
  // Around each digit of the maximum: the maximum with one digit raised (above it) or lowered (below it).
  const max = MAX.toString()
  for (let i = 0; i < max.length; i++) {
    for (let d = 0; d <= 9; d++) {
      const text = max.slice(0, i) + d + max.slice(i + 1)
      const expected = text[0] !== '0' && BigInt(text) <= MAX
      assert.strictEqual(re.test(text), expected, text)
      assert.strictEqual(isCanonical(text), expected, text)
    }
  }
  // Every length, and random numbers on both sides of the maximum.
  for (let n = 1; n <= 21; n++) {
    assert.strictEqual(re.test('9'.repeat(n)), n < 19, `${n} nines`)
    assert.strictEqual(re.test(`1${'0'.repeat(n - 1)}`), n <= 19, `10^${n - 1}`)
  }
  for (let i = 0; i < 20000; i++) {
    const text = String(BigInt.asUintN(64, BigInt(Math.floor(Math.random() * 2 ** 53)) * 2048n + BigInt(i)))
    const expected = BigInt(text) <= MAX
    assert.strictEqual(re.test(text), expected, text)
    assert.strictEqual(isId(text), expected, text)
  }
  // The construction itself, on small maxima, against every number up to a bound.
  for (const max of ['0', '7', '10', '19', '20', '305', '1000']) {
    const small = new RegExp(decimalsUpTo(max))
    for (let v = 0; v <= 1200; v++) assert.strictEqual(small.test(String(v)), v <= Number(max), `${v} <= ${max}`)
    assert.ok(!small.test(`0${max}`))
  }
})

test('isId with a window: the id time must lie within notBefore and notAfter, Dates or ms, both inclusive', () => {
  const t = Date.UTC(2026, 0, 1)
  const first = minIdAt(t)
  const last = maxIdAt(t)
  assert.strictEqual(isId(first, { notBefore: t, notAfter: t }), true)
  assert.strictEqual(isId(last, { notBefore: new Date(t), notAfter: new Date(t) }), true)
  assert.strictEqual(isId(first - 1n, { notBefore: t }), false)
  assert.strictEqual(isId(last + 1n, { notAfter: t }), false)
  assert.strictEqual(isId(String(last + 1n), { notBefore: t }), true)
  // Ids of 1970 (below the epoch there are none: 0 is the epoch itself) and of next year.
  assert.strictEqual(isId(0n, { notBefore: t }), false)
  assert.strictEqual(isId('0', { notBefore: 0 }), true)
  const nextYear = minIdAt(Date.now() + 365 * 86_400_000)
  assert.strictEqual(isId(nextYear, { notAfter: Date.now() + 60_000 }), false)
  assert.strictEqual(
    isId(snowid.nextIdString(), { notBefore: Date.now() - 60_000, notAfter: Date.now() + 60_000 }),
    true,
  )
  // The window is checked on ids only: a value that is none is false.
  assert.strictEqual(isId('00012', { notBefore: 0 }), false)
  assert.strictEqual(isId(-1n, {}), false)
  assert.strictEqual(isId(5n, {}), true)
})

test('isId reads the time with a layout: the options.layout given, or the instance own', () => {
  // One id read with two epochs: 2020 (the default) and 2025.
  const epoch = Date.UTC(2025, 0, 1)
  const layout = new SnowflakeLayout({ epoch })
  const generator = new Snowflake({ epoch, workerId: 2, lease: false })
  const id = 1n << 22n // 1 ms after the epoch
  const window = { notBefore: epoch, notAfter: epoch + 1 }
  assert.strictEqual(isId(id, window), false)
  assert.strictEqual(isId(id, { ...window, layout }), true)
  assert.strictEqual(isId(id, { ...window, layout: generator }), true)
  assert.strictEqual(layout.isId(id, window), true)
  assert.strictEqual(generator.isId(id, window), true)
  assert.strictEqual(generator.isId(generator.nextId(), { notBefore: Date.now() - 60_000 }), true)
  // Taken off its instance, it keeps its layout.
  const { isId: layoutIsId } = layout
  assert.strictEqual(layoutIsId(String(id), window), true)
  assert.strictEqual(layout.isId('00012'), false)
  // Other layouts' ids are ids all the same: the range is the id's, not the layout's.
  assert.strictEqual(new SnowflakeLayout({ sequenceBits: 20, workerBits: 0 }).isId(MAX), true)
})

test('isId refuses options that are not one with coded TypeErrors and RangeErrors, whatever the value', () => {
  const layout = new SnowflakeLayout()
  const cases = [
    [null, TypeError, /expected options with notBefore, notAfter or layout, found null/],
    ['x', TypeError, /found the string "x"/],
    [[], TypeError, /found an array/],
    [{ notbefore: 1 }, TypeError, /found the option "notbefore"/],
    [{ notBefore: '2026-01-01' }, TypeError, /options.notBefore: expected a Date or Unix ms, found the string/],
    [{ notAfter: 1n }, TypeError, /options.notAfter: expected a Date or Unix ms, found the bigint 1/],
    [{ notBefore: Number.NaN }, RangeError, /options.notBefore: expected finite Unix ms, found NaN/],
    [{ notAfter: new Date('nope') }, RangeError, /options.notAfter: expected a valid Date/],
    [{ notBefore: 2, notAfter: 1 }, RangeError, /notBefore at or before options.notAfter, found 2 after 1/],
    [{ layout: {} }, TypeError, /options.layout: expected a Snowflake or a SnowflakeLayout, found an object/],
    [{ layout: Object.create(SnowflakeLayout.prototype) }, TypeError, /options.layout/],
  ]
  for (const [options, Class, message] of cases) {
    for (const value of [1n, 'bad', undefined]) {
      assert.throws(
        () => isId(value, options),
        err => err instanceof Class && err.code === 'ERR_SNOWID_INVALID_ARGUMENT' && message.test(err.message),
        `isId(${String(value)}, ${String(options)})`,
      )
    }
  }
  assert.throws(() => layout.isId(1n, { layout }), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_ARGUMENT',
    message:
      /^SnowflakeLayout\.prototype\.isId: expected options with notBefore or notAfter, found the option "layout"/,
  })
  assert.throws(() => new Snowflake({ workerId: 3, lease: false }).isId(1n, 5), {
    name: 'TypeError',
    message: /^Snowflake\.prototype\.isId: /,
  })
})

test('isId takes Dates and option objects of another realm (Jest and Vitest vm pools)', () => {
  const t = Date.UTC(2026, 0, 1)
  const options = vm.runInNewContext(`({ notBefore: new Date(${t}), notAfter: new Date(${t}) })`)
  assert.ok(!(options.notBefore instanceof Date))
  assert.strictEqual(isId(minIdAt(t), options), true)
  assert.strictEqual(isId(minIdAt(t) - 1n, options), false)
})
