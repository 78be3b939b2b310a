'use strict'

// The binding's promises to every caller: class semantics, hidden internals, plain options, bounded messages,
// methods taken off instances, the environment read through `process.env`, and reading ids without generating.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')

const { expectError, runNode, wasiSkip } = require('./helpers.js')

// Each check that touches the default generator runs in a process of its own, so that it meets a fresh one.
function run(code, env = {}) {
  const r = runNode(`const s = require('.'); const out = {}; ${code}; console.log(JSON.stringify(out))`, env)
  assert.equal(r.signal, null, r.stderr)
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

// A thrown error as plain data, for the checks that run in a child.
const CAUGHT = `const caught = (fn) => { try { fn(); return null } catch (e) { return { name: e.constructor.name, code: e.code, message: e.message } } }`

test('Snowflake without new throws a coded TypeError and changes nothing, called on the module or destructured', () => {
  const out = run(
    `
    ${CAUGHT}
    const before = { nextId: s.nextId, nextIdString: s.nextIdString, nextIds: s.nextIds, nextIdStrings: s.nextIdStrings, timestampOf: s.timestampOf }
    out.onModule = caught(() => s.Snowflake({ workerId: 9, lease: false }))
    out.again = caught(() => s.Snowflake({ workerId: 9, lease: false }))
    const { Snowflake } = s
    out.destructured = caught(() => Snowflake({ workerId: 9, lease: false }))
    out.unchanged = Object.entries(before).every(([k, f]) => s[k] === f)
    out.globals = ['nextId', 'nextIdString', 'nextIds', 'nextIdStrings', 'timestampOf'].filter((k) => k in globalThis)
    out.worker = s.decode(s.nextId()).workerId
    out.config = s.config().workerId
  `,
    { SNOWID_WORKER_ID: '3' },
  )
  for (const e of [out.onModule, out.again, out.destructured]) {
    assert.deepEqual(e, {
      name: 'TypeError',
      code: 'ERR_SNOWID_INVALID_ARGUMENT',
      message: 'Snowflake: expected a call with new (new Snowflake(options)), found a call without new',
    })
  }
  assert.equal(out.unchanged, true)
  assert.deepEqual(out.globals, [])
  assert.deepEqual([out.worker, out.config], [3, 3])
})

test('the lease fence is not reachable from user code', () => {
  const snowid = require('..')
  const g = new snowid.Snowflake({ lease: false, workerId: 1 })
  assert.equal(g._fence, undefined)
  assert.equal('fenceSnowflake' in snowid, false)
  assert.deepEqual(
    Object.keys(snowid).filter(k => k.startsWith('_') || k.startsWith('fence')),
    [],
  )
  // The package's exports map does not expose the generated loader.
  const r = runNode(`try { require('snowid/binding.js'); console.log('reachable') } catch (e) { console.log(e.code) }`)
  assert.equal(r.stdout.trim(), 'ERR_PACKAGE_PATH_NOT_EXPORTED', r.stderr)
  assert.equal(g.nextId() > 0n, true, 'and the generator still works')
})

test('options that are not plain objects are refused with a coded TypeError, never taken as no options', () => {
  const { Snowflake, SnowflakeLayout, configure } = require('..')
  class WithGetter {
    get workerId() {
      return 8
    }
  }
  const nonEnumerable = Object.defineProperty({ lease: false }, 'workerId', { value: 8, enumerable: false })
  const refused = [
    [new Map([['workerId', 8]]), /found an object that is not a plain object/],
    [new Date(), /found an object that is not a plain object/],
    [[8], /found an object that is not a plain object/],
    [new WithGetter(), /found an object that is not a plain object/],
    [Object.create({ workerId: 8 }), /found an object that is not a plain object/],
    [nonEnumerable, /found an object with a non-enumerable or symbol key/],
    [{ lease: false, [Symbol('workerId')]: 8 }, /found an object with a non-enumerable or symbol key/],
  ]
  for (const [value, message] of refused) {
    for (const make of [v => new Snowflake(v), v => new SnowflakeLayout(v), v => configure(v)]) {
      expectError(() => make(value), { name: 'TypeError', code: 'ERR_SNOWID_INVALID_CONFIG', message })
    }
  }
  const getterThrows = {
    lease: false,
    get workerId() {
      throw new Error('boom')
    },
  }
  expectError(() => new Snowflake(getterThrows), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_ARGUMENT',
    message: /^options\.workerId: expected a value that can be read, found a getter or Proxy trap that threw$/,
  })
  const trap = new Proxy(
    {},
    {
      ownKeys() {
        throw new Error('trap')
      },
    },
  )
  expectError(() => new Snowflake(trap), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_ARGUMENT',
    message: /Proxy trap/,
  })
  // A null-prototype object is plain.
  const bare = Object.assign(Object.create(null), { lease: false, workerId: 8 })
  assert.equal(new Snowflake(bare).config().workerId, 8)
})

