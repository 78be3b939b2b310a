'use strict'

// The one registry of error codes (lib/codes.js) against everywhere a code is written: the sources that throw them,
// index.d.ts's SnowidErrorCode, the subpaths' .d.ts lists, and docs/errors.md's table; and isSnowidError, which reads
// the registry, against errors the package really throws and against values built to make it throw.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const vm = require('node:vm')
const ts = require('typescript')

const ROOT = path.join(__dirname, '..')
const { CODES } = require('../lib/codes.js')
const { isSnowidError } = require('..')

const CODE = /ERR_SNOWID_[A-Z0-9_]+/g

/** The files under `dir` (relative to the package root), recursively, whose names end with one of `exts`. */
function filesUnder(dir, exts) {
  const abs = path.join(ROOT, dir)
  if (!fs.existsSync(abs)) return []
  return fs
    .readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter(e => e.isFile() && exts.some(x => e.name.endsWith(x)))
    .map(e => path.relative(ROOT, path.join(e.parentPath ?? e.path, e.name)))
}

/** Each code written in `files`, with the files that write it. */
function codesIn(files) {
  const where = new Map()
  for (const file of files) {
    for (const [code] of fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(CODE)) {
      if (!where.has(code)) where.set(code, new Set())
      where.get(code).add(file)
    }
  }
  return where
}

const sorted = codes => [...codes].sort()

test('the registry is a frozen, sorted list of distinct codes', () => {
  assert.ok(Object.isFrozen(CODES))
  assert.ok(CODES.length >= 21, `only ${CODES.length} codes`)
  assert.deepEqual([...CODES], sorted(new Set(CODES)))
  for (const code of CODES) assert.match(code, /^ERR_SNOWID_[A-Z0-9_]+$/)
})

test('the registry holds exactly the codes the sources write', () => {
  const sources = [
    ...filesUnder('src', ['.rs']),
    ...filesUnder('lib', ['.js']).filter(f => f !== path.join('lib', 'codes.js')),
    'index.js',
    ...filesUnder('bin', ['.js']),
    ...filesUnder(path.join('npm', 'wasm32-wasi'), ['.cjs', '.js', '.mjs']),
  ]
  assert.ok(sources.includes(path.join('src', 'core', 'error.rs')), 'the scan reaches src/core/error.rs')
  const found = codesIn(sources)
  const unregistered = sorted(found.keys()).filter(c => !CODES.includes(c))
  assert.deepEqual(
    unregistered.map(c => `${c} (${sorted(found.get(c)).join(', ')})`),
    [],
    'codes written in the sources but missing from lib/codes.js',
  )
  const unused = CODES.filter(c => !found.has(c))
  assert.deepEqual(unused, [], 'codes in lib/codes.js that no source writes')
})

test("index.d.ts's SnowidErrorCode is the registry", () => {
  const file = path.join(ROOT, 'index.d.ts')
  const program = ts.createProgram([file], { noEmit: true, strict: true, types: [], skipLibCheck: true })
  const checker = program.getTypeChecker()
  const alias = checker
    .getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)))
    .find(s => s.getName() === 'SnowidErrorCode')
  assert.ok(alias, 'index.d.ts exports SnowidErrorCode')
  const type = checker.getDeclaredTypeOfSymbol(alias)
  const members = type.isUnion() ? type.types : [type]
  assert.ok(
    members.every(t => t.isStringLiteral()),
    'SnowidErrorCode is a union of string literals',
  )
  assert.deepEqual(sorted(members.map(t => t.value)), [...CODES])
})

test('every code a .d.ts or a doc names is in the registry', () => {
  const files = ['index.d.ts', ...filesUnder('lib', ['.d.ts']), 'README.md', ...filesUnder('docs', ['.md'])]
  const found = codesIn(files)
  const unknown = sorted(found.keys()).filter(c => !CODES.includes(c))
  assert.deepEqual(
    unknown.map(c => `${c} (${sorted(found.get(c)).join(', ')})`),
    [],
  )
})

test("docs/errors.md's table has one row per code of the registry", () => {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'errors.md'), 'utf8')
  const rows = [...text.matchAll(/^\| `(ERR_SNOWID_[A-Z0-9_]+)` \|/gm)].map(m => m[1])
  assert.deepEqual(sorted(rows), [...CODES])
})

