'use strict'

// The native addon, loaded directly where that is plain (`direct`), else by `binding.js` (napi-rs's generated loader). When no binary loads on this platform, the
// error says which platform this is, which platforms have prebuilt binaries, and how to build one from source; when
// a runtime's permissions stopped the load (Deno without --allow-ffi, --allow-env or --allow-read), it names them.
// When the loader fell back to the WASI build although this platform's native binary is installed, a SnowidWarning
// (SNOWID_NATIVE_UNLOADABLE) gives the native binary's own error: a missing library, a wrong architecture, a glibc
// too old. The fallback serves, but it is slower to load and has no host lease, which no one should learn late.
// When this code runs from a bundle that left the native binary behind, the error names the bundler setting that
// keeps snowid external.

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

// The errors of a cause chain, outermost first.
function* causes(cause) {
  for (let e = cause, depth = 0; e && depth < 20; e = e.cause, depth++) yield e
}

// The runtime permission that stopped the load, if one did: Deno's NotCapable or PermissionDenied ("Requires ffi
// access to ..., run again with the --allow-ffi flag"), or Node's permission model (--permission without
// --allow-addons or --allow-fs-read). The loader's chain keeps only messages, so it is read from them.
function deniedPermission(cause) {
  // The deepest one: the loader chains its attempts so that the first, the native binary's, is innermost.
  let found = null
  for (const e of causes(cause)) {
    const message = String(e.message)
    const deno = /Requires (\w+) access[^\n]*/.exec(message)
    if (deno) found = { flag: `--allow-${deno[1]}`, text: deno[0].slice(0, 200) }
    else if (e.code === 'ERR_DLOPEN_DISABLED' || /--allow-addons/.test(message))
      found = { flag: '--allow-addons', text: message.slice(0, 200) }
    else if (e.code === 'ERR_ACCESS_DENIED') found = { flag: '--allow-fs-read', text: message.slice(0, 200) }
  }
  return found
}

// The Deno flags that snowid needs: the loader reads environment variables, the binary is a file, and loading it is
// FFI. Deno asks for them one at a time, so the message lists all three.
const DENO_FLAGS = '--allow-ffi --allow-env --allow-read'

function permissionError(denied, cause) {
  const how = process.versions.deno
    ? `snowid needs FFI, environment and read access: deno run ${DENO_FLAGS} main.ts (or -A).`
    : `Run node with ${denied.flag}: with --permission, snowid needs --allow-addons and --allow-fs-read for its ` +
      `package.`
  const e = new Error(
    `snowid: ${runtime()} refused a permission that loading snowid needs (${denied.text}). ${how} The loader's ` +
      `own error is this error's cause.`,
    { cause },
  )
  e.code = 'ERR_SNOWID_RUNTIME_PERMISSION'
  return e
}

// The lowest Node major that `engines.node` (of the form `>=N`) admits. Platform packages carry the same engines,
// and npm and pnpm skip an optional package whose engines exclude the running Node, so below it no native binary is
// installed.
function outsideEngines() {
  if (process.versions.bun || process.versions.deno) return null
  const range = String(require('../package.json').engines.node)
  const min = /^>=\s*(\d+)/.exec(range)
  const major = Number(process.versions.node.split('.')[0])
  return min && major < Number(min[1]) ? range : null
}

// The bundler that inlined this file into another, or null when it runs from the package itself. In a bundle this
// file is not `lib/native.js` any more: its `__filename` is the bundle's (esbuild, webpack, rollup and Vite in
// CommonJS), a name of the bundler's own (Turbopack's `[project]/...`), or there is none (an ES module bundle); and
// webpack defines `__webpack_require__`. Next.js (with Turbopack or webpack) sets NEXT_RUNTIME in its server's
// environment, which names the bundler once a bundle is seen.
function bundler() {
  let by = null
  if (typeof __webpack_require__ === 'function') by = 'webpack'
  else if (typeof __filename !== 'string' || !/native\.js$/.test(__filename) || __filename.startsWith('[project]')) {
    by = 'a bundler'
  }
  return by && process.env.NEXT_RUNTIME ? 'Next.js' : by
}

