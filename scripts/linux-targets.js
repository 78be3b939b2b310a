'use strict'

// The four Linux targets built here with zig (`npm run build:linux`) and checked by `npm run test:linux`: the gnu
// ones against glibc 2.17, so that they load on every distribution Node 20+ runs on, and real musl ones.

const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')
const { napi } = require('../package.json')

/** The oldest glibc the gnu binaries may need. */
const GLIBC_FLOOR = '2.17'

const TARGETS = [
  { triple: 'x86_64-unknown-linux-gnu', platform: 'linux-x64-gnu', arch: 'x64', libc: 'gnu' },
  { triple: 'aarch64-unknown-linux-gnu', platform: 'linux-arm64-gnu', arch: 'arm64', libc: 'gnu' },
  { triple: 'x86_64-unknown-linux-musl', platform: 'linux-x64-musl', arch: 'x64', libc: 'musl' },
  { triple: 'aarch64-unknown-linux-musl', platform: 'linux-arm64-musl', arch: 'arm64', libc: 'musl' },
].map((t) => ({
  ...t,
  // What cargo zigbuild is asked for: a gnu triple carries the glibc version to link against.
  zigTarget: t.libc === 'gnu' ? `${t.triple}.${GLIBC_FLOOR}` : t.triple,
  // Where the napi-rs loader and the platform package look for the binary.
  binary: path.join(ROOT, 'npm', t.platform, `${napi.binaryName}.${t.platform}.node`),
}))

// The Python tools that build them, pinned (scripts/tools.js's cachedPython).
const ZIG_TOOLS = ['ziglang==0.15.2', 'cargo-zigbuild==0.22.3']

module.exports = { ROOT, GLIBC_FLOOR, TARGETS, ZIG_TOOLS }