test('messages cut echoed input to 40 characters and say how long it was', () => {
  const { decode, parse, minIdAt, Snowflake, encode } = require('..')
  const huge = '7'.repeat(1 << 20)
  const shown = `"${'7'.repeat(40)}"... (1048576 characters)`
  const calls = [
    () => decode(huge),
    () => decode(`x${huge}`),
    () => parse(huge, 'hex'),
    () => minIdAt(huge),
    () => encode(1n, huge),
    () => new Snowflake({ lease: false, epoch: huge }),
    () => new Snowflake({ lease: false, epoch: `x${huge}` }),
    () => new Snowflake({ lease: false, onClockBack: huge }),
    () => new Snowflake({ [huge]: 1 }),
  ]
  for (const call of calls) {
    assert.throws(call, e => {
      assert.match(e.code, /^ERR_SNOWID_/)
      assert.ok(e.message.length < 400, `${e.message.length} characters: ${e.message.slice(0, 200)}`)
      return true
    })
  }
  assert.throws(
    () => decode(huge),
    e => e.message.includes(shown),
  )
  // An environment value too, set through process.env.
  const out = run(`${CAUGHT}; process.env.SNOWID_EPOCH = 'y'.repeat(1 << 20); out.e = caught(() => s.nextId())`)
  assert.equal(out.e.code, 'ERR_SNOWID_INVALID_CONFIG')
  assert.ok(out.e.message.length < 400, out.e.message.slice(0, 200))
  assert.ok(out.e.message.includes('... (1048576 characters)'), out.e.message)
})

test('every method works taken off its instance, and throws a coded TypeError on a foreign this', () => {
  const { Snowflake, SnowflakeLayout } = require('..')
  const g = new Snowflake({ lease: false, workerId: 5 })
  const { nextId, nextIdString, nextIds, nextIdStrings, timestampOf, decode, minIdAt, maxIdAt, config, stats } = g
  const id = nextId()
  assert.equal(decode(id).workerId, 5)
  assert.equal(decode(nextIdString()).workerId, 5)
  assert.equal(nextIds(2).length, 2)
  assert.equal(nextIdStrings(2).length, 2)
  assert.equal(timestampOf(id), decode(id).timestamp)
  assert.ok(minIdAt(timestampOf(id)) <= id && id <= maxIdAt(timestampOf(id)))
  assert.equal(config().workerId, 5)
  assert.equal(typeof stats().waits, 'number')
  const layout = new SnowflakeLayout()
  const { decode: read, timestampOf: at, minIdAt: lo, maxIdAt: hi, layout: spec } = layout
  assert.equal(read(id).workerId, 5)
  assert.equal(at(id), timestampOf(id))
  assert.ok(lo(at(id)) <= id && id <= hi(at(id)))
  assert.equal(spec().timestampBits, 41)
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
  for (const m of methods) {
    for (const self of [undefined, {}, layout, 7]) {
      expectError(() => Snowflake.prototype[m].call(self, 1), {
        name: 'TypeError',
        code: 'ERR_SNOWID_INVALID_ARGUMENT',
        message: new RegExp(`^Snowflake\\.prototype\\.${m}: expected to be called on a Snowflake`),
      })
    }
  }
  expectError(() => SnowflakeLayout.prototype.decode.call(g, 1n), {
    name: 'TypeError',
    code: 'ERR_SNOWID_INVALID_ARGUMENT',
  })
  // Subclasses keep working.
  class Tagged extends Snowflake {
    tag() {
      return `id-${this.nextIdString()}`
    }
  }
  const t = new Tagged({ lease: false, workerId: 6 })
  assert.ok(t instanceof Snowflake)
  assert.match(t.tag(), /^id-\d+$/)
  assert.equal(t.decode(t.nextId()).workerId, 6)
})

