#!/usr/bin/env node
'use strict'

// npm run build:wasm: builds the wasm32-wasip1-threads binary into the snowid-wasm32-wasi package (npm/wasm32-wasi/):
// the .wasm, and the loader files napi-rs generates beside it (committed, and checked by .ci/run against a fresh
// build). Adds the Rust target when missing. napi build finds emnapi's libraries through the `emnapi` devDependency.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.resolve(__dirname, '..')
const TRIPLE = 'wasm32-wasip1-threads'
const DEST = path.join(ROOT, 'npm', 'wasm32-wasi')

function sh(cmd, args, options = {}) {
  console.log(`$ ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', ...options })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.signal ?? `exit ${r.status}`}`)
}

const installed = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).stdout ?? ''
if (!installed.split('\n').includes(TRIPLE)) sh('rustup', ['target', 'add', TRIPLE])
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-wasm-'))
try {
  const napi = path.join(ROOT, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')
  // A target dir of its own, so that this build and `npm run build` do not invalidate each other.
  sh(process.execPath, [
    napi,
    'build',
    '--platform',
    '--release',
    '--no-const-enum',
    '--target',
    TRIPLE,
    '--target-dir',
    path.join(ROOT, 'target', 'wasm'),
    '--output-dir',
    out,
    '--no-js',
  ])
  // What the package ships (its `files`): the rest (a debug copy, browser.js for a `browser` field) is not used.
  const { files } = JSON.parse(fs.readFileSync(path.join(DEST, 'package.json'), 'utf8'))
  for (const f of files) {
    fs.copyFileSync(path.join(out, f), path.join(DEST, f))
    console.log(`${path.relative(ROOT, path.join(DEST, f))} (${fs.statSync(path.join(DEST, f)).size} bytes)`)
  }
} finally {
  fs.rmSync(out, { recursive: true, force: true })
}
