'use strict'

// docs/bundlers.md's recipes: a bundle that keeps snowid (and its subpaths) external runs and makes ids; without
// that, esbuild, webpack and rollup each fail on the addon's loader, as the guide says. The webpack and rollup
// configurations are taken from the guide as written there.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const { leaseEnv } = require('../scripts/lease-dir.js')

const ROOT = path.join(__dirname, '..')
const ESBUILD = path.join(ROOT, 'node_modules', '.bin', 'esbuild')
const ROLLUP = path.join(ROOT, 'node_modules', 'rollup', 'dist', 'bin', 'rollup')
const GUIDE = path.join(ROOT, 'docs', 'bundlers.md')
const VITE = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js')

// The app is a project whose node_modules/snowid holds what the published package holds (its package.json "files",
// and the addon built here), as an app's does; the bundlers and their plugins resolve from this checkout's
// node_modules, above it. Resolved to the checkout itself instead, a bundler that follows the loader's dynamic
// requires would scan its node_modules/ and target/ too (webpack: 20 s more). The app uses a subpath that loads the
// addon itself (snowid/cluster) and one that does not (snowid/sql).
function app(t) {
  const dir = fs.mkdtempSync(path.join(ROOT, '.bundle-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const installed = path.join(dir, 'node_modules', 'snowid')
  const { files } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  const addons = fs.readdirSync(ROOT).filter(f => f.endsWith('.node'))
  for (const file of ['package.json', ...files, ...addons]) {
    fs.cpSync(path.join(ROOT, file), path.join(installed, file), { recursive: true })
  }
  // A package.json of its own, so that require('snowid') is not this checkout's self-reference.
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "app", "private": true }\n')
  fs.writeFileSync(
    path.join(dir, 'app.js'),
    [
      "const { nextId, decode, config } = require('snowid')",
      "const { postgresFunctions } = require('snowid/sql')",
      "const { fork } = require('snowid/cluster')",
      'const id = nextId()',
      'console.log(JSON.stringify({ id: String(id), workerId: decode(id).workerId, sql: postgresFunctions(config()).length > 0, fork: typeof fork }))',
    ].join('\n'),
  )
  return dir
}

/** The first js block under the guide's heading `## <heading>`. */
function recipe(heading) {
  const text = fs.readFileSync(GUIDE, 'utf8')
  const start = text.indexOf(`\n## ${heading}\n`)
  assert.notEqual(start, -1, `docs/bundlers.md has no "## ${heading}"`)
  const section = text.slice(start + 1).split(/\n## /)[0]
  const block = /```js\n([\s\S]*?)\n```/.exec(section)
  assert.ok(block, `docs/bundlers.md: no js block under "## ${heading}"`)
  return block[1] + '\n'
}

/** Runs the bundle in `dir` (dist/`file`), as the app's own process would, and checks the id it printed. */
function runsAndMakesIds(dir, bundle, file = 'app.js') {
  for (const request of ['snowid', 'snowid/sql', 'snowid/cluster']) {
    assert.match(bundle, new RegExp(`require\\(["']${request}["']\\)`), `${request} is left to require`)
  }
  const r = spawnSync(process.execPath, [path.join(dir, 'dist', file)], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, SNOWID_WORKER_ID: '7', ...leaseEnv(path.join(dir, 'leases')) },
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.match(out.id, /^\d{17,19}$/)
  assert.equal(out.workerId, 7)
  assert.equal(out.sql, true)
  assert.equal(out.fork, 'function')
}

function esbuild(dir, args) {
  return spawnSync(
    ESBUILD,
    ['app.js', '--bundle', '--platform=node', '--outfile=dist/app.js', '--log-level=error', ...args],
    {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    },
  )
}

for (const flag of ['--external:snowid', '--packages=external']) {
  test(`esbuild ${flag}: the bundle runs and makes ids`, t => {
    const dir = app(t)
    const built = esbuild(dir, [flag])
    assert.equal(built.status, 0, built.stderr)
    runsAndMakesIds(dir, fs.readFileSync(path.join(dir, 'dist', 'app.js'), 'utf8'))
  })
}

test('esbuild without snowid external fails on the addon, as docs/bundlers.md says', t => {
  const dir = app(t)
  const built = esbuild(dir, [])
  assert.notEqual(built.status, 0)
  assert.match(built.stderr, /No loader is configured for "\.node" files/)
})

// Builds with webpack's Node API and the configuration in webpack.config.js, and prints what the build reported.
const WEBPACK = `require('webpack')(require('./webpack.config.js'), (err, stats) => {
  if (err) throw err
  const info = stats.toJson({ all: false, errors: true, warnings: true, moduleTrace: false })
  console.log(JSON.stringify({ errors: info.errors.map((e) => ({ message: e.message, moduleName: e.moduleName })), warnings: info.warnings.length }))
})`

function webpack(dir, config) {
  fs.writeFileSync(path.join(dir, 'webpack.config.js'), config)
  const r = spawnSync(process.execPath, ['-e', WEBPACK], { cwd: dir, encoding: 'utf8', timeout: 300_000 })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

test("webpack with docs/bundlers.md's configuration: the bundle runs and makes ids", t => {
  const dir = app(t)
  const built = webpack(dir, recipe('webpack'))
  assert.deepEqual(built, { errors: [], warnings: 0 })
  runsAndMakesIds(dir, fs.readFileSync(path.join(dir, 'dist', 'app.js'), 'utf8'))
})

test('webpack without snowid external fails on the addon, as docs/bundlers.md says', t => {
  const dir = app(t)
  const config = recipe('webpack').replace(/^ {2}externals(Type)?:.*\n/gm, '')
  assert.doesNotMatch(config, /externals/)
  // Not minified: what fails is parsing the addon, before any minifier; minifying the rest took 8 s more here.
  const built = webpack(dir, config.replace(/^ {2}mode: .*\n/m, '$&  optimization: { minimize: false },\n'))
  assert.ok(built.errors.length > 0, 'the build reports an error')
  const addon = built.errors.find(e => /\.node$/.test(e.moduleName ?? ''))
  assert.ok(addon, JSON.stringify(built.errors).slice(0, 2000))
  assert.match(addon.message, /^Module parse failed/)
  assert.ok(built.warnings > 0, "and warns on the loader's dynamic requires")
})

function rollup(dir, config) {
  fs.writeFileSync(path.join(dir, 'rollup.config.mjs'), config)
  return spawnSync(process.execPath, [ROLLUP, '-c', 'rollup.config.mjs', '--silent'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
  })
}

test("rollup with docs/bundlers.md's configuration: the bundle runs and makes ids", t => {
  const dir = app(t)
  const built = rollup(dir, recipe('rollup'))
  assert.equal(built.status, 0, built.stderr)
  runsAndMakesIds(dir, fs.readFileSync(path.join(dir, 'dist', 'app.js'), 'utf8'))
})

test("rollup without snowid external fails on the loader's package.json, as docs/bundlers.md says", t => {
  const dir = app(t)
  const config = recipe('rollup').replace(/^ {2}external:.*\n/m, '')
  assert.doesNotMatch(config, /external/)
  const built = rollup(dir, config)
  assert.notEqual(built.status, 0)
  assert.match(built.stderr, /package\.json/)
  assert.equal(fs.existsSync(path.join(dir, 'dist', 'app.js')), false)
})

test('a bundle that left the native file behind fails with the bundler settings to add, not a bare loader error', t => {
  const dir = app(t)
  // Bundled whole, with the .node file left out (as a bundler that cannot place it does): the loader finds nothing.
  const built = esbuild(dir, ['--external:*.node', '--log-level=error'])
  assert.equal(built.status, 0, built.stderr)
  // Run from a folder of its own, as a deployed bundle is, where nothing resolves the package's files (the bundle took
  // in the WASI loader too, which would otherwise find this package's WASI build once it is built).
  const away = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-bundle-'))
  t.after(() => fs.rmSync(away, { recursive: true, force: true }))
  fs.mkdirSync(path.join(away, 'dist'))
  fs.copyFileSync(path.join(dir, 'dist', 'app.js'), path.join(away, 'dist', 'app.js'))
  for (const [env, by] of [
    [{}, 'a bundler'],
    [{ NEXT_RUNTIME: 'nodejs' }, 'Next.js'],
  ]) {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        "try { require('./dist/app.js') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }",
      ],
      {
        cwd: away,
        encoding: 'utf8',
        env: { PATH: process.env.PATH, SNOWID_WORKER_ID: '7', ...leaseEnv(path.join(away, 'leases')), ...env },
        timeout: 60_000,
      },
    )
    const out = JSON.parse(r.stdout.trim().split('\n').pop())
    assert.equal(out.code, 'ERR_SNOWID_NO_BINARY', r.stderr)
    assert.match(out.message, new RegExp(`because ${by} bundled snowid \\(into .*dist/app\\.js\\)`))
    assert.match(out.message, /serverExternalPackages: \['snowid'\]/)
    assert.match(out.message, /ssr\.external: \['snowid'\]/)
    assert.match(out.message, /--external:snowid/)
    assert.doesNotMatch(out.message, /Prebuilt binaries exist for/)
    if (by === 'Next.js') assert.match(out.message, /\. Add serverExternalPackages: \['snowid'\] to next\.config\.js/)
  }
})

function vite(dir, config) {
  fs.writeFileSync(path.join(dir, 'vite.config.mjs'), config)
  // Vite's bundler (rolldown) is a napi-rs package too: under test:wasi's NAPI_RS_FORCE_WASI it would look for a WASI
  // build of its own. The bundle it makes runs with the environment as it is (runsAndMakesIds).
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NAPI_RS_')))
  return spawnSync(process.execPath, [VITE, 'build', '--ssr', 'app.js', '--outDir', 'dist', '--logLevel', 'error'], {
    cwd: dir,
    encoding: 'utf8',
    env,
    timeout: 120_000,
  })
}

test("Vite SSR with ssr.noExternal: true and docs/bundlers.md's ssr.external: the bundle runs and makes ids", t => {
  const dir = app(t)
  const config = recipe('Vite SSR')
  assert.match(config, /noExternal: true/)
  const built = vite(dir, config)
  assert.equal(built.status, 0, built.stderr)
  runsAndMakesIds(dir, fs.readFileSync(path.join(dir, 'dist', 'app.mjs'), 'utf8'), 'app.mjs')
})

test('Vite SSR with ssr.noExternal: true alone fails on the addon, as docs/bundlers.md says', t => {
  const dir = app(t)
  const config = recipe('Vite SSR').replace(/^ {4}external:.*\n/m, '')
  assert.doesNotMatch(config, /external:/)
  const built = vite(dir, config)
  assert.notEqual(built.status, 0)
  assert.match(built.stdout + built.stderr, /UNLOADABLE_DEPENDENCY.*snowid\.linux-x64-gnu\.node/)
})
