'use strict'

// Ids as they are stored and sent: time ranges, text encodings and JSON.

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const snowid = require('..')
const { Snowflake } = snowid
const { runNode, expectError } = require('./helpers.js')

const MAX_ID = 2n ** 63n - 1n
const ENCODINGS = { base62: 11, base36: 13, hex: 16 }
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Deterministic random ids of every magnitude (xorshift64). */
function* randomIds(count, seed = 0x9e3779b97f4a7c15n) {
  let x = seed
  const mask = 2n ** 64n - 1n
  for (let i = 0; i < count; i++) {
    x ^= (x << 13n) & mask
    x ^= x >> 7n
    x ^= (x << 17n) & mask
    const bits = BigInt(1 + Number(x % 63n))
    yield (x >> (64n - bits)) & MAX_ID
  }
}

/** Edge ids: 0, the maximum, and both sides of every power of two and of each radix. */
function edgeIds() {
  const ids = [0n, 1n, MAX_ID, MAX_ID - 1n]
  for (let b = 1n; b < 63n; b++) ids.push((1n << b) - 1n, 1n << b, (1n << b) + 1n)
  for (const radix of [62n, 36n, 16n]) {
    for (let p = radix; p <= MAX_ID; p *= radix) ids.push(p - 1n, p)
  }
  return ids
}

/** An independent reference encoder: BigInt arithmetic and the documented alphabets. */
function reference(id, encoding) {
  if (encoding === 'base62') {
    let s = ''
    for (let v = id; s.length < 11; v /= 62n) s = BASE62[Number(v % 62n)] + s
    return s
  }
  return id.toString(encoding === 'hex' ? 16 : 36).padStart(ENCODINGS[encoding], '0')
}

test('encode writes fixed-width text that parse reads back exactly, for edge and random ids', () => {
  const ids = [...edgeIds(), ...randomIds(20_000)]
  for (const [encoding, width] of Object.entries(ENCODINGS)) {
    for (const id of ids) {
      const text = snowid.encode(id, encoding)
      assert.equal(text.length, width)
      assert.equal(text, reference(id, encoding), `${encoding} ${id}`)
      assert.equal(snowid.parse(text, encoding), id)
    }
  }
  assert.equal(snowid.encode(MAX_ID, 'base62'), 'AzL8n0Y58m7')
  assert.equal(snowid.encode(0n, 'base62'), '00000000000')
  // Any id form that decode takes.
  assert.equal(snowid.encode('62', 'base62'), '00000000010')
  assert.equal(snowid.encode(255, 'hex'), '00000000000000ff')
})

test('texts of one encoding sort as their ids do', () => {
  const ids = [...edgeIds(), ...randomIds(5_000, 7n)]
  const byId = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  for (const encoding of Object.keys(ENCODINGS)) {
    const byText = ids.map(id => snowid.encode(id, encoding)).sort()
    assert.deepEqual(
      byText.map(t => snowid.parse(t, encoding)),
      byId,
      encoding,
    )
  }
  // Generated ids too, which differ only in their low bits within a ms.
  const generated = Array.from({ length: 2000 }, () => snowid.nextId())
  const texts = generated.map(id => snowid.encode(id, 'base62'))
  assert.deepEqual([...texts].sort(), texts)
})

test('parse refuses text of the wrong length, foreign characters and values above 2^63 - 1', () => {
  const bad = [
    ['', 'base62', 'TypeError', /\(0 characters\)/],
    ['14Yxh7VpBC', 'base62', 'TypeError', /\(10 characters\)/],
    ['14Yxh7VpBCqq', 'base62', 'TypeError', /\(12 characters\)/],
    ['AzL8n0Y58m8', 'base62', 'RangeError', /above 2\^63 - 1/],
    ['zzzzzzzzzzz', 'base62', 'RangeError', /above 2\^63 - 1/],
    ['0000000000_', 'base62', 'TypeError', /"_" at position 10/],
    ['8000000000000000', 'hex', 'RangeError', /above 2\^63 - 1/],
    ['0x0000000000000f', 'hex', 'TypeError', /"x" at position 1/],
    ['-000000000000001', 'hex', 'TypeError', /position 0/],
    ['1y2p0ij32e8e8', 'base36', 'RangeError', /above 2\^63 - 1/],
    ['1y2p0ij32e8e', 'base36', 'TypeError', /12 characters/],
    // What JS's own number parsing would take, and the text of an id must not hold.
    ['000000000000001 ', 'hex', 'TypeError', /" " at position 15/],
    [' 000000000000001', 'hex', 'TypeError', /" " at position 0/],
    ['00000000000_0001', 'hex', 'TypeError', /"_" at position 11/],
    [' 000000000001', 'base36', 'TypeError', /" " at position 0/],
    ['00000000000.1', 'base36', 'TypeError', /"\." at position 11/],
    ['0000000000é', 'base62', 'TypeError', /"é" at position 10/],
  ]
  for (const [text, encoding, name, message] of bad) {
    expectError(() => snowid.parse(text, encoding), { name, code: 'ERR_SNOWID_INVALID_ID', message })
  }
  expectError(() => snowid.parse(12n, 'hex'), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_ID',
    message: /^text: expected a string of 16 hex characters, found a bigint$/,
  })
  // Hex and base36 take capitals; base62 is case-sensitive by nature.
  assert.equal(snowid.parse('7FFFFFFFFFFFFFFF', 'hex'), MAX_ID)
  assert.equal(snowid.parse('1Y2P0IJ32E8E7', 'base36'), MAX_ID)
  assert.notEqual(snowid.parse('0000000000a', 'base62'), snowid.parse('0000000000A', 'base62'))
})

