#!/usr/bin/env node
'use strict'

// Adds, with one rustup call, every Rust target that CI's tiers build or check: the release targets of package.json's
// napi field (build:linux, build:wasm and check:targets take them) and x86_64-pc-windows-gnu (test:windows). .ci/run
// runs it before the tiers that run side by side, as two rustup processes downloading at once can break each
// other's download ("could not read downloaded file"). Each tier still adds what it misses when run alone.

const { spawnSync } = require('node:child_process')
const PKG = require('../package.json')
const { TARGET: WINDOWS } = require('./wine.js')

const wanted = [...PKG.napi.targets, WINDOWS]
const installed = (spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).stdout ?? '').split(
  '\n',
)
const missing = wanted.filter(t => !installed.includes(t))
if (missing.length === 0) {
  console.log(`rust-targets: all ${wanted.length} targets installed`)
} else {
  const r = spawnSync('rustup', ['target', 'add', ...missing], { stdio: 'inherit' })
  process.exitCode = r.status ?? 1
}
