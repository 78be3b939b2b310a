'use strict'

// Every export and method, called with hostile values: each call returns, or throws an error with an
// `ERR_SNOWID_*` code and a bounded message. Never an uncoded error, a crash or a hang.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')

const { isolateLeases, wasiTodo } = require('./helpers.js')

// Under emnapi (the WASI build), reading a Proxy whose getPrototypeOf trap throws lets that throw through uncoded
// (seen from minIdAt and maxIdAt): a known difference, run as a todo there.
const PROXY_TRAP = wasiTodo("a Proxy's throwing getPrototypeOf trap comes through uncoded")

// This process's generators take no lease, and its default generator is configured from here.
const leaseDir = isolateLeases()
process.env.SNOWID_LEASE = 'off'
test.after(() => fs.rmSync(leaseDir, { recursive: true, force: true }))

const snowid = require('..')
const { Snowflake, SnowflakeLayout } = snowid

const MESSAGE_LIMIT = 400

function hostileValues() {
  const throwingGetter = {}
  Object.defineProperty(throwingGetter, 'workerId', {
    enumerable: true,
    get() {
      throw new Error('getter')
    },
  })
  const throwingProxy = new Proxy(
    {},
    {
      get() {
        throw new Error('get trap')
      },
      ownKeys() {
        throw new Error('ownKeys trap')
      },
      getPrototypeOf() {
        throw new Error('getPrototypeOf trap')
      },
      getOwnPropertyDescriptor() {
        throw new Error('descriptor trap')
      },
    },
  )
  const quietProxy = new Proxy({ lease: false }, {})
  const toPrimitiveThrows = {
    [Symbol.toPrimitive]() {
      throw new Error('toPrimitive')
    },
    toString() {
      throw new Error('toString')
    },
  }
  return [
    undefined,
    null,
    true,
    false,
    0,
    -0,
    -1,
    1.5,
    NaN,
    Infinity,
    -Infinity,
    2 ** 53,
    2 ** 64,
    Number.MIN_VALUE,
    '',
    ' ',
    '0',
    '-1',
    '1e3',
    'x'.repeat(1 << 20),
    '9'.repeat(1 << 20),
    '\u0000',
    '\ud800',
    'hex',
    'base62',
    Symbol('s'),
    0n,
    -1n,
    2n ** 63n,
    2n ** 64n,
    2n ** 100000n,
    -(2n ** 100000n),
    {},
    [],
    [1],
    new Map([['workerId', 1]]),
    new Set(),
    new Date(NaN),
    new Date(8.64e15),
    /re/,
    () => 1,
    function named() {},
    new BigInt64Array(0),
    new BigInt64Array(2),
    new Uint8Array(8),
    new ArrayBuffer(8),
    Promise.resolve(),
    throwingGetter,
    throwingProxy,
    quietProxy,
    toPrimitiveThrows,
    Object.create(null),
    new (class Foo {})(),
    { workerId: 'x'.repeat(1 << 20) },
    { ['k'.repeat(1 << 20)]: 1 },
    { lease: false, leaseDir: 'x'.repeat(1 << 20) },
    { leaseNamespace: 'n'.repeat(1 << 20) },
    { leaseNamespace: '\u0000' },
    { leaseNamespace: 7 },
    { epoch: Symbol('e') },
    { epoch: 2n },
    { epoch: new Date(NaN) },
    { onClockBack: {} },
    { lease: 'yes' },
    { datacenterBits: 2 ** 64 },
    { sequenceBits: -1 },
    { maxWaitMs: 1e9 },
    { datacenterId: 1.5 },
  ]
}

function describe(v) {
  try {
    if (typeof v === 'string') return v.length > 20 ? `string(${v.length})` : JSON.stringify(v)
    if (typeof v === 'bigint') return v > 2n ** 70n || v < -(2n ** 70n) ? 'huge bigint' : `${v}n`
    if (typeof v === 'symbol') return 'symbol'
    return Object.prototype.toString.call(v)
  } catch {
    return 'a value'
  }
}

// Runs `call`, and returns a description of what went wrong, or null when it returned or threw a good error.
function check(label, call) {
  try {
    call()
    return null
  } catch (e) {
    if (!(e instanceof Error)) return `${label}: threw a non-Error ${describe(e)}`
    if (typeof e.code !== 'string' || !e.code.startsWith('ERR_SNOWID_')) {
      return `${label}: uncoded ${e.constructor.name}: ${String(e.message).slice(0, 120)}`
    }
    if (e.message.length > MESSAGE_LIMIT) return `${label}: a message of ${e.message.length} characters`
    return null
  }
}

