'use strict'

// The package in realms of its own, as Jest (each test file in a `vm` context, with a copy of process.env) and
// Vitest's vm pools load it (__test__/realms.js): object literals of that realm are options, its errors are that
// realm's TypeError, RangeError and Error, and the variables it reads are that realm's process.env, own properties
// only. The default generator is the process's, so each case that configures it runs in a child process.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { ROOT, freshLeaseDir, isolateLeases, runNode, wasiSkip } = require('./helpers.js')
const { realm } = require('./realms.js')

isolateLeases()

// The runners open the native binary with the host's require, so every realm shares one module instance. The WASI
// build is JS, which they load in each realm like the package's own: each realm has a binding of its own there.
const REALMS = wasiSkip('the WASI build is loaded in each realm, which then has a binding of its own')

/** Runs `body` (code that has `realm`, `snowid` and `out`) in a child, in a fresh realm of `runner`; returns `out`. */
function inChild(runner, body, env = {}) {
  const r = runNode(
    `const { realm: newRealm } = require('./__test__/realms.js')
     const realm = newRealm(${JSON.stringify(runner)})
     const snowid = realm.require('.')
     const out = {}
     const thrown = fn => { try { fn() } catch (e) { return e } throw new Error('it did not throw') }
     ${body}
     console.log(JSON.stringify(out))`,
    env,
  )
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

/** The error `fn` throws. */
function thrown(fn, what = 'it') {
  try {
    fn()
  } catch (e) {
    return e
  }
  assert.fail(`${what}: no error thrown`)
}

for (const runner of ['jest', 'vitest']) {
  test(`${runner}: object literals of the realm are options, to the classes and to configure()`, REALMS, () => {
    const r = realm(runner)
    const { Snowflake, SnowflakeLayout } = r.require(ROOT)
    r.context.snowid = r.require(ROOT)
    const made = r.run(`({
      snowflake: new snowid.Snowflake({ datacenterId: 1, workerId: 3, lease: false }),
      layout: new snowid.SnowflakeLayout({ epoch: 0 }),
      nullProto: new snowid.SnowflakeLayout(Object.assign(Object.create(null), { epoch: '2024-01-01' })),
    })`)
    assert.ok(made.snowflake instanceof Snowflake)
    const decoded = made.snowflake.decode(made.snowflake.nextId())
    assert.deepEqual([decoded.datacenterId, decoded.workerId], [1, 3])
    assert.ok(made.layout instanceof SnowflakeLayout)
    assert.equal(made.layout.layout().epoch, 0)
    assert.equal(made.nullProto.layout().epoch, Date.parse('2024-01-01'))
    // Objects the host made are options too (Jest's process.env copy and structuredClone are the host's).
    assert.equal(new Snowflake({ workerId: 4, lease: false }).config().workerId, 4)
    // Still refused: what is not a plain object, of either realm.
    for (const code of ['new Map()', '[]', 'new (class Options {})()', 'new Date()']) {
      const e = thrown(() => r.run(`new snowid.Snowflake(${code})`))
      assert.equal(e.code, 'ERR_SNOWID_INVALID_CONFIG', code)
      assert.ok(e instanceof r.run('TypeError'), code)
    }
    const out = inChild(
      runner,
      `snowid.configure(realm.run('({ workerId: 9, lease: false })'))
       out.workerId = snowid.decode(snowid.nextId()).workerId`,
    )
    assert.equal(out.workerId, 9)
  })

  test(
    `${runner}: snowid's errors are of the realm's classes, on every path, and isSnowidError knows them`,
    REALMS,
    () => {
      const r = realm(runner)
      const snowid = r.require(ROOT)
      const [RealmTypeError, RealmRangeError, RealmError] = ['TypeError', 'RangeError', 'Error'].map(r.run)
      assert.notEqual(RealmTypeError, TypeError)
      const generator = new snowid.Snowflake({ workerId: 5, lease: false })
      const layout = new snowid.SnowflakeLayout()
      // A lease directory under a regular file: absolute on every platform, and never usable.
      const file = path.join(freshLeaseDir(), 'file')
      fs.writeFileSync(file, '')
      const unstartable = new snowid.Snowflake({ leaseDir: path.join(file, 'snowid') })
      const cases = [
        ['decode (module)', () => snowid.decode('x'), RealmTypeError],
        ['timestampOf (module)', () => snowid.timestampOf(-1), RealmRangeError],
        ['nextIds (module)', () => snowid.nextIds(0), RealmRangeError],
        ['nextIdStrings (module)', () => snowid.nextIdStrings(2 ** 40), RealmRangeError],
        ['minIdAt (module)', () => snowid.minIdAt(true), RealmTypeError],
        ['maxIdAt (module)', () => snowid.maxIdAt(-1), RealmRangeError],
        ['configure', () => snowid.configure({ workerId: -1 }), RealmRangeError],
        ['workerSlots', () => snowid.workerSlots({ SNOWID_WORKER_BITS: 'x' }), RealmTypeError],
        ['encode', () => snowid.encode(1n, 'base64'), RealmRangeError],
        ['parse', () => snowid.parse('!', 'hex'), RealmTypeError],
        ['new Snowflake', () => new snowid.Snowflake({ workerId: 99 }), RealmRangeError],
        ['new SnowflakeLayout', () => new snowid.SnowflakeLayout({ epoch: 1700000000 }), RealmRangeError],
        ['Snowflake#decode', () => generator.decode('x'), RealmTypeError],
        ['Snowflake#timestampOf', () => generator.timestampOf(-1), RealmRangeError],
        ['Snowflake#nextIds', () => generator.nextIds(0), RealmRangeError],
        ['Snowflake#nextIdStrings', () => generator.nextIdStrings(0), RealmRangeError],
        ['Snowflake#minIdAt', () => generator.minIdAt(-1), RealmRangeError],
        ['Snowflake#nextId, starting', () => unstartable.nextId(), RealmError],
        ['Snowflake#nextIdString, starting', () => unstartable.nextIdString(), RealmError],
        ['Snowflake#nextIds(2), starting', () => unstartable.nextIds(2), RealmError],
        ['Snowflake#nextIdStrings(2), starting', () => unstartable.nextIdStrings(2), RealmError],
        ['Snowflake#config, starting', () => unstartable.config(), RealmError],
        ['SnowflakeLayout#decode', () => layout.decode(-1), RealmRangeError],
        ['SnowflakeLayout#timestampOf', () => layout.timestampOf('x'), RealmTypeError],
        ['SnowflakeLayout#maxIdAt', () => layout.maxIdAt('soon'), RealmTypeError],
        ['a method off its instance', () => snowid.Snowflake.prototype.nextId.call({}), RealmTypeError],
      ]
      for (const [what, fn, Class] of cases) {
        const e = thrown(fn, what)
        assert.ok(e instanceof Class, `${what}: ${e && e.constructor && e.constructor.name} of another realm: ${e}`)
        assert.ok(e instanceof RealmError, what)
        assert.match(e.code, /^ERR_SNOWID_/, what)
        assert.ok(snowid.isSnowidError(e), `${what}: the realm's isSnowidError`)
        assert.ok(require(ROOT).isSnowidError(e), `${what}: the host's isSnowidError`)
      }
    },
  )

  test(`${runner}: the module's nextId throws the realm's errors when its generator cannot start`, REALMS, () => {
    const out = inChild(
      runner,
      `for (const [name, call] of [['nextId', () => snowid.nextId()], ['nextIdString', () => snowid.nextIdString()],
                                    ['nextIds', () => snowid.nextIds(2)], ['config', () => snowid.config()]]) {
         const e = thrown(call)
         out[name] = { realm: e instanceof realm.run('RangeError'), code: e.code, message: e.message }
       }`,
      { SNOWID_WORKER_ID: '32' },
    )
    for (const name of ['nextId', 'nextIdString', 'nextIds', 'config']) {
      assert.deepEqual(out[name], {
        realm: true,
        code: 'ERR_SNOWID_INVALID_CONFIG',
        message: 'SNOWID_WORKER_ID: expected an integer from 0 to 31 (workerBits is 5), found "32"',
      })
    }
  })
}

test(
  "jest: the variables are the realm's process.env, which setup files assign and the OS environment never sees",
  REALMS,
  () => {
    const out = inChild(
      'jest',
      `realm.process.env.SNOWID_WORKER_ID = '11'
     realm.process.env.SNOWID_LEASE = 'off'
     out.os = process.env.SNOWID_WORKER_ID ?? null
     const c = snowid.config()
     out.config = [c.workerId, c.sources.workerId, c.lease]
     out.decoded = snowid.decode(snowid.nextId()).workerId
     realm.process.env.SNOWID_WORKER_ID = '12'
     out.snowflake = new snowid.Snowflake().config().workerId
     out.slots = snowid.workerSlots().lease`,
    )
    assert.deepEqual(out, { os: null, config: [11, 'env', false], decoded: 11, snowflake: 12, slots: false })
    // A bad value there is refused as it would be in the OS environment.
    const bad = inChild(
      'jest',
      `realm.process.env.SNOWID_EPOCH = '1700000000'
     const e = thrown(() => snowid.decode(1n))
     out.error = [e instanceof realm.run('RangeError'), e.code, e.message.slice(e.message.indexOf('found'))]`,
    )
    assert.deepEqual(bad.error, [
      true,
      'ERR_SNOWID_INVALID_CONFIG',
      'found 1700000000 (1970-01-20T16:13:20.000Z), a number of ms before 2000: it looks like seconds; in ms it is ' +
        '1700000000000 (2023-11-14T22:13:20.000Z)',
    ])
  },
)

test("the environment's prototype chain is never read in a realm, for the variables or the options", REALMS, () => {
  const out = inChild(
    'jest',
    `for (const proto of [Object.prototype, realm.run('Object.prototype')]) {
       proto.SNOWID_WORKER_ID = '9'
       proto.SNOWID_DATACENTER_ID = '2'
       proto.workerId = 8
       proto.datacenterId = 1
     }
     realm.process.env.SNOWID_LEASE = 'off'
     const c = snowid.config()
     out.module = [c.workerId, c.sources.workerId, c.datacenterId, c.sources.datacenterId]
     const s = new snowid.Snowflake(realm.run('({ clockBack: 1 })')).config()
     out.snowflake = [s.workerId, s.sources.workerId, s.datacenterId, s.sources.datacenterId]`,
  )
  assert.deepEqual(out, { module: [0, 'default', 0, 'default'], snowflake: [0, 'default', 0, 'default'] })
})
