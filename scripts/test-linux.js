#!/usr/bin/env node
'use strict'

// npm run test:linux: checks the four binaries `npm run build:linux` made.
// - gnu: no symbol newer than GLIBC_2.17 (objdump -T), so they load on every glibc Node 20+ runs on.
// - musl: linked against musl's libc.so and nothing of glibc. This host has no musl C++ runtime for a musl Node,
//   so they are checked as ELF files only; the release workflow loads them on Alpine.
// - Each is an ELF of its architecture. The x64 gnu binary runs the smoke check (scripts/binary-smoke.js) on every
//   pinned Node line; the arm64 gnu binary runs it under qemu-aarch64 on the official arm64 Node 20 and 24.
// `--only linux-arm64-gnu,...` checks some; `--no-load` checks the files only. Prints one line per check and exits non-zero if any failed.

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { ROOT, GLIBC_FLOOR, TARGETS } = require('./linux-targets.js')
const { NODE_VERSIONS, cachedNode } = require('./tools.js')

// Debian's cross packages put the arm64 glibc here (libc6-arm64-cross, libstdc++6-arm64-cross).
const ARM64_SYSROOT = '/usr/aarch64-linux-gnu'
const MACHINE = { x64: 'Advanced Micro Devices X86-64', arm64: 'AArch64' }

function out(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? `exit ${r.status}`}: ${r.stderr}`)
  return r.stdout
}

function versionKey(v) {
  return v.split('.').map((n) => Number(n).toString().padStart(4, '0')).join('.')
}

function smoke(runner, args, binary) {
  const env = { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: binary, SNOWID_LEASE: 'off' }
  const r = spawnSync(runner, [...args, path.join(__dirname, 'binary-smoke.js')], { cwd: ROOT, env, encoding: 'utf8', timeout: 180_000 })
  if (r.status !== 0) throw new Error(`smoke check: ${r.signal ?? `exit ${r.status}`}: ${r.stderr.trim().split('\n').slice(0, 5).join(' | ')}`)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

async function main() {
  const at = process.argv.indexOf('--only')
  const only = at > 0 ? process.argv[at + 1].split(',') : TARGETS.map((t) => t.platform)
  const unknown = only.filter((p) => !TARGETS.some((t) => t.platform === p))
  if (unknown.length) throw new Error(`--only: expected names among ${TARGETS.map((t) => t.platform).join(', ')}, found ${unknown.join(', ')}`)
  const load = !process.argv.includes('--no-load')
  const results = []
  const check = async (label, fn) => {
    try {
      results.push(`ok: ${label}: ${await fn()}`)
    } catch (err) {
      results.push(`FAILED: ${label}: ${err.message}`)
    }
  }
  for (const t of TARGETS.filter((t) => only.includes(t.platform))) {
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
    const glibc = [...new Set(symbols.match(/GLIBC_[0-9.]+/g) ?? [])].map((s) => s.slice(6)).sort((a, b) => (versionKey(a) < versionKey(b) ? -1 : 1))
    const needed = [...out('readelf', ['-d', t.binary]).matchAll(/\(NEEDED\)\s+Shared library: \[(.*)\]/g)].map((m) => m[1])
    if (t.libc === 'gnu') {
      await check(`${name} needs nothing newer than GLIBC_${GLIBC_FLOOR}`, () => {
        const newest = glibc.at(-1)
        if (!newest || versionKey(newest) > versionKey(GLIBC_FLOOR)) throw new Error(`highest symbol version GLIBC_${newest}`)
        return `highest GLIBC_${newest}`
      })
    } else {
      await check(`${name} needs musl's libc and nothing of glibc`, () => {
        if (glibc.length || !needed.includes('libc.so') || needed.some((n) => /^(libc\.so\.6|libpthread|libdl|libm\.so\.6|libgcc_s)/.test(n))) {
          throw new Error(`NEEDED ${needed.join(', ')}; glibc versions ${glibc.join(', ') || 'none'}`)
        }
        return `NEEDED ${needed.join(', ')}`
      })
    }
  }
  const x64 = TARGETS.find((t) => t.platform === 'linux-x64-gnu')
  const arm64 = TARGETS.find((t) => t.platform === 'linux-arm64-gnu')
  for (const line of Object.keys(NODE_VERSIONS)) {
    if (!load || !only.includes(x64.platform) || !fs.existsSync(x64.binary)) break
    await check(`linux-x64-gnu loads on Node ${NODE_VERSIONS[line]}`, async () => JSON.stringify(smoke(await cachedNode(line), [], x64.binary)))
  }
  for (const line of ['20', '24']) {
    if (!load || !only.includes(arm64.platform) || !fs.existsSync(arm64.binary)) break
    await check(`linux-arm64-gnu loads on Node ${NODE_VERSIONS[line]} arm64 under qemu-aarch64`, async () => {
      const node = await cachedNode(line, 'arm64')
      return JSON.stringify(smoke('qemu-aarch64', ['-L', ARM64_SYSROOT, node], arm64.binary))
    })
  }
  console.log(results.join('\n'))
  if (results.some((r) => r.startsWith('FAILED'))) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