// Where each bundler keeps snowid external (docs/bundlers.md has the details).
const EXTERNAL = [
  "Next.js (Turbopack or webpack): serverExternalPackages: ['snowid'] in next.config.js",
  "Vite SSR with ssr.noExternal: true: ssr.external: ['snowid']",
  'esbuild: --external:snowid (or --packages=external)',
  'webpack: externals: [/^snowid(\\/|$)/]',
  'rollup: external: [/^snowid(\\/|$)/]',
].join('; ')

function bundledError(by, cause) {
  const first = by === 'Next.js' ? "Add serverExternalPackages: ['snowid'] to next.config.js and build again. " : ''
  const e = new Error(
    `snowid: the native binary did not load because ${by} bundled snowid${
      typeof __filename === 'string' ? ` (into ${__filename})` : ''
    } and left its native file (snowid-<platform>, a .node file) behind: a .node file cannot be bundled. ${first}` +
      `Keep snowid external, so that Node loads it from node_modules at run time: ${EXTERNAL}. See snowid's ` +
      `docs/bundlers.md. The loader's own error is this error's cause.`,
    { cause },
  )
  e.code = 'ERR_SNOWID_NO_BINARY'
  return e
}

function safely(fn) {
  try {
    return fn()
  } catch {
    return null
  }
}

