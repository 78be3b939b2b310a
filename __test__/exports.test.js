'use strict'

// The declared exports of every entry and subpath (read from its .d.ts by TypeScript) equal what Node exports at
// runtime, both ways, for `require` and for `import *`: a name typed but not exported compiles and then fails, and a
// name exported but not typed is unusable from TypeScript.

const test = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const ts = require('typescript')
const { pathToFileURL } = require('node:url')

const ROOT = path.join(__dirname, '..')
const pkg = require('../package.json')

const entries = Object.entries(pkg.exports).filter(([, target]) => typeof target === 'object')

// The names a .d.ts declares as values (functions, classes, consts), which is what can be imported at runtime.
function declaredValues(dts) {
  const program = ts.createProgram([dts], { noEmit: true, strict: true, types: [], skipLibCheck: true })
  const checker = program.getTypeChecker()
  const source = program.getSourceFile(dts)
  const symbol = checker.getSymbolAtLocation(source)
  return checker
    .getExportsOfModule(symbol)
    .filter(s => {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s
      return (target.flags & ts.SymbolFlags.Value) !== 0
    })
    .map(s => s.getName())
    .sort()
}

// Node 22 and later add `module.exports` to the namespace of a CommonJS module; `default` is the whole object.
function namespaceNames(ns) {
  return Object.keys(ns)
    .filter(k => k !== 'default' && k !== 'module.exports')
    .sort()
}

for (const [subpath, target] of entries) {
  const specifier = path.posix.join(pkg.name, subpath)
  test(`${specifier}: its .d.ts declares exactly what require and import * give`, async () => {
    const declared = declaredValues(path.join(ROOT, target.types))
    assert.ok(declared.length > 0, `${target.types} declares no values`)
    const required = Object.keys(require(path.join(ROOT, target.default))).sort()
    assert.deepStrictEqual(required, declared, `require('${specifier}')`)
    const imported = namespaceNames(await import(pathToFileURL(path.join(ROOT, target.default)).href))
    assert.deepStrictEqual(imported, declared, `import * from '${specifier}'`)
  })
}

test('the package entry and types are the root index.js and index.d.ts', () => {
  assert.strictEqual(pkg.main, 'index.js')
  assert.strictEqual(pkg.types, 'index.d.ts')
  assert.deepStrictEqual(pkg.exports['.'], { types: './index.d.ts', default: './index.js' })
})

test('isSnowidError tells snowid errors from others', () => {
  const snowid = require('..')
  let thrown
  try {
    snowid.decode('not an id')
  } catch (e) {
    thrown = e
  }
  assert.ok(thrown && snowid.isSnowidError(thrown), `decode('not an id') threw ${thrown}`)
  assert.strictEqual(snowid.isSnowidError(new Error('x')), false)
  assert.strictEqual(snowid.isSnowidError({ code: 'ERR_SNOWID_INVALID_ID' }), false)
  assert.strictEqual(snowid.isSnowidError(undefined), false)
})