test('every module function, with every hostile value in every argument', PROXY_TRAP, () => {
  const problems = []
  const calls = {
    decode: v => snowid.decode(v),
    timestampOf: v => snowid.timestampOf(v),
    minIdAt: v => snowid.minIdAt(v),
    maxIdAt: v => snowid.maxIdAt(v),
    'encode(v)': v => snowid.encode(v, 'hex'),
    'encode(1n, v)': v => snowid.encode(1n, v),
    'parse(v)': v => snowid.parse(v, 'hex'),
    'parse(text, v)': v => snowid.parse('0000000000000001', v),
    nextIds: v => snowid.nextIds(v),
    nextIdStrings: v => snowid.nextIdStrings(v),
    workerSlots: v => snowid.workerSlots(v),
    'new Snowflake': v => new Snowflake(v),
    'new SnowflakeLayout': v => new SnowflakeLayout(v),
    'Snowflake()': v => Snowflake(v),
    'SnowflakeLayout()': v => SnowflakeLayout(v),
  }
  for (const [name, call] of Object.entries(calls)) {
    for (const v of hostileValues()) {
      const p = check(`${name}(${describe(v)})`, () => call(v))
      if (p) problems.push(p)
    }
  }
  // configure() changes the default generator, so it goes last, before any id, with every value.
  for (const v of hostileValues()) {
    const p = check(`configure(${describe(v)})`, () => snowid.configure(v))
    if (p) problems.push(p)
  }
  for (const name of ['nextId', 'nextIdString', 'config', 'stats']) {
    const p = check(`${name}()`, () => snowid[name]())
    if (p) problems.push(p)
  }
  assert.deepEqual(problems, [])
})

test(
  'every method, with every hostile value, on its instance, taken off it, and on a wrong or missing this',
  PROXY_TRAP,
  () => {
    const problems = []
    const g = new Snowflake({ lease: false, workerId: 3 })
    const layout = new SnowflakeLayout({ epoch: 1420070400000, datacenterBits: 5, workerBits: 5, clockBackBits: 0 })
    const owners = [
      [
        'Snowflake',
        Snowflake,
        g,
        [
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
        ],
      ],
      ['SnowflakeLayout', SnowflakeLayout, layout, ['decode', 'timestampOf', 'isId', 'minIdAt', 'maxIdAt', 'layout']],
    ]
    const wrongThis = [
      undefined,
      null,
      {},
      7,
      'x',
      Symbol('this'),
      new Proxy({}, {}),
      Object.create(Snowflake.prototype),
    ]
    for (const [cls, Class, instance, methods] of owners) {
      for (const m of methods) {
        const detached = instance[m]
        for (const v of hostileValues()) {
          for (const [how, call] of [
            ['on', () => instance[m](v)],
            ['detached', () => detached(v)],
          ]) {
            const p = check(`${cls}#${m}(${describe(v)}) ${how}`, call)
            if (p) problems.push(p)
          }
        }
        for (const self of wrongThis) {
          const p = check(`${cls}.prototype.${m}.call(${describe(self)})`, () => Class.prototype[m].call(self, 1n))
          if (p) problems.push(p)
          assert.throws(() => Class.prototype[m].call(self, 1n), { code: 'ERR_SNOWID_INVALID_ARGUMENT' })
        }
      }
    }
    assert.deepEqual(problems, [])
    // The instances still work after all that.
    assert.equal(g.decode(g.nextId()).workerId, 3)
    assert.equal(layout.decode(175928847299117063n).sequence, 7)
  },
)

test('the environment, hostile through process.env: coded errors with bounded messages', () => {
  const { runNode } = require('./helpers.js')
  const r = runNode(`
    const s = require('.')
    const out = []
    const tries = [
      ['SNOWID_WORKER_ID', 'w'.repeat(1 << 20)],
      ['SNOWID_EPOCH', '1'.repeat(1 << 20)],
      ['SNOWID_LEASE_DIR', 'x'.repeat(1 << 20)],
      ['SNOWID_LEASE_NAMESPACE', 'n'.repeat(1 << 20)],
      ['SNOWID_ON_CLOCK_BACK', '\\u0007'.repeat(100)],
      ['SNOWID_SEQUENCE_BITS', '99999999999999999999999999'],
    ]
    for (const [name, value] of tries) {
      const r = require('node:child_process').spawnSync(process.execPath, ['-e', "try { require('.').nextId(); console.log('none') } catch (e) { console.log(JSON.stringify({ code: e.code, length: e.message.length })) }"], { env: { ...process.env, SNOWID_LEASE: 'on', [name]: value.slice(0, 100000) }, encoding: 'utf8' })
      out.push([name, r.stdout.trim(), r.status])
    }
    console.log(JSON.stringify(out))
  `)
  assert.equal(r.status, 0, r.stderr)
  for (const [name, line, status] of JSON.parse(r.stdout)) {
    assert.equal(status, 0, name)
    const e = JSON.parse(line)
    assert.match(e.code, /^ERR_SNOWID_/, name)
    assert.ok(e.length <= MESSAGE_LIMIT, `${name}: ${e.length}`)
  }
})
