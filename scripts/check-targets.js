#!/usr/bin/env node
'use strict'

// npm run check:targets: the targets in package.json's napi.targets that are built only by the release workflow
// (macOS, Windows, FreeBSD, Android), checked here by clippy with -D warnings, so that code which does not compile on
// them, or warns there, is caught before a release. Installs the Rust targets (rustup) when missing.

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { TARGETS } = require('./linux-targets.js')

const ROOT = path.resolve(__dirname, '..')
const BUILT_HERE = new Set([...TARGETS.map(t => t.triple), 'wasm32-wasip1-threads'])
const targets = require('../package.json').napi.targets.filter(t => !BUILT_HERE.has(t))

function sh(cmd, args) {
  console.log(`$ ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, CARGO_TARGET_DIR: path.join(ROOT, 'target', 'check') },
  })
  if (r.status !== 0) {
    console.error(`${cmd}: ${r.signal ?? `exit ${r.status}`}`)
    process.exit(1)
  }
}

const installed = (spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).stdout ?? '').split(
  '\n',
)
const missing = targets.filter(t => !installed.includes(t))
if (missing.length) sh('rustup', ['target', 'add', ...missing])
sh('cargo', ['clippy', '--locked', '--lib', ...targets.flatMap(t => ['--target', t]), '--', '-D', 'warnings'])
console.log(`clippy is clean on ${targets.length} targets: ${targets.join(', ')}`)