test('isSnowidError is true for an Error, TypeError or RangeError with each code of the registry', () => {
  for (const code of CODES) {
    for (const Class of [Error, TypeError, RangeError]) {
      const e = new Class('x')
      e.code = code
      assert.equal(isSnowidError(e), true, `${Class.name} ${code}`)
    }
  }
})

test('isSnowidError is false for what is not a snowid error', () => {
  const coded = code => Object.assign(new Error('x'), { code })
  for (const value of [
    undefined,
    null,
    0,
    1n,
    'ERR_SNOWID_INVALID_ID',
    Symbol('ERR_SNOWID_INVALID_ID'),
    () => {},
    { code: 'ERR_SNOWID_INVALID_ID' },
    new Error('x'),
    coded('ERR_SNOWID_'),
    coded('ERR_SNOWID_NOT_A_CODE'),
    coded('ERR_INVALID_ARG_TYPE'),
    coded(Object('ERR_SNOWID_INVALID_ID')),
  ]) {
    assert.equal(isSnowidError(value), false, String(typeof value === 'symbol' ? value.description : value))
  }
})

test('isSnowidError is true for errors the package throws with the codes it missed before', async () => {
  const { acquireWorkerId } = require('../lib/mysql.js')
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' })
  const down = {
    query: async () => {
      throw refused
    },
  }
  await assert.rejects(
    acquireWorkerId({ client: down }),
    e => e.code === 'ERR_SNOWID_MYSQL_UNAVAILABLE' && isSnowidError(e),
  )

  // A database whose table exists but is no base table (a view, say).
  const answers = [
    [/DATABASE\(\)/, [{ db: 'app' }]],
    [/COUNT\(\*\)/, [{ n: 1 }]],
    [/SELECT engine/, []],
  ]
  const view = {
    query: async text => {
      const answer = answers.find(([re]) => re.test(text))
      if (!answer) throw new Error(`unexpected query ${text}`)
      return [answer[1]]
    },
  }
  await assert.rejects(
    acquireWorkerId({ client: view }),
    e => e.code === 'ERR_SNOWID_STORE_TABLE_INVALID' && isSnowidError(e),
  )
})

test('isSnowidError is true for a snowid error made in another realm', () => {
  // As under Jest or in a vm context, where the code that catches an error is not in the realm that made it.
  const foreign = vm.runInNewContext("const e = new RangeError('x'); e.code = 'ERR_SNOWID_LEASE_UNSUPPORTED'; e")
  assert.equal(foreign instanceof Error, false, 'the error is of another realm')
  assert.equal(isSnowidError(foreign), true)
  assert.equal(isSnowidError(vm.runInNewContext("({ code: 'ERR_SNOWID_INVALID_ID' })")), false)
  assert.equal(isSnowidError(vm.runInNewContext("Object.assign(new Error('x'), { code: 'ERR_SNOWID_NOPE' })")), false)
})

test('isSnowidError never throws: revoked Proxies, throwing traps and getters give false', () => {
  const snowidError = () => Object.assign(new Error('x'), { code: 'ERR_SNOWID_INVALID_ID' })
  const boom = () => {
    throw new Error('trap')
  }
  const revocable = Proxy.revocable(snowidError(), {})
  revocable.revoke()
  const revokedFunction = Proxy.revocable(function f() {}, {})
  revokedFunction.revoke()
  const cases = {
    'a revoked Proxy of a snowid error': revocable.proxy,
    'a revoked Proxy of a function': revokedFunction.proxy,
    'a Proxy whose getPrototypeOf trap throws': new Proxy(snowidError(), { getPrototypeOf: boom }),
    'a Proxy whose get trap throws': new Proxy(snowidError(), { get: boom }),
    'a Proxy whose every trap throws': new Proxy(snowidError(), {
      getPrototypeOf: boom,
      get: boom,
      has: boom,
      getOwnPropertyDescriptor: boom,
      ownKeys: boom,
    }),
    'an Error whose code getter throws': Object.defineProperty(new Error('x'), 'code', { get: boom }),
    'a foreign Error whose code getter throws': vm.runInNewContext(
      "Object.defineProperty(new Error('x'), 'code', { get() { throw new Error('getter') } })",
    ),
    'an object whose prototype chain is a throwing Proxy': Object.create(new Proxy({}, { getPrototypeOf: boom })),
  }
  for (const [name, value] of Object.entries(cases)) {
    let result
    assert.doesNotThrow(() => {
      result = isSnowidError(value)
    }, name)
    assert.equal(result, false, name)
  }
})
