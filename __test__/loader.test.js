'use strict'

// lib/native.js, the loader's messages and its fallback policy, on a copy of the package in a temporary folder:
// - a native binary that is installed but cannot load (here: one that needs a library no system has) never becomes
//   WASI without a word: a SnowidWarning SNOWID_NATIVE_UNLOADABLE quotes the dynamic linker, and without the WASI
//   build the ERR_SNOWID_NO_BINARY message does;
// - a platform package that is not installed falls back quietly, as documented;
// - a Node older than `engines` is named, with the way out.
// The cases that load the WASI build skip until `npm run build:wasm` has made it (.ci/run runs this file after it).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const { ROOT, cleanEnv } = require('./helpers.js')

const HOST =
  process.platform === 'linux' && process.arch === 'x64' && process.report.getReport().header.glibcVersionRuntime
const WASM = path.join(ROOT, 'npm', 'wasm32-wasi', 'snowid.wasm32-wasi.wasm')
const NEEDS_HOST = { skip: !HOST && 'a binary that cannot load is made for linux-x64 with glibc only' }
const NEEDS_WASM = {
  skip:
    NEEDS_HOST.skip ||
    (!fs.existsSync(WASM) && `${path.relative(ROOT, WASM)} is not built: run \`npm run build:wasm\``),
}
if (NEEDS_WASM.skip) process.stderr.write(`\n*** SKIPPED: the loader's WASI cases: ${NEEDS_WASM.skip} ***\n\n`)

const MISSING = 'libsnowid-test-missing.so'
let dir

// A copy of the package at `name`, with `native` as its root binary (or none), the WASI package linked in (or not),
// and `engines` in its package.json.
function packageCopy(name, { native, wasi, engines }) {
  const pkg = path.join(dir, name)
  fs.mkdirSync(path.join(pkg, 'node_modules'), { recursive: true })
  for (const file of ['index.js', 'binding.js']) fs.copyFileSync(path.join(ROOT, file), path.join(pkg, file))
  fs.cpSync(path.join(ROOT, 'lib'), path.join(pkg, 'lib'), { recursive: true })
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  if (engines) manifest.engines = { node: engines }
  fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify(manifest))
  if (native) fs.copyFileSync(native, path.join(pkg, 'snowid.linux-x64-gnu.node'))
  if (wasi) fs.symlinkSync(path.join(ROOT, 'npm', 'wasm32-wasi'), path.join(pkg, 'node_modules', 'snowid-wasm32-wasi'))
  return pkg
}

// Loads the copy at `pkg` in a new Node and reports the build that loaded, the warnings, or the error.
const PROBE = `
const warnings = []
process.on('warning', w => warnings.push({ name: w.name, code: w.code, message: w.message }))
let out
try {
  const s = require(process.argv[1])
  out = { target: require(process.argv[1] + '/binding.js').__napiBindingTarget, id: typeof s.nextId() }
} catch (e) {
  out = { code: e.code, message: e.message }
}
setImmediate(() => console.log(JSON.stringify({ ...out, warnings: warnings.filter(w => w.name !== 'ExperimentalWarning') })))
`

// The loader's own variables are the test's to set: `npm run test:wasi` runs this file with NAPI_RS_FORCE_WASI=error.
const LOADER_VARS = {
  NAPI_RS_FORCE_WASI: undefined,
  NAPI_RS_WASI_FLAVOR: undefined,
  NAPI_RS_NATIVE_LIBRARY_PATH: undefined,
}

