'use strict'

// npm run release:version sets one version on the root and every npm/ package.json, the dependencies on them and the
// lock.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const SCRIPT = path.join(ROOT, 'scripts', 'release-version.js')

function copyPackage(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-release-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(ROOT, file), path.join(dir, file))
  fs.cpSync(path.join(ROOT, 'npm'), path.join(dir, 'npm'), { recursive: true })
  return dir
}

const readJson = file => JSON.parse(fs.readFileSync(file, 'utf8'))

test('release:version bumps the root, the 16 native packages and the WASI one, the dependencies on them and the lock', t => {
  const dir = copyPackage(t)
  const r = spawnSync(process.execPath, [SCRIPT, '1.2.3-rc.1', '--root', dir], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  const pkg = readJson(path.join(dir, 'package.json'))
  assert.equal(pkg.version, '1.2.3-rc.1')
  const platforms = fs.readdirSync(path.join(dir, 'npm')).map(d => readJson(path.join(dir, 'npm', d, 'package.json')))
  assert.equal(platforms.length, 17)
  for (const p of platforms) {
    assert.equal(p.version, '1.2.3-rc.1', p.name)
    assert.equal({ ...pkg.optionalDependencies, ...pkg.dependencies }[p.name], '1.2.3-rc.1', p.name)
  }
  assert.equal(Object.keys(pkg.optionalDependencies).length, 16)
  assert.equal(pkg.dependencies['snowid-wasm32-wasi'], '1.2.3-rc.1')
  const lock = readJson(path.join(dir, 'package-lock.json'))
  assert.equal(lock.version, '1.2.3-rc.1')
  assert.equal(lock.packages[''].version, '1.2.3-rc.1')
  for (const v of Object.values(lock.packages[''].optionalDependencies)) assert.equal(v, '1.2.3-rc.1')
  assert.equal(lock.packages[''].dependencies['snowid-wasm32-wasi'], '1.2.3-rc.1')
  // Everything else is as it was.
  const before = readJson(path.join(ROOT, 'package.json'))
  assert.deepStrictEqual(
    {
      ...pkg,
      version: before.version,
      optionalDependencies: before.optionalDependencies,
      dependencies: before.dependencies,
    },
    before,
  )
})

test('release:version refuses a version that is not semantic, and changes nothing', t => {
  const dir = copyPackage(t)
  const before = fs.readFileSync(path.join(dir, 'package.json'), 'utf8')
  for (const bad of ['v1.0.0', '1.0', '01.0.0', 'latest']) {
    const r = spawnSync(process.execPath, [SCRIPT, bad, '--root', dir], { encoding: 'utf8' })
    assert.equal(r.status, 2, bad)
    assert.match(r.stderr, /^release:version: expected a semantic version/)
  }
  assert.equal(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'), before)
})
