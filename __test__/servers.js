'use strict'

// Real servers for the integration tests: each test file starts its own on a free loopback port, in a temporary
// directory, and stops it when done. Where the server is not installed, the tests are skipped loudly, except under
// CI, where a skip is a failure.

const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

/** A TCP port on 127.0.0.1 that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** The first of `candidates` that is an executable file, or `undefined`. */
function findExecutable(candidates) {
  return candidates.find(file => {
    try {
      fs.accessSync(file, fs.constants.X_OK)
      return fs.statSync(file).isFile()
    } catch {
      return false
    }
  })
}

/** `name` on the PATH, as a full path, or `undefined`. */
function onPath(name) {
  const dirs = (process.env.PATH || '').split(path.delimiter).filter(Boolean)
  return findExecutable(dirs.map(d => path.join(d, name)))
}

/**
 * How a missing server is reported: a skipped test with a loud message, or, when `CI` is set, a failing one.
 * `test` is node:test's `test`.
 */
function reportMissing(test, what, install) {
  const message = `${what} is not installed, so its integration tests cannot run (install it with: ${install})`
  process.stderr.write(`\n*** SKIPPED: ${message} ***\n\n`)
  if (process.env.CI) {
    test(`${what} is installed (required when CI is set)`, () => {
      throw new Error(message)
    })
  } else {
    test(`${what} integration tests`, { skip: message }, () => {})
  }
}

/** Runs `file args` as `user` when this process is root (PostgreSQL refuses to run as root), else as is. */
function runAs(user, file, args, options = {}) {
  const [cmd, argv] =
    process.getuid && process.getuid() === 0 ? ['runuser', ['-u', user, '--', file, ...args]] : [file, args]
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 120_000, ...options })
  if (r.status !== 0) {
    throw new Error(`${file} ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.error ?? ''}${r.stdout}${r.stderr}`)
  }
  return r
}

/** PostgreSQL's server binaries: the newest Debian version's, else those on the PATH. */
function postgresBinDir() {
  const base = '/usr/lib/postgresql'
  let versions = []
  try {
    versions = fs
      .readdirSync(base)
      .filter(v => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a))
  } catch {
    // Not Debian's layout.
  }
  for (const v of versions) {
    const dir = path.join(base, v, 'bin')
    if (findExecutable([path.join(dir, 'initdb')]) && findExecutable([path.join(dir, 'pg_ctl')])) return dir
  }
  const initdb = onPath('initdb')
  return initdb && onPath('pg_ctl') ? path.dirname(initdb) : undefined
}

/**
 * Starts a throwaway PostgreSQL cluster on a free loopback port: trust auth for the user `snowid`, no fsync.
 * Returns `{ port, host, user, database, restart(), stop() }`, or `undefined` when PostgreSQL is not installed.
 */
async function startPostgres() {
  const bin = postgresBinDir()
  if (!bin) return undefined
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-pg-'))
  const data = path.join(root, 'data')
  const asRoot = process.getuid && process.getuid() === 0
  if (asRoot) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
    if (ids.status !== 0) throw new Error('running as root, but there is no postgres user to run PostgreSQL as')
    const uid = Number(ids.stdout.trim())
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim())
    fs.chownSync(root, uid, gid)
  }
  runAs('postgres', path.join(bin, 'initdb'), ['-D', data, '-U', 'snowid', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  const port = await freePort()
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${root}`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
  ].join(' ')
  const start = () =>
    runAs('postgres', path.join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-l',
      path.join(root, 'log'),
      '-o',
      options,
      '-w',
      '-t',
      '60',
      'start',
    ])
  start()
  return {
    host: '127.0.0.1',
    port,
    user: 'snowid',
    database: 'postgres',
    /**
     * Stops the server (`pg_ctl stop -m fast`: clients are disconnected, the data stays), waits `downMs`, and starts
     * it again. Resolves to the `Date.now()` just before it was started again.
     */
    async restart(downMs = 0) {
      runAs('postgres', path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop'])
      await new Promise(r => setTimeout(r, downMs))
      const startedAt = Date.now()
      start()
      return startedAt
    },
    stop() {
      try {
        runAs('postgres', path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'])
      } finally {
        fs.rmSync(root, { recursive: true, force: true })
      }
    },
  }
}

/** Waits until something accepts TCP connections on 127.0.0.1:`port`. */
async function waitForPort(port, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  for (;;) {
    const ok = await new Promise(resolve => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`)
    await new Promise(r => setTimeout(r, 50))
  }
}

