#!/usr/bin/env node
'use strict'

// npm run build:linux: builds the Linux binaries (scripts/linux-targets.js) with zig into npm/<platform>/snowid.<platform>.node. Installs
// what it needs when missing: the Rust targets (rustup) and pinned ziglang and cargo-zigbuild (pip, into
// .cache/python/zig). `--only linux-x64-gnu,...` builds some.

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT, TARGETS, ZIG_TOOLS } = require('./linux-targets.js')
const { cachedPython } = require('./tools.js')

function sh(cmd, args, options = {}) {
  console.log(`$ ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', ...options })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.signal ?? `exit ${r.status}`}`)
}

async function main() {
  const at = process.argv.indexOf('--only')
  const only = at > 0 ? process.argv[at + 1].split(',') : null
  const targets = only ? TARGETS.filter(t => only.includes(t.platform)) : TARGETS
  if (only && targets.length !== only.length)
    throw new Error(`--only: expected names among ${TARGETS.map(t => t.platform).join(', ')}`)
  const bin = await cachedPython('zig', ZIG_TOOLS)
  const installed = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).stdout ?? ''
  const missing = targets.map(t => t.triple).filter(t => !installed.split('\n').includes(t))
  if (missing.length) sh('rustup', ['target', 'add', ...missing])
  // The venv's bin first: cargo-zigbuild, and the `python3 -m ziglang` it runs zig through.
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }
  // A target dir of its own, so that these builds and `npm run build` do not invalidate each other.
  env.CARGO_TARGET_DIR = path.join(ROOT, 'target', 'zig')
  for (const t of targets) {
    // A musl cdylib must link libc dynamically: Rust's musl targets link it statically by default.
    const rustflags = t.libc === 'musl' ? '-C target-feature=-crt-static' : ''
    sh(path.join(bin, 'cargo-zigbuild'), ['zigbuild', '--release', '--locked', '--lib', '--target', t.zigTarget], {
      env: { ...env, RUSTFLAGS: rustflags },
    })
    const built = path.join(env.CARGO_TARGET_DIR, t.triple, 'release', 'libsnowid.so')
    fs.copyFileSync(built, t.binary)
    console.log(`${path.relative(ROOT, t.binary)} (${fs.statSync(t.binary).size} bytes)`)
  }
}

main().catch(err => {
  console.error(`build:linux: ${err.message}`)
  process.exitCode = 1
})