test('reading ids needs only the layout and epoch: unrelated env does not break decode, timestampOf, minIdAt, maxIdAt', () => {
  const out = run(
    `
    ${CAUGHT}
    out.decode = s.decode(1n << 22n).timestamp
    out.timestampOf = s.timestampOf(1n << 22n)
    out.range = String(s.minIdAt(1700000000000) <= s.maxIdAt(1700000000000))
    out.next = caught(() => s.nextId())
  `,
    { workerId: 'web-1', SNOWID_LEASE: 'sometimes' },
  )
  assert.equal(out.decode, 1580486400001)
  assert.equal(out.timestampOf, 1580486400001)
  assert.equal(out.range, 'true')
  assert.equal(out.next.code, 'ERR_SNOWID_INVALID_CONFIG')
})

test('the 10-year rule is for generating: a layout that has run out still reads ids', () => {
  // 37 timestamp bits from the default epoch ran out in 2024.
  const env = { SNOWID_DATACENTER_BITS: '10', SNOWID_SEQUENCE_BITS: '9' }
  const out = run(`${CAUGHT}; out.t = s.timestampOf(1n << 62n); out.next = caught(() => s.nextId())`, env)
  assert.equal(out.t, 1580486400000 + 2 ** 36)
  assert.match(out.next.message, /lasts at least 10 years/)
  const { SnowflakeLayout } = require('..')
  const expired = new SnowflakeLayout({ datacenterBits: 10, workerBits: 5, clockBackBits: 2, sequenceBits: 9 })
  assert.equal(expired.layout().expiresAt, 1580486400000 + 2 ** 37 - 1)
  expectError(() => new SnowflakeLayout({ datacenterBits: 30, workerBits: 30, clockBackBits: 3 }), {
    name: 'RangeError',
    code: 'ERR_SNOWID_INVALID_CONFIG',
    message: /at most 62 bits/,
  })
})

test('an epoch that can only be seconds or microseconds is refused, naming the unit; 0 and dates are not', () => {
  const { Snowflake, SnowflakeLayout } = require('..')
  const seconds = /found 1700000000 \(1970-01-20T16:13:20\.000Z\), .*it looks like seconds; in ms it is 1700000000000 /
  for (const epoch of [1700000000, '1700000000']) {
    expectError(() => new SnowflakeLayout({ epoch }), {
      name: 'RangeError',
      code: 'ERR_SNOWID_INVALID_CONFIG',
      message: seconds,
    })
    expectError(() => new Snowflake({ epoch, workerId: 1, lease: false }), {
      name: 'RangeError',
      code: 'ERR_SNOWID_INVALID_CONFIG',
      message: seconds,
    })
  }
  expectError(() => new SnowflakeLayout({ epoch: 1288834974657000 }), {
    name: 'RangeError',
    code: 'ERR_SNOWID_INVALID_CONFIG',
    message: /it looks like microseconds; in ms it is 1288834974657 \(2010-11-04T01:42:54\.657Z\)$/,
  })
  // The Unix epoch, 2000-01-01, Twitter's; and a date before 2000 given as a date.
  for (const [epoch, ms] of [
    [0, 0],
    [946684800000, 946684800000],
    [1288834974657, 1288834974657],
    ['1995-01-01', 788918400000],
    [new Date(1700000000), 1700000000],
  ]) {
    assert.equal(new SnowflakeLayout({ epoch }).layout().epoch, ms, String(epoch))
  }
  const out = run(`${CAUGHT}; out.next = caught(() => s.nextId())`, { SNOWID_EPOCH: '1700000000' })
  assert.equal(out.next.code, 'ERR_SNOWID_INVALID_CONFIG')
  assert.match(out.next.message, /^SNOWID_EPOCH: .*it looks like seconds; in ms it is 1700000000000 /)
})

