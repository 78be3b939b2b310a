#!/usr/bin/env node
'use strict'

// npm run test:linux: checks the binaries `npm run build:linux` made (scripts/linux-targets.js lists them).
// - gnu: no symbol newer than the target's glibc floor (objdump -T: 2.17, ppc64le 2.19, riscv64 2.27), so they load on every glibc
//   Node 20+ runs on.
// - musl: linked against musl's libc.so and nothing of glibc.
// - Each is an ELF of its architecture, and each runs the smoke check (scripts/binary-smoke.js), which reports the
//   libc it ran on:
//   - linux-x64-gnu on every pinned Node line;
//   - the other gnu ones under qemu-user (with Debian's cross glibc) on the official Node build for their arch that
//     an npm package carries: arm64 on Node 20 and 24, arm, ppc64le and s390x on node-linux-<arch> 20.11.0, the last
//     release published there. riscv64 has no official Node build, so it is checked as a file only;
//   - linux-x64-musl and (under qemu-aarch64) linux-arm64-musl on PyPI's musl Node, in a musl 1.2.5 root the script
//     makes from Debian trixie's musl package (scripts/tools.js cachedMuslRoot).
// `--only linux-arm64-gnu,...` checks some; `--no-load` checks the files only. Prints one line per check and exits non-zero if any failed.

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT, TARGETS } = require('./linux-targets.js')
const { NODE_VERSIONS, MUSL_NODE, cachedNode, cachedPackage, cachedMuslRoot } = require('./tools.js')

const MACHINE = {
  x64: 'Advanced Micro Devices X86-64',
  arm64: 'AArch64',
  arm: 'ARM',
  riscv64: 'RISC-V',
  ppc64: 'PowerPC64',
  s390x: 'IBM S/390',
}