function noBinary(cause) {
  const denied = deniedPermission(cause)
  if (denied) return permissionError(denied, cause)
  const { napi, repository } = require('../package.json')
  const supported = napi.targets.map(platformName).join(', ')
  const c = libc()
  const here = `${process.platform}-${process.arch}${c ? ` (${c})` : ''}`
  const url = String(repository.url)
    .replace(/^git\+/, '')
    .replace(/\.git$/, '')
  const by = safely(bundler)
  if (by) return bundledError(by, cause)
  const engines = outsideEngines()
  if (engines) {
    const e = new Error(
      `snowid: ${runtime()} is outside snowid's engines (node ${engines}), so npm and pnpm skipped the platform ` +
        `package snowid-<platform> that holds the native binary, and no binary loads. Use Node ${engines.replace(/^>=\s*/, '')} ` +
        `or later, and install again. The loader's own error is this error's cause.`,
      { cause },
    )
    e.code = 'ERR_SNOWID_NO_BINARY'
    return e
  }
  const glibc = glibcTooOld(cause)
  const name = glibc ? null : safely(hostPlatform)
  const failure = name && safely(() => nativeFailure(name))
  if (failure) {
    const text = String(failure.message || failure)
      .split('\n')[0]
      .slice(0, 300)
    const e = new Error(
      `snowid: the native binary snowid-${name} is installed but does not load on ${here} under ${runtime()}: ` +
        `${text}. Reinstall snowid on this system (a node_modules copied from another machine or architecture ` +
        `does not load), or build from source (${url}). The loader's own error is this error's cause.`,
      { cause },
    )
    e.code = 'ERR_SNOWID_NO_BINARY'
    return e
  }
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

// This process's platform package, as binding.js names it, when snowid ships one: linux-x64-gnu, darwin-arm64, ...
function hostPlatform() {
  const { platform, arch } = process
  let name
  if (platform === 'linux') {
    if (arch === 'arm') name = 'linux-arm-gnueabihf'
    else name = `linux-${arch}-${libc() === 'musl' ? 'musl' : 'gnu'}`
  } else if (platform === 'win32') name = `win32-${arch}-msvc`
  else if (platform === 'android') name = arch === 'arm' ? 'android-arm-eabi' : `android-${arch}`
  else name = `${platform}-${arch}`
  const { napi } = require('../package.json')
  return napi.targets.map(platformName).includes(name) ? name : null
}

// Why this platform's native binary did not load, when one is installed: its own error, got by loading it again
// (a binary that failed to load is not cached, so the attempt is the loader's, repeated). Null when none is
// installed (a lost platform package: the documented fallback) or when it loads now.
function nativeFailure(name) {
  const { binaryName } = require('../package.json').napi
  // The loader tries NAPI_RS_NATIVE_LIBRARY_PATH alone when it is set.
  const override = process.env.NAPI_RS_NATIVE_LIBRARY_PATH
  const specifiers = override ? [override] : [`../${binaryName}.${name}.node`, `${binaryName}-${name}`]
  for (const specifier of specifiers) {
    try {
      require(specifier)
      return null
    } catch (err) {
      const missing =
        err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(specifier.replace(/^\.\.\//, ''))
      if (!missing) return err
    }
  }
  return null
}

function wasiChosen() {
  const force = process.env.NAPI_RS_FORCE_WASI
  return force === 'true' || force === 'error' || Boolean(process.env.NAPI_RS_WASI_FLAVOR)
}

// The loader fell back to WASI although nothing asked for it: say why, once, unless it is the documented case of a
// platform package that is not installed on a Node that engines admits.
function warnFallback() {
  let message
  try {
    if (wasiChosen()) return
    const name = hostPlatform()
    const failure = (name || process.env.NAPI_RS_NATIVE_LIBRARY_PATH) && nativeFailure(name)
    const engines = outsideEngines()
    if (failure) {
      const denied = deniedPermission(failure)
      const text = String((failure && failure.message) || failure)
        .split('\n')[0]
        .slice(0, 300)
      message =
        `the native binary ${process.env.NAPI_RS_NATIVE_LIBRARY_PATH || `snowid-${name}`} is installed but does not ` +
        `load under ${runtime()}, so snowid runs on its ` +
        `WASI build (slower to load, no host lease, see docs/platforms.md). The native error: ${text}. ` +
        (denied
          ? `Grant ${process.versions.deno ? DENO_FLAGS : denied.flag}.`
          : `Reinstall snowid on this system, or set NAPI_RS_FORCE_WASI=true to choose the WASI build.`)
    } else if (engines && name) {
      message =
        `${runtime()} is outside snowid's engines (node ${engines}), so the package manager skipped ` +
        `snowid-${name}, and snowid runs on its WASI build. Use a Node that engines admits, and install again.`
    }
  } catch {
    // A runtime that denies reading the environment or the report: nothing more can be said.
  }
  if (message) process.emitWarning(message, { type: 'SnowidWarning', code: 'SNOWID_NATIVE_UNLOADABLE' })
}

// The binary binding.js would load first, required here without it: binding.js is 35 KB of JS to parse on every
// start. Only on the platforms whose first candidate is plain (a Linux whose libc /usr/bin/ldd names, as binding.js
// reads it; macOS; Windows with msvc), and only while no NAPI_RS_* variable asks binding.js for something else (an
// override path, WASI, a version check). Anything that does not load here goes to binding.js, which tries every
// candidate again in its order and makes the errors and the WASI fallback.
function direct() {
  const { platform, arch, env } = process
  if (env.NAPI_RS_NATIVE_LIBRARY_PATH || env.NAPI_RS_FORCE_WASI || env.NAPI_RS_WASI_FLAVOR) return null
  if (env.NAPI_RS_ENFORCE_VERSION_CHECK) return null
  let name = null
  if (platform === 'linux' && ['x64', 'arm64', 'riscv64', 'loong64'].includes(arch)) {
    let musl
    try {
      musl = require('node:fs').readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
    } catch {
      return null
    }
    name = `linux-${arch}-${musl ? 'musl' : 'gnu'}`
  } else if (platform === 'darwin' && (arch === 'x64' || arch === 'arm64')) name = `darwin-${arch}`
  else if (platform === 'win32' && (arch === 'arm64' || arch === 'ia32')) name = `win32-${arch}-msvc`
  else if (platform === 'win32' && arch === 'x64') {
    const v = process.config && process.config.variables
    if (v && (v.shlib_suffix === 'dll.a' || v.node_target_type === 'shared_library')) return null
    name = 'win32-x64-msvc'
  }
  if (!name) return null
  for (const specifier of [`../snowid.${name}.node`, `snowid-${name}`]) {
    let found
    try {
      found = require(specifier)
    } catch {
      continue
    }
    // What binding.js marks on the binding it loads natively (see __napiStampBindingTarget there).
    if (Object.hasOwn(found, '__napiBindingTarget') || !Object.isExtensible(found)) return null
    Object.defineProperty(found, '__napiBindingTarget', {
      configurable: true,
      enumerable: true,
      value: 'native',
      writable: true,
    })
    return found
  }
  return null
}

// A runtime that refuses a read (Deno without --allow-env or --allow-read throws on process.env) goes to binding.js
// too, whose failure names the permission (noBinary).
let binding
try {
  binding = direct()
} catch {
  binding = null
}
if (!binding) {
  try {
    binding = require('../binding.js')
  } catch (cause) {
    throw noBinary(cause)
  }
}
if (binding.__napiBindingTarget === 'wasm32-wasi') warnFallback()

module.exports = binding