test('encode and parse refuse an unknown encoding, and encode refuses a bad id', () => {
  for (const [encoding, name] of [
    [undefined, 'TypeError'],
    ['base64', 'RangeError'],
    ['HEX', 'RangeError'],
    [16, 'TypeError'],
  ]) {
    const message = /^encoding: expected one of 'base62', 'base36' or 'hex', found /
    expectError(() => snowid.encode(1n, encoding), { name, code: 'ERR_SNOWID_INVALID_ARGUMENT', message })
    expectError(() => snowid.parse('0000000000000001', encoding), {
      name,
      code: 'ERR_SNOWID_INVALID_ARGUMENT',
      message,
    })
  }
  expectError(() => snowid.encode(-1n, 'hex'), { name: 'RangeError', code: 'ERR_SNOWID_INVALID_ID' })
  expectError(() => snowid.encode(MAX_ID + 1n, 'hex'), { name: 'RangeError', code: 'ERR_SNOWID_INVALID_ID' })
  expectError(() => snowid.encode('12ab', 'hex'), { name: 'TypeError', code: 'ERR_SNOWID_INVALID_ID' })
})

test('minIdAt and maxIdAt bracket every id made in a ms, and adjacent ms touch', () => {
  const ids = snowid.nextIds(5000)
  for (const id of ids) {
    const t = snowid.timestampOf(id)
    assert.equal(t, snowid.decode(id).timestamp)
    assert.ok(snowid.minIdAt(t) <= id && id <= snowid.maxIdAt(t))
    assert.equal(snowid.maxIdAt(t) + 1n, snowid.minIdAt(t + 1))
  }
  const t = snowid.timestampOf(ids[0])
  // The low 22 bits of the default layout are everything below the timestamp.
  assert.equal(snowid.maxIdAt(t) - snowid.minIdAt(t), 2n ** 22n - 1n)
  // A Date, Unix ms and ISO text name the same ms.
  const iso = new Date(t).toISOString()
  assert.equal(snowid.minIdAt(new Date(t)), snowid.minIdAt(t))
  assert.equal(snowid.minIdAt(iso), snowid.minIdAt(t))
  assert.equal(snowid.minIdAt(iso.replace('Z', '+00:00')), snowid.minIdAt(t))
  assert.equal(snowid.minIdAt(String(t)), snowid.minIdAt(t))
})

test('minIdAt and maxIdAt reach the ends of the layout and refuse times outside it', () => {
  const { epoch, expiresAt } = snowid.config()
  assert.equal(snowid.minIdAt(epoch), 0n)
  assert.equal(snowid.maxIdAt(expiresAt), MAX_ID)
  assert.equal(snowid.timestampOf(MAX_ID), expiresAt)
  assert.equal(snowid.timestampOf(0n), epoch)
  for (const fn of [snowid.minIdAt, snowid.maxIdAt]) {
    for (const t of [epoch - 1, expiresAt + 1, new Date(epoch - 1), '2019-12-31']) {
      expectError(() => fn(t), {
        name: 'RangeError',
        code: 'ERR_SNOWID_INVALID_ARGUMENT',
        message: /^time: expected a time from the epoch 1580486400000 \(2020-01-31T16:00:00\.000Z\) to expiresAt/,
      })
    }
    for (const [t, name] of [
      [undefined, 'TypeError'],
      [null, 'TypeError'],
      [true, 'TypeError'],
      [1n, 'TypeError'],
      [1.5, 'RangeError'],
      [NaN, 'RangeError'],
      [new Date(NaN), 'RangeError'],
      ['yesterday', 'TypeError'],
      ['2024-01-01T00:00:00', 'TypeError'],
    ]) {
      expectError(() => fn(t), {
        name,
        code: 'ERR_SNOWID_INVALID_ARGUMENT',
        message: /^time: expected a Date, Unix ms/,
      })
    }
  }
})

test('a Snowflake answers range and timestamp questions with its own layout and epoch', () => {
  const epoch = Date.parse('2024-01-01T00:00:00Z')
  const s = new Snowflake({
    epoch,
    datacenterBits: 0,
    workerBits: 10,
    clockBackBits: 0,
    sequenceBits: 12,
    workerId: 1023,
    lease: false,
  })
  const before = Date.now()
  const id = s.nextId()
  const after = Date.now()
  const t = s.timestampOf(id)
  assert.ok(before <= t && t <= after)
  assert.equal(t, s.decode(id).timestamp)
  assert.equal(s.minIdAt(epoch), 0n)
  assert.equal(s.maxIdAt(s.config().expiresAt), MAX_ID)
  assert.ok(s.minIdAt(t) <= id && id <= s.maxIdAt(t))
  assert.equal(s.maxIdAt(t) - s.minIdAt(t), 2n ** 22n - 1n)
  // The module reads the same id with its own epoch, so it names another time.
  assert.notEqual(snowid.timestampOf(id), t)
  expectError(() => s.minIdAt(epoch - 1), { name: 'RangeError', code: 'ERR_SNOWID_INVALID_ARGUMENT' })
  expectError(() => s.timestampOf('x'), { name: 'TypeError', code: 'ERR_SNOWID_INVALID_ID' })
  // Extracted from its instance, the fast method still knows its generator.
  const { timestampOf } = s
  assert.equal(timestampOf(id), t)
})