function out(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? `exit ${r.status}`}: ${r.stderr}`)
  return r.stdout
}

function versionKey(v) {
  return v
    .split('.')
    .map(n => Number(n).toString().padStart(4, '0'))
    .join('.')
}

function smoke(runner, args, binary) {
  const env = { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: binary, SNOWID_LEASE: 'off' }
  const r = spawnSync(runner, [...args, path.join(__dirname, 'binary-smoke.js')], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 180_000,
  })
  if (r.status !== 0)
    throw new Error(
      `smoke check: ${r.signal ?? `exit ${r.status}`}: ${r.stderr.trim().split('\n').slice(0, 5).join(' | ')}`,
    )
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

async function main() {
  const at = process.argv.indexOf('--only')
  const only = at > 0 ? process.argv[at + 1].split(',') : TARGETS.map(t => t.platform)
  const unknown = only.filter(p => !TARGETS.some(t => t.platform === p))
  if (unknown.length)
    throw new Error(
      `--only: expected names among ${TARGETS.map(t => t.platform).join(', ')}, found ${unknown.join(', ')}`,
    )
  const load = !process.argv.includes('--no-load')
  const results = []
  const check = async (label, fn) => {
    try {
      results.push(`ok: ${label}: ${await fn()}`)
    } catch (err) {
      results.push(`FAILED: ${label}: ${err.message}`)
    }
  }
  for (const t of TARGETS.filter(t => only.includes(t.platform))) {
    const name = path.relative(ROOT, t.binary)
    if (!fs.existsSync(t.binary)) {
      results.push(`FAILED: ${name}: missing (run npm run build:linux)`)
      continue
    }
    await check(`${name} is an ELF for ${t.arch}`, () => {
      const machine = /Machine:\s+(.*)/.exec(out('readelf', ['-h', t.binary]))?.[1].trim()
      if (machine !== MACHINE[t.arch]) throw new Error(`machine ${machine}`)
      return machine
    })
    const symbols = out('objdump', ['-T', t.binary])
    const glibc = [...new Set(symbols.match(/GLIBC_[0-9.]+/g) ?? [])]
      .map(s => s.slice(6))
      .sort((a, b) => (versionKey(a) < versionKey(b) ? -1 : 1))
    const needed = [...out('readelf', ['-d', t.binary]).matchAll(/\(NEEDED\)\s+Shared library: \[(.*)\]/g)].map(
      m => m[1],
    )
    if (t.libc === 'gnu') {
      await check(`${name} needs nothing newer than GLIBC_${t.glibc}`, () => {
        const newest = glibc.at(-1)
        if (!newest || versionKey(newest) > versionKey(t.glibc))
          throw new Error(`highest symbol version GLIBC_${newest}`)
        return `highest GLIBC_${newest}`
      })
    } else {
      await check(`${name} needs musl's libc and nothing of glibc`, () => {
        if (
          glibc.length ||
          !needed.includes('libc.so') ||
          needed.some(n => /^(libc\.so\.6|libpthread|libdl|libm\.so\.6|libgcc_s)/.test(n))
        ) {
          throw new Error(`NEEDED ${needed.join(', ')}; glibc versions ${glibc.join(', ') || 'none'}`)
        }
        return `NEEDED ${needed.join(', ')}`
      })
    }
  }
  const built = platform =>
    load && only.includes(platform) && fs.existsSync(TARGETS.find(t => t.platform === platform).binary)
  const target = platform => TARGETS.find(t => t.platform === platform)
  const expect = (result, arch, libc) => {
    // 'native': a binary that failed to load would otherwise pass through the loader's WASI fallback.
    if (result.arch !== arch || result.libc !== libc || result.binding !== 'native') {
      throw new Error(`ran on ${result.arch} ${result.libc} (${result.binding}), expected ${arch} ${libc} (native)`)
    }
    return JSON.stringify(result)
  }
  if (built('linux-x64-gnu')) {
    for (const line of Object.keys(NODE_VERSIONS)) {
      await check(`linux-x64-gnu loads on Node ${NODE_VERSIONS[line]}`, async () =>
        expect(smoke(await cachedNode(line), [], target('linux-x64-gnu').binary), 'x64', 'glibc'),
      )
    }
  }
  if (built('linux-arm64-gnu')) {
    const t = target('linux-arm64-gnu')
    for (const line of ['20', '24']) {
      await check(`linux-arm64-gnu loads on Node ${NODE_VERSIONS[line]} arm64 under qemu-aarch64`, async () =>
        expect(smoke(t.qemu, ['-L', t.sysroot, await cachedNode(line, 'arm64')], t.binary), 'arm64', 'glibc'),
      )
    }
  }
  for (const t of TARGETS.filter(t => t.node && built(t.platform))) {
    await check(`${t.platform} loads on ${t.node.pkg} ${t.node.version} under ${t.qemu}`, async () => {
      const node = path.join(await cachedPackage(t.node.pkg, t.node.version, t.node.pkg), 'bin', 'node')
      return expect(smoke(t.qemu, ['-L', t.sysroot, node], t.binary), t.arch, 'glibc')
    })
  }
  if (built('linux-x64-musl')) {
    await check(`linux-x64-musl loads on musl Node ${MUSL_NODE} (musl 1.2.5)`, async () => {
      const { root, node, loader } = await cachedMuslRoot('x64')
      // musl's loader run as a program, so that nothing of the host's glibc is in the process.
      return expect(
        smoke(loader, ['--library-path', path.join(root, 'lib'), node], target('linux-x64-musl').binary),
        'x64',
        'musl',
      )
    })
  }
  if (built('linux-arm64-musl')) {
    const t = target('linux-arm64-musl')
    await check(`linux-arm64-musl loads on musl Node ${MUSL_NODE} arm64 (musl 1.2.5) under qemu-aarch64`, async () => {
      const { root, node } = await cachedMuslRoot('arm64')
      return expect(smoke(t.qemu, ['-L', root, node], t.binary), 'arm64', 'musl')
    })
  }
  console.log(results.join('\n'))
  if (results.some(r => r.startsWith('FAILED'))) process.exitCode = 1
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
