'use strict'

// Windows under Wine, for scripts/test-windows.js: Debian's wine64 and mingw-w64 (installed by .ci/run), a Wine
// prefix in `.cache/wine/prefix`, and the addon built for x86_64-pc-windows-gnu.
// - The official Windows Node refuses to start unless the prefix says Windows 10 (`winecfg -v win10`).
// - Rust's std imports ProcessPrng from bcryptprimitives.dll, which Wine 8 lacks: a stand-in built from
//   scripts/wine/bcryptprimitives.c goes into the prefix's system32 when Wine has none.
// - Node 24's V8 cannot start under Wine 8 unless it does without VirtualAlloc2 (see windowsNode).
// - napi-build links a windows-gnu addon against a `libnode.dll` it finds through LIBNODE_PATH, but napi-rs resolves
//   N-API at run time on Windows and imports nothing from it: an empty DLL built with mingw does.

const crypto = require('node:crypto')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { CACHE, NODE_VERSIONS, cachedWindowsNode } = require('./tools.js')

const ROOT = path.resolve(__dirname, '..')
const TARGET = 'x86_64-pc-windows-gnu'
const WINE_DIR = path.join(CACHE, 'wine')
const PREFIX = path.join(WINE_DIR, 'prefix')
const STUB = path.join(__dirname, 'wine', 'bcryptprimitives.c')
/** Where `buildAddon` builds, apart from `npm run build`'s target dir, which it would otherwise invalidate. */
const TARGET_DIR = path.join(ROOT, 'target', 'windows')
/** The name the official (MSVC-built) node.exe's loader asks for: the gnu build answers to it. */
const ADDON = path.join(ROOT, 'snowid.win32-x64-msvc.node')

/** The first of `names` that is a file, or is found on PATH. */
function which(...names) {
  for (const name of names) {
    if (name.includes('/')) {
      if (fs.existsSync(name)) return name
      continue
    }
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
      if (dir && fs.existsSync(path.join(dir, name))) return path.join(dir, name)
    }
  }
  return null
}

/** Wine's loader and server and mingw's compiler, or an error that says what to install. */
function tools() {
  // Debian's wine64 package puts its loader in /usr/lib/wine; the wine package adds /usr/bin/wine.
  const wine = which('/usr/lib/wine/wine64', 'wine64', 'wine')
  const wineserver = which('/usr/lib/wine/wineserver', 'wineserver')
  const gcc = which('x86_64-w64-mingw32-gcc')
  const missing = [!(wine && wineserver) && 'wine64', !gcc && 'mingw-w64'].filter(Boolean)
  if (missing.length) {
    throw new Error(`Windows under Wine needs Debian's ${missing.join(' and ')}: apt-get install ${missing.join(' ')}`)
  }
  return { wine, wineserver, gcc }
}

/** The environment of Wine programs: this prefix, no debug output, no GUI, no Mono or Gecko installers. */
function wineEnv(extra = {}) {
  const env = { ...process.env, WINEPREFIX: PREFIX, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=', ...extra }
  delete env.DISPLAY
  delete env.WAYLAND_DISPLAY
  return env
}

function sh(cmd, args, options = {}) {
  console.log(`$ ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', timeout: 600_000, ...options })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? r.signal ?? `exit ${r.status}`}`)
}

/**
 * The Wine prefix, made once: Windows 10, and the bcryptprimitives.dll stand-in where Wine has none. Remade when the
 * Wine version or the stand-in's source changes.
 */
function ensurePrefix() {
  const { wine, wineserver, gcc } = tools()
  const version = spawnSync(wine, ['--version'], { encoding: 'utf8', env: wineEnv() }).stdout?.trim()
  const stamp = path.join(PREFIX, '.snowid-prefix')
  const want = `${version} ${crypto.createHash('sha256').update(fs.readFileSync(STUB)).digest('hex')}`
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === want) return
  const started = Date.now()
  fs.rmSync(PREFIX, { recursive: true, force: true })
  fs.mkdirSync(PREFIX, { recursive: true })
  const env = wineEnv()
  sh(wine, ['wineboot', '-i'], { env, stdio: ['ignore', 'ignore', 'inherit'] })
  sh(wine, ['winecfg', '-v', 'win10'], { env })
  sh(wineserver, ['-w'], { env })
  const system32 = path.join(PREFIX, 'drive_c', 'windows', 'system32')
  if (!fs.existsSync(path.join(system32, 'bcryptprimitives.dll'))) {
    sh(gcc, ['-shared', '-O2', '-s', '-o', path.join(system32, 'bcryptprimitives.dll'), STUB, '-ladvapi32'])
  }
  fs.writeFileSync(stamp, want)
  console.log(`Wine prefix ${path.relative(ROOT, PREFIX)} (${version}) made in ${Date.now() - started} ms`)
}

