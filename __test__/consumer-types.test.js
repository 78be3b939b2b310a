'use strict'

// The packed package type-checks in a consumer project with no @types/node, under TypeScript 5.9 and 7, under each
// moduleResolution: node10 (through typesVersions; TS 5.9 only), node16, nodenext from .cts and .mts, and bundler.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
// TypeScript 5.9 and TypeScript 7 (the native compiler, tsgo), both pinned in devDependencies.
const TSC = { name: 'tsc', bin: path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc') }
const TSGO = { name: 'tsgo', bin: path.join(ROOT, 'node_modules', '@typescript', 'native-preview', 'bin', 'tsgo') }

const SOURCE = `import { nextId, config, OnClockBack, ConfigSource, isSnowidError, isId } from 'snowid'
import type { SnowflakeOptions, SnowidError } from 'snowid'
import { fork } from 'snowid/cluster'
import { acquireWorkerId } from 'snowid/redis'
import type { RedisAcquireOptions } from 'snowid/redis'
import { tableSql } from 'snowid/postgres'
import { postgresFunctions } from 'snowid/sql'
import { stringify, bigintsToStrings, idSchema } from 'snowid/json'
const policy: OnClockBack = OnClockBack.Wait
const source: ConfigSource = ConfigSource.Env
const e: unknown = new Error()
const code: string | undefined = isSnowidError(e) ? (e as SnowidError).code : undefined
const options: SnowflakeOptions = { workerIdIfTaken: 'next', workerIdFrom: 'statefulset' }
const from: 'statefulset' | null = config().workerIdFrom
const json: string = stringify(bigintsToStrings({ id: nextId() }))
const valid: boolean = isId('1', { notBefore: new Date(0) }) && idSchema.type === 'string'
export { nextId, fork, acquireWorkerId, tableSql, postgresFunctions, policy, source, code, options, from, json, valid }
export type { RedisAcquireOptions }
`

const CASES = [
  { moduleResolution: 'node10', module: 'commonjs', file: 'a.ts' },
  { moduleResolution: 'node16', module: 'node16', file: 'a.ts' },
  { moduleResolution: 'nodenext', module: 'nodenext', file: 'a.cts' },
  { moduleResolution: 'nodenext', module: 'nodenext', file: 'a.mts' },
  { moduleResolution: 'bundler', module: 'esnext', file: 'a.ts' },
]

// The packed package, unpacked as node_modules/snowid in a temp folder that every consumer project links to.
let dir
let modules
test.before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-consumer-'))
  // --ignore-scripts: `prepare` would rebuild the addon, rewriting binding.js while other test files load it; the
  // package ships no binary, so the pack needs no build.
  const tarball = execFileSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop()
  modules = path.join(dir, 'node_modules')
  fs.mkdirSync(modules)
  execFileSync('tar', ['-xzf', path.join(dir, tarball), '-C', modules])
  fs.renameSync(path.join(modules, 'package'), path.join(modules, 'snowid'))
})
test.after(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

/** Type-checks SOURCE in a consumer project with `compiler` and `compilerOptions`; returns the compiler's run. */
function check(compiler, name, file, options) {
  const project = path.join(dir, `${compiler.name}-${name}-${file}`)
  fs.mkdirSync(project)
  fs.symlinkSync(modules, path.join(project, 'node_modules'))
  fs.writeFileSync(path.join(project, file), SOURCE)
  const compilerOptions = {
    noEmit: true,
    strict: true,
    skipLibCheck: false,
    target: 'es2022',
    lib: ['es2022'],
    ...options,
  }
  fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: [file] }))
  return spawnSync(process.execPath, [compiler.bin, '-p', project], { encoding: 'utf8', timeout: 120_000 })
}

test('TypeScript 5.9: a consumer without @types/node type-checks every entry under every moduleResolution', () => {
  for (const c of CASES) {
    const r = check(TSC, c.moduleResolution, c.file, {
      types: [],
      module: c.module,
      moduleResolution: c.moduleResolution,
    })
    assert.equal(r.status, 0, `${c.moduleResolution} (${c.file}):\n${r.stdout}${r.stderr}`)
  }
})

// TypeScript 7 removed moduleResolution node10 (TS5108): a CommonJS project there resolves as TS 7 does by default
// for module commonjs. No `types` option, as a new TS 7 project has: an import of `node:events` or `node:cluster` in
// our typings would be TS2591 (no @types/node) here.
test('TypeScript 7: a consumer without @types/node or a types option type-checks every entry under every moduleResolution', () => {
  for (const c of CASES) {
    const options =
      c.moduleResolution === 'node10'
        ? { module: 'commonjs' }
        : { module: c.module, moduleResolution: c.moduleResolution }
    const r = check(TSGO, c.moduleResolution, c.file, options)
    assert.equal(r.status, 0, `${c.moduleResolution} (${c.file}):\n${r.stdout}${r.stderr}`)
  }
})
