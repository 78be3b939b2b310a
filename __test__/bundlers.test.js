'use strict'

// docs/bundlers.md's esbuild recipe: a bundle that keeps snowid external runs and makes ids; without that, esbuild
// fails on the addon, as the guide says.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const ESBUILD = path.join(ROOT, 'node_modules', '.bin', 'esbuild')

// The app is bundled inside the package, so that the bundle's require('snowid') finds this package at run time as
// an app's finds node_modules/snowid.
function app(t) {
  const dir = fs.mkdtempSync(path.join(ROOT, '.bundle-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.writeFileSync(
    path.join(dir, 'app.js'),
    [
      "const { nextId, decode } = require('snowid')",
      "const { postgresFunctions } = require('snowid/sql')",
      "const id = nextId()",
      "console.log(JSON.stringify({ id: String(id), workerId: decode(id).workerId, sql: postgresFunctions(require('snowid').config()).length > 0 }))",
    ].join('\n'),
  )
  return dir
}

function esbuild(dir, args) {
  return spawnSync(ESBUILD, ['app.js', '--bundle', '--platform=node', '--outfile=dist/app.js', '--log-level=error', ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
  })
}

for (const flag of ['--external:snowid', '--packages=external']) {
  test(`esbuild ${flag}: the bundle runs and makes ids`, (t) => {
    const dir = app(t)
    const built = esbuild(dir, [flag])
    assert.equal(built.status, 0, built.stderr)
    const bundle = fs.readFileSync(path.join(dir, 'dist', 'app.js'), 'utf8')
    assert.match(bundle, /require\("snowid"\)/)
    const leaseDir = path.join(dir, 'leases')
    const r = spawnSync(process.execPath, [path.join(dir, 'dist', 'app.js')], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, SNOWID_WORKER_ID: '7', SNOWID_LEASE_DIR: leaseDir },
      timeout: 60_000,
    })
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.match(out.id, /^\d{17,19}$/)
    assert.equal(out.workerId, 7)
    assert.equal(out.sql, true)
  })
}

test('esbuild without snowid external fails on the addon, as docs/bundlers.md says', (t) => {
  const dir = app(t)
  const built = esbuild(dir, [])
  assert.notEqual(built.status, 0)
  assert.match(built.stderr, /No loader is configured for "\.node" files/)
})