function load(pkg, env = {}) {
  const r = spawnSync(process.execPath, ['-e', PROBE, pkg], {
    env: cleanEnv({
      ...LOADER_VARS,
      SNOWID_LEASE: 'off',
      SNOWID_WORKER_ID: '3',
      SNOWID_LEASE_DIR: path.join(dir, 'lease'),
      ...env,
    }),
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

test.before(() => {
  if (!HOST) return
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-loader-'))
  // A shared object that needs a library which is gone by the time it loads: linked against a stub, then the stub
  // is removed.
  fs.writeFileSync(path.join(dir, 'missing.c'), 'int snowid_test_missing(void) { return 1; }\n')
  fs.writeFileSync(
    path.join(dir, 'broken.c'),
    'extern int snowid_test_missing(void);\nint f(void) { return snowid_test_missing(); }\n',
  )
  const cc = (...args) => {
    const r = spawnSync('cc', args, { cwd: dir, encoding: 'utf8' })
    assert.equal(r.status, 0, `cc ${args.join(' ')}: ${r.stderr}`)
  }
  cc('-shared', '-fPIC', '-o', MISSING, 'missing.c')
  cc('-shared', '-fPIC', '-o', 'unloadable.so', 'broken.c', `-L${dir}`, `-l:${MISSING}`)
  fs.rmSync(path.join(dir, MISSING))
})

test.after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

test('a native binary that cannot load falls back to WASI with a warning that quotes its error', NEEDS_WASM, () => {
  const pkg = packageCopy('broken-wasi', { native: path.join(dir, 'unloadable.so'), wasi: true })
  const r = load(pkg)
  assert.equal(r.target, 'wasm32-wasi')
  assert.equal(r.id, 'bigint')
  assert.equal(r.warnings.length, 1, JSON.stringify(r.warnings))
  const [w] = r.warnings
  assert.equal(w.name, 'SnowidWarning')
  assert.equal(w.code, 'SNOWID_NATIVE_UNLOADABLE')
  assert.match(w.message, /the native binary snowid-linux-x64-gnu is installed but does not load under Node v/)
  assert.ok(w.message.includes(`${MISSING}: cannot open shared object file`), w.message)
  assert.match(w.message, /NAPI_RS_FORCE_WASI=true/)
  // Chosen on purpose, the WASI build loads without a word.
  assert.deepEqual(load(pkg, { NAPI_RS_FORCE_WASI: 'true' }).warnings, [])
})

test('a native binary that cannot load, and no WASI build: ERR_SNOWID_NO_BINARY quotes its error', NEEDS_HOST, () => {
  const r = load(packageCopy('broken', { native: path.join(dir, 'unloadable.so') }))
  assert.equal(r.code, 'ERR_SNOWID_NO_BINARY')
  assert.match(r.message, /the native binary snowid-linux-x64-gnu is installed but does not load on linux-x64/)
  assert.ok(r.message.includes(`${MISSING}: cannot open shared object file`), r.message)
})

test('a platform package that is not installed falls back to WASI quietly', NEEDS_WASM, () => {
  const r = load(packageCopy('lost', { wasi: true }))
  assert.equal(r.target, 'wasm32-wasi')
  assert.deepEqual(r.warnings, [])
})

test('a Node older than engines is named, with the way out', NEEDS_HOST, () => {
  const r = load(packageCopy('old-node', { engines: '>=99' }))
  assert.equal(r.code, 'ERR_SNOWID_NO_BINARY')
  assert.match(
    r.message,
    new RegExp(`Node ${process.version.replace(/\./g, '\\.')} is outside snowid's engines \\(node >=99\\)`),
  )
  assert.match(r.message, /skipped the platform package/)
  assert.match(r.message, /Use Node 99 or later/)
})

test('on WASI, a Node older than engines gets a warning that names it', NEEDS_WASM, () => {
  const r = load(packageCopy('old-node-wasi', { engines: '>=99', wasi: true }))
  assert.equal(r.target, 'wasm32-wasi')
  assert.deepEqual(
    r.warnings.map(w => w.code),
    ['SNOWID_NATIVE_UNLOADABLE'],
  )
  assert.match(
    r.warnings[0].message,
    /is outside snowid's engines \(node >=99\), so the package manager skipped snowid-linux-x64-gnu/,
  )
})

test("engines admits every Node line from 20 on, and each platform package's is the same", () => {
  const main = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).engines.node
  assert.equal(main, '>=20')
  for (const target of fs.readdirSync(path.join(ROOT, 'npm'))) {
    if (target === 'wasm32-wasi') continue
    const platform = JSON.parse(fs.readFileSync(path.join(ROOT, 'npm', target, 'package.json'), 'utf8'))
    assert.equal(platform.engines.node, main, target)
  }
})