test('minIdAt and maxIdAt at the extremes of a wide and a narrow layout', () => {
  const layouts = [
    { epoch: 0, datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 11 }, // 52 timestamp bits
    { epoch: '2025-01-01', datacenterBits: 8, workerBits: 8, clockBackBits: 8, sequenceBits: 0 }, // 39
  ]
  for (const options of layouts) {
    const s = new Snowflake({ ...options, lease: false })
    const { epoch, expiresAt, timestampBits } = s.config()
    const low = 2n ** BigInt(63 - timestampBits) - 1n
    assert.equal(s.minIdAt(epoch), 0n)
    assert.equal(s.maxIdAt(epoch), low)
    assert.equal(s.minIdAt(expiresAt), MAX_ID - low)
    assert.equal(s.maxIdAt(expiresAt), MAX_ID)
    assert.ok(Number.isSafeInteger(expiresAt))
    assert.equal(s.timestampOf(MAX_ID), expiresAt)
    for (const id of randomIds(2000, 99n)) {
      const t = s.timestampOf(id)
      assert.ok(s.minIdAt(t) <= id && id <= s.maxIdAt(t), `${id}`)
    }
  }
})

test('a configured default generator gives its layout to decode, timestampOf and minIdAt before its first id', () => {
  const code = `
    const s = require('.')
    s.configure({ epoch: '2024-01-01', lease: false })
    const epoch = Date.parse('2024-01-01')
    console.log(JSON.stringify([String(s.minIdAt(epoch)), s.timestampOf(4194304n), s.decode(4194304n).timestamp]))
    const id = s.nextId()
    console.log(JSON.stringify([s.timestampOf(id) === s.decode(id).timestamp, s.timestampOf(id) - Date.now() <= 0]))
  `
  const r = runNode(code)
  assert.equal(r.status, 0, r.stderr)
  const [first, second] = r.stdout
    .trim()
    .split('\n')
    .map(l => JSON.parse(l))
  const epoch = Date.parse('2024-01-01')
  assert.deepEqual(first, ['0', epoch + 1, epoch + 1])
  assert.deepEqual(second, [true, true])
})

// The JSON patterns of the README, "BigInt and JSON".

/** Sends every bigint as its decimal string. */
const bigintReplacer = (_key, value) => (typeof value === 'bigint' ? value.toString() : value)

test('JSON: ids go out as strings, by nextIdString or by a replacer, and come back as bigint by a reviver', () => {
  const order = {
    id: snowid.nextId(),
    customerId: snowid.nextIdString(),
    items: [{ sku: snowid.nextId() }],
    total: 12.5,
  }
  assert.throws(() => JSON.stringify(order), TypeError, 'JSON.stringify cannot send a bigint by itself')
  const text = JSON.stringify(order, bigintReplacer)
  const wire = JSON.parse(text)
  assert.equal(typeof wire.id, 'string')
  assert.equal(wire.id, String(order.id))
  assert.equal(wire.customerId, order.customerId)
  assert.equal(wire.items[0].sku, String(order.items[0].sku))
  assert.equal(wire.total, 12.5)

  // Reading back: the keys that hold ids become bigint again; nothing else changes.
  const ID_KEYS = new Set(['id', 'customerId', 'sku'])
  const back = JSON.parse(text, (key, value) => (ID_KEYS.has(key) && typeof value === 'string' ? BigInt(value) : value))
  assert.equal(back.id, order.id)
  assert.equal(back.customerId, BigInt(order.customerId))
  assert.equal(back.items[0].sku, order.items[0].sku)
  assert.equal(back.total, 12.5)

  // decode's object is JSON-safe as it is.
  assert.deepEqual(JSON.parse(JSON.stringify(snowid.decode(order.id))), snowid.decode(order.id))
  // BigInt.prototype is left alone.
  assert.equal(Object.hasOwn(BigInt.prototype, 'toJSON'), false)
})

test('JSON: an id sent as a number loses its low digits, which is why ids travel as strings', () => {
  let lost = 0
  for (const id of snowid.nextIds(1000)) {
    const asNumber = JSON.parse(JSON.stringify({ id: Number(id) })).id
    if (BigInt(asNumber) !== id) lost++
    const asString = JSON.parse(JSON.stringify({ id: String(id) })).id
    assert.equal(BigInt(asString), id)
  }
  // Ids are above 2^53, so nearly every one comes back changed.
  assert.ok(lost > 900, `${lost} of 1000 changed`)
})
