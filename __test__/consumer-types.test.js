'use strict'

// The packed package type-checks in a consumer project with no @types/node (`types: []`), under each
// moduleResolution: node10 (through typesVersions), node16, nodenext from .cts and .mts, and bundler.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')

const SOURCE = `import { nextId, OnClockBack, ConfigSource, isSnowidError } from 'snowid'
import type { SnowidError } from 'snowid'
import { fork } from 'snowid/cluster'
import { acquireWorkerId } from 'snowid/redis'
import type { RedisAcquireOptions } from 'snowid/redis'
import { tableSql } from 'snowid/postgres'
import { postgresFunctions } from 'snowid/sql'
const policy: OnClockBack = OnClockBack.Wait
const source: ConfigSource = ConfigSource.Env
const e: unknown = new Error()
const code: string | undefined = isSnowidError(e) ? (e as SnowidError).code : undefined
export { nextId, fork, acquireWorkerId, tableSql, postgresFunctions, policy, source, code }
export type { RedisAcquireOptions }
`

const CASES = [
  { moduleResolution: 'node10', module: 'commonjs', file: 'a.ts' },
  { moduleResolution: 'node16', module: 'node16', file: 'a.ts' },
  { moduleResolution: 'nodenext', module: 'nodenext', file: 'a.cts' },
  { moduleResolution: 'nodenext', module: 'nodenext', file: 'a.mts' },
  { moduleResolution: 'bundler', module: 'esnext', file: 'a.ts' },
]

test('a consumer without @types/node type-checks every entry under every moduleResolution', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-consumer-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  // --ignore-scripts: `prepare` would rebuild the addon, rewriting binding.js while other test files load it; the
  // package ships no binary, so the pack needs no build.
  const tarball = execFileSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()
  const modules = path.join(dir, 'node_modules')
  fs.mkdirSync(modules)
  execFileSync('tar', ['-xzf', path.join(dir, tarball), '-C', modules])
  fs.renameSync(path.join(modules, 'package'), path.join(modules, 'snowid'))
  for (const c of CASES) {
    const project = path.join(dir, `${c.moduleResolution}-${c.file}`)
    fs.mkdirSync(project)
    fs.symlinkSync(modules, path.join(project, 'node_modules'))
    fs.writeFileSync(path.join(project, c.file), SOURCE)
    const compilerOptions = { noEmit: true, strict: true, types: [], skipLibCheck: false, module: c.module, moduleResolution: c.moduleResolution, target: 'es2022', lib: ['es2022'] }
    fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: [c.file] }))
    const r = spawnSync(process.execPath, [TSC, '-p', project], { encoding: 'utf8', timeout: 120_000 })
    assert.equal(r.status, 0, `${c.moduleResolution} (${c.file}):\n${r.stdout}${r.stderr}`)
  }
})
