'use strict'

// The native addon, loaded by `binding.js` (napi-rs's generated loader). When no binary loads on this platform, the
// error says which platform this is, which platforms have prebuilt binaries, and how to build one from source.

const ARCH = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm', riscv64gc: 'riscv64', powerpc64le: 'ppc64' }
const OS = [
  [/^unknown-linux-gnueabihf$/, arch => `linux-${arch}-gnueabihf`],
  [/^wasip1-threads$/, () => 'wasm32-wasi'],
  [/^unknown-linux-gnu/, arch => `linux-${arch}-gnu`],
  [/^unknown-linux-musl/, arch => `linux-${arch}-musl`],
  [/^apple-darwin$/, arch => `darwin-${arch}`],
  [/^pc-windows-msvc$/, arch => `win32-${arch}-msvc`],
  [/^unknown-freebsd$/, arch => `freebsd-${arch}`],
  [/^linux-androideabi$/, arch => `android-${arch}-eabi`],
  [/^linux-android$/, arch => `android-${arch}`],
]

// A Rust target triple as napi-rs names its platform package: x86_64-unknown-linux-gnu is linux-x64-gnu.
function platformName(triple) {
  const [arch, ...rest] = triple.split('-')
  const tail = rest.join('-')
  const found = OS.find(([pattern]) => pattern.test(tail))
  return found ? found[1](ARCH[arch] ?? arch) : triple
}

function libc() {
  if (process.platform !== 'linux') return null
  try {
    const report = process.report && process.report.getReport()
    const header = typeof report === 'string' ? JSON.parse(report).header : report && report.header
    if (header && header.glibcVersionRuntime) return `glibc ${header.glibcVersionRuntime}`
    if (header) return 'musl'
  } catch {
    // The runtime has no report: the libc is not named.
  }
  return null
}

function runtime() {
  if (process.versions.bun) return `Bun ${process.versions.bun}`
  if (process.versions.deno) return `Deno ${process.versions.deno}`
  return `Node ${process.version}`
}

// The loader's own errors nest several `cause`s deep. A line from the dynamic linker that names a missing glibc
// version (`version 'GLIBC_2.33' not found`) says more than any advice to reinstall, so it is brought up.
function glibcTooOld(cause) {
  for (let e = cause, depth = 0; e && depth < 20; e = e.cause, depth++) {
    const m = /version [`']GLIBC_[\d.]+' not found[^\n]*/.exec(String(e.message))
    if (m) return m[0].slice(0, 200)
  }
  return null
}

function noBinary(cause) {
  const { napi, repository } = require('../package.json')
  const supported = napi.targets.map(platformName).join(', ')
  const c = libc()
  const here = `${process.platform}-${process.arch}${c ? ` (${c})` : ''}`
  const url = String(repository.url)
    .replace(/^git\+/, '')
    .replace(/\.git$/, '')
  const glibc = glibcTooOld(cause)
  if (glibc) {
    const e = new Error(
      `snowid: the native binary for ${here} needs a newer glibc than this system has (${glibc}). snowid's Linux ` +
        `binaries need glibc 2.17 or later; a build from another glibc may need more. Reinstall snowid from the ` +
        `registry on this system, or build from source (${url}). The loader's own error is this error's cause.`,
      { cause },
    )
    e.code = 'ERR_SNOWID_NO_BINARY'
    return e
  }
  const e = new Error(
    `snowid: no native binary loads on ${here} under ${runtime()}. Prebuilt binaries exist for ${supported}, each in ` +
      `the optional dependency snowid-<platform>, which the package manager installs with snowid. On one of those ` +
      `platforms, check that optional dependencies were not left out (--omit=optional, --no-optional, a lock file ` +
      `made on another platform) and install again. Elsewhere, build from source: install Rust 1.89 or later ` +
      `(https://rustup.rs), clone ${url}, run npm install in the clone (it builds the addon), and install snowid ` +
      `from that folder. The loader's own error is this error's cause.`,
    { cause },
  )
  e.code = 'ERR_SNOWID_NO_BINARY'
  return e
}

let binding
try {
  binding = require('../binding.js')
} catch (cause) {
  throw noBinary(cause)
}

module.exports = binding