/**
 * Starts a redis-server on a free loopback port with persistence off, so that a restart loses every key.
 * Returns `{ port, url, stop(), restart() }`, or `undefined` when redis-server is not installed.
 */
async function startRedis() {
  const bin = onPath('redis-server') || findExecutable(['/usr/bin/redis-server', '/usr/local/bin/redis-server'])
  if (!bin) return undefined
  const port = await freePort()
  let child
  const launch = async () => {
    const spawnedAt = Date.now()
    child = spawn(
      bin,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      {
        stdio: 'ignore',
      },
    )
    await waitForPort(port)
    return spawnedAt
  }
  const kill = () =>
    new Promise(resolve => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill('SIGKILL')
    })
  await launch()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: kill,
    /**
     * Kills the server (its data is gone), waits `downMs`, and starts an empty one on the same port. Resolves to the
     * `Date.now()` just before the new server was spawned: no client can have reached it earlier.
     */
    async restart(downMs = 0) {
      await kill()
      await new Promise(r => setTimeout(r, downMs))
      return launch()
    },
  }
}

/** MariaDB's server and its datadir installer (Debian's mariadb-server puts the server in /usr/sbin), or `undefined`. */
function mariadbBins() {
  const server =
    onPath('mariadbd') || findExecutable(['/usr/sbin/mariadbd', '/usr/local/sbin/mariadbd', '/usr/local/bin/mariadbd'])
  const install =
    onPath('mariadb-install-db') || findExecutable(['/usr/bin/mariadb-install-db', '/usr/local/bin/mariadb-install-db'])
  return server && install ? { server, install } : undefined
}

/**
 * Starts a throwaway MariaDB on a free loopback port, in a new datadir in a temporary directory: no grant tables
 * (any user, no password), no binary log, no flush at commit. When this process is root, the server runs as root
 * (`--user=root`), which mariadbd otherwise refuses. Returns `{ host, port, user, stop() }`, or `undefined` when
 * MariaDB is not installed.
 */
async function startMariadb() {
  const bins = mariadbBins()
  if (!bins) return undefined
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-mariadb-'))
  const data = path.join(root, 'data')
  const asUser = process.getuid && process.getuid() === 0 ? ['--user=root'] : []
  let child
  // If this process ends before stop() (a crash, an uncaught error), the server and its directory go with it.
  const cleanUp = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    fs.rmSync(root, { recursive: true, force: true })
  }
  process.once('exit', cleanUp)
  try {
    const install = spawnSync(
      bins.install,
      ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...asUser],
      { encoding: 'utf8', timeout: 120_000 },
    )
    if (install.status !== 0) {
      throw new Error(
        `mariadb-install-db exited ${install.status ?? install.signal}: ${install.error ?? ''}${install.stdout}${install.stderr}`,
      )
    }
    const port = await freePort()
    const log = path.join(root, 'error.log')
    child = spawn(
      bins.server,
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${path.join(root, 'mariadb.sock')}`,
        `--pid-file=${path.join(root, 'mariadb.pid')}`,
        `--log-error=${log}`,
        '--skip-grant-tables',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=64M',
        '--innodb-flush-log-at-trx-commit=0',
        ...asUser,
      ],
      { stdio: 'ignore' },
    )
    const exited = new Promise(resolve => child.once('exit', resolve))
    const early = exited.then(code => {
      throw new Error(`mariadbd exited ${code} before it listened: ${fs.readFileSync(log, 'utf8').slice(-2000)}`)
    })
    await Promise.race([waitForPort(port, 60_000), early])
    early.catch(() => {})
    return {
      host: '127.0.0.1',
      port,
      user: 'root',
      /** Shuts the server down (SIGTERM, then SIGKILL after 30 s) and removes its directory. */
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
          child.kill('SIGTERM')
          await exited
          clearTimeout(timer)
        }
        fs.rmSync(root, { recursive: true, force: true })
        process.off('exit', cleanUp)
      },
    }
  } catch (err) {
    cleanUp()
    process.off('exit', cleanUp)
    throw err
  }
}

module.exports = {
  freePort,
  findExecutable,
  onPath,
  reportMissing,
  runAs,
  startMariadb,
  startPostgres,
  startRedis,
  waitForPort,
}