test("SnowflakeLayout reads Discord's documented id and Instagram's scheme exactly", () => {
  const { SnowflakeLayout } = require('..')
  // Discord: epoch 2015-01-01, 5 bits of internal worker id, 5 of process id, 12 of increment.
  const discord = new SnowflakeLayout({
    epoch: 1420070400000,
    datacenterBits: 5,
    workerBits: 5,
    clockBackBits: 0,
    sequenceBits: 12,
  })
  const d = discord.decode(175928847299117063n)
  assert.equal(new Date(d.timestamp).toISOString(), '2016-04-30T11:18:25.796Z')
  assert.deepEqual([d.datacenterId, d.workerId, d.sequence], [1, 0, 7])
  assert.equal(discord.decode('175928847299117063').timestamp, d.timestamp)
  // Instagram: 40 bits of ms since 2011-08-24T21:07:01.721Z, a 13-bit shard, a 10-bit sequence.
  const instagram = new SnowflakeLayout({
    epoch: '2011-08-24T21:07:01.721Z',
    datacenterBits: 13,
    workerBits: 0,
    clockBackBits: 0,
    sequenceBits: 10,
  })
  const t = Date.parse('2012-09-01T00:00:00Z')
  const id = (BigInt(t - 1314220021721) << 23n) | (1341n << 10n) | 7n
  assert.deepEqual(instagram.decode(id), {
    id: String(id),
    timestamp: t,
    datacenterId: 1341,
    workerId: 0,
    clockBack: 0,
    sequence: 7,
  })
  assert.equal(instagram.layout().timestampBits, 40)
})

test('SnowflakeLayout reads no environment and takes no lease', () => {
  const out = run(
    `
    const layout = new s.SnowflakeLayout()
    out.spec = layout.layout()
    out.recorded = require('node:fs').readdirSync(process.env.SNOWID_LEASE_DIR).length
  `,
    { SNOWID_SEQUENCE_BITS: 'not a number', SNOWID_EPOCH: '2021-01-01' },
  )
  assert.equal(out.spec.sequenceBits, 12)
  assert.equal(out.spec.epoch, 1580486400000)
  assert.equal(out.recorded, 0)
})

test('configuration assigned to process.env from JS counts, and each variable is read once for the default generator', () => {
  const out = run(`
    process.env.SNOWID_WORKER_ID = '7'
    process.env.SNOWID_SEQUENCE_BITS = '10'
    out.before = s.decode(1n << 10n).sequence
    process.env.SNOWID_SEQUENCE_BITS = '12' // already read by decode: the layout stays
    process.env.SNOWID_DATACENTER_ID = '2' // not read yet: counts
    const id = s.nextId()
    out.fields = s.decode(id)
    out.config = s.config()
  `)
  assert.equal(out.before, 0, 'sequenceBits 10 put bit 10 above the sequence')
  assert.deepEqual([out.fields.workerId, out.fields.datacenterId], [7, 2])
  assert.equal(out.config.sequenceBits, 10)
  assert.deepEqual([out.config.sources.workerId, out.config.sources.sequenceBits], ['env', 'env'])
})

test(
  'a worker_thread that configures the default generator first uses its own process.env, and the process shares it',
  wasiSkip("each worker_thread instantiates the wasm module afresh, so threads do not share the process's generator"),
  () => {
    const r = runNode(`
    const s = require('.')
    const { Worker } = require('node:worker_threads')
    const code = "process.env.SNOWID_WORKER_ID = '9'; const s = require(process.cwd()); require('node:worker_threads').parentPort.postMessage(s.decode(s.nextId()).workerId)"
    const w = new Worker(code, { eval: true })
    w.once('error', (e) => { console.error(e); process.exitCode = 1 })
    w.once('message', (inWorker) => {
      const inMain = s.decode(s.nextId()).workerId
      console.log(JSON.stringify({ inWorker, inMain, mainEnv: process.env.SNOWID_WORKER_ID ?? null }))
    })
  `)
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { inWorker: 9, inMain: 9, mainEnv: null })
  },
)