/** Runs `node.exe -p expression` under Wine: `{ status, out }` (stdout and stderr). */
function evalWith(node, expression) {
  // The stdout of a Windows program under Wine cannot be a Unix pipe (EBADF): it goes to a file.
  const file = path.join(WINE_DIR, `.eval-${process.pid}`)
  try {
    const fd = fs.openSync(file, 'w')
    const r = spawnSync(tools().wine, [node, '-p', expression], {
      env: wineEnv(),
      stdio: ['ignore', fd, fd],
      timeout: 120_000,
    })
    fs.closeSync(fd)
    return { status: r.status, out: fs.readFileSync(file, 'utf8').trim() }
  } finally {
    fs.rmSync(file, { force: true })
  }
}

// Node 24's V8 reserves its pointer tables as placeholders (VirtualAlloc2 with
// MEM_RESERVE_PLACEHOLDER) whenever kernelbase.dll exports VirtualAlloc2. Wine 8 exports it but cannot make
// placeholders, so Node aborts at start ("Fatal process out of memory: SegmentedTable::InitializeTable (subspace
// allocation)"). Where VirtualAlloc2 is missing (Windows 10 before 1803), V8 reserves them without placeholders: a
// copy of node.exe whose one lookup of the name asks for "VirtualAlloc1", which no DLL exports, takes that path.
const PLACEHOLDER_ABORT = 'SegmentedTable::InitializeTable (subspace allocation)'
const LOOKUP = Buffer.from('VirtualAlloc2\0', 'latin1')

/**
 * The node.exe of Node `line` (scripts/tools.js) that starts under Wine: the official one, or where it aborts as
 * above, a copy that differs from it in that one byte. Checks that it says Windows 10. Returns `{ node, note }`.
 */
async function windowsNode(line) {
  ensurePrefix()
  const official = await cachedWindowsNode(line)
  const release = "require('node:os').release()"
  let node = official
  let note = ''
  let r = evalWith(node, release)
  // Wine may report the abort with exit status 0 (its debugger starts and ends): the message decides.
  if (r.out.includes(PLACEHOLDER_ABORT)) {
    node = path.join(WINE_DIR, `node-${NODE_VERSIONS[line]}`, 'node.exe')
    if (!fs.existsSync(node)) {
      const bytes = fs.readFileSync(official)
      const at = bytes.indexOf(LOOKUP)
      if (at < 0 || bytes.indexOf(LOOKUP, at + 1) >= 0) {
        throw new Error(
          `${official}: expected one "VirtualAlloc2" lookup to redirect, found ${at < 0 ? 'none' : 'several'}`,
        )
      }
      bytes[at + LOOKUP.length - 2] = '1'.charCodeAt(0)
      fs.mkdirSync(path.dirname(node), { recursive: true })
      fs.writeFileSync(`${node}.tmp`, bytes)
      fs.renameSync(`${node}.tmp`, node)
    }
    note = ' (a copy whose V8 does not look up VirtualAlloc2: Wine 8 cannot reserve placeholders)'
    r = evalWith(node, release)
  }
  if (r.status !== 0 || !r.out.startsWith('10.')) {
    throw new Error(`${node} under Wine: expected Windows 10 (os.release() 10.x), found exit ${r.status}: ${r.out}`)
  }
  return { node, note: `Windows ${r.out}${note}` }
}

/** An empty DLL named libnode.dll, for napi-build's link step (see the header). Returns its directory. */
function emptyLibnode() {
  const dir = path.join(WINE_DIR, 'libnode')
  const dll = path.join(dir, 'libnode.dll')
  if (!fs.existsSync(dll)) {
    fs.mkdirSync(dir, { recursive: true })
    sh(tools().gcc, ['-shared', '-x', 'c', '-o', dll, '-'], {
      input: 'void snowid_libnode_stand_in(void) {}\n',
      stdio: 'pipe',
    })
  }
  return dir
}

/** The Rust target, added with rustup when missing. */
function ensureTarget() {
  const installed = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).stdout ?? ''
  if (!installed.split('\n').includes(TARGET)) sh('rustup', ['target', 'add', TARGET])
}

/** The environment of cargo and napi builds for the Windows target. */
function buildEnv() {
  return { ...process.env, LIBNODE_PATH: emptyLibnode(), CARGO_TARGET_DIR: TARGET_DIR }
}

/** Builds the addon for x86_64-pc-windows-gnu with napi build (release, as published); returns its path. */
function buildAddon() {
  ensureTarget()
  const out = path.join(WINE_DIR, 'build')
  const napi = path.join(ROOT, 'node_modules', '.bin', 'napi')
  sh(napi, ['build', '--platform', '--release', '--target', TARGET, '--no-js', '--output-dir', out], {
    env: buildEnv(),
  })
  return path.join(out, 'snowid.win32-x64-gnu.node')
}

module.exports = {
  ROOT,
  TARGET,
  PREFIX,
  ADDON,
  tools,
  wineEnv,
  ensurePrefix,
  windowsNode,
  ensureTarget,
  buildEnv,
  buildAddon,
}