test('a refused batch starts nothing: configure() still works after nextIds(0)', () => {
  const out = run(`
    ${CAUGHT}
    out.batch = caught(() => s.nextIds(0))
    out.strings = caught(() => s.nextIdStrings(-1))
    out.configure = caught(() => s.configure({ workerId: 4 }))
    out.worker = s.decode(s.nextId()).workerId
  `)
  assert.equal(out.batch.code, 'ERR_SNOWID_INVALID_ARGUMENT')
  assert.equal(out.strings.code, 'ERR_SNOWID_INVALID_ARGUMENT')
  assert.equal(out.configure, null)
  assert.equal(out.worker, 4)
})

test('huge bigints are refused by their size, without reading them', () => {
  const { decode, encode } = require('..')
  const huge = 2n ** 1000000n
  for (const value of [huge, -huge, 2n ** 64n, 2n ** 63n]) {
    expectError(() => decode(value), { name: 'RangeError', code: 'ERR_SNOWID_INVALID_ID' })
    expectError(() => encode(value, 'hex'), { name: 'RangeError', code: 'ERR_SNOWID_INVALID_ID' })
  }
  assert.equal(decode(0n).id, '0')
  assert.equal(decode(2n ** 63n - 1n).id, '9223372036854775807')
})

// The generated loader tries NAPI_RS_NATIVE_LIBRARY_PATH alone when it is set; a path with no file fails the native
// load as an unsupported platform would. The fixture hides the WASI package as well.
const NO_NATIVE = { NAPI_RS_NATIVE_LIBRARY_PATH: '/nonexistent/snowid.node' }
const NOTHING = {
  ...NO_NATIVE,
  NAPI_RS_FORCE_WASI: undefined,
  NODE_OPTIONS: `--require ${path.join(__dirname, 'fixtures', 'no-wasm.js')}`,
}

test('no binary for this platform: a coded error that names the platform, lists the supported ones and says how to build', () => {
  const r = runNode(
    `try { require('.'); console.log('loaded') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, cause: String(e.cause) })) }`,
    NOTHING,
  )
  assert.equal(r.status, 0, r.stderr)
  const e = JSON.parse(r.stdout)
  assert.equal(e.code, 'ERR_SNOWID_NO_BINARY')
  assert.match(
    e.message,
    new RegExp(
      `^snowid: no native binary loads on ${process.platform}-${process.arch}( \\((glibc [0-9.]+|musl)\\))? under Node v`,
    ),
  )
  // Every platform package, and the WASI one.
  const { optionalDependencies, dependencies } = require('../package.json')
  for (const target of Object.keys({ ...optionalDependencies, ...dependencies }).map(p => p.slice('snowid-'.length))) {
    assert.ok(e.message.includes(target), target)
  }
  assert.match(e.message, /build from source: install Rust/)
  assert.doesNotMatch(e.message, /npm has a bug/)
  assert.match(e.cause, /Cannot find native binding/)
  // The subpath modules fail the same way.
  const sub = runNode(`try { require('snowid/redis') } catch (e) { console.log(e.code) }`, NOTHING)
  assert.equal(sub.stdout.trim(), 'ERR_SNOWID_NO_BINARY', sub.stderr)
})

test('a binary that needs a newer glibc: the linker’s line is in the message, not four causes deep', () => {
  const line = "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.99' not found (required by /x/snowid.node)"
  const r = runNode(
    `process.dlopen = () => { throw new Error(${JSON.stringify(line)}) }
     try { require('.'); console.log('loaded') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`,
    // With the WASI package hidden: otherwise the loader falls back to it, and loads.
    { NAPI_RS_FORCE_WASI: undefined, NODE_OPTIONS: NOTHING.NODE_OPTIONS },
  )
  assert.equal(r.status, 0, r.stderr)
  const e = JSON.parse(r.stdout)
  assert.equal(e.code, 'ERR_SNOWID_NO_BINARY')
  assert.match(
    e.message,
    /needs a newer glibc than this system has \(version `GLIBC_2\.99' not found \(required by \/x\/snowid\.node\)\)/,
  )
})
