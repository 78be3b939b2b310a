'use strict'

// Real servers for the integration tests: each test file starts its own on a free loopback port, in a temporary
// directory, and stops it when done. Where the server is not installed, the tests are skipped loudly, except under
// CI, where a skip is a failure.

const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

// Ports for the servers and proxies the tests start, drawn from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): the kernel never hands those out, neither to listen(0) nor as the local port of an
// outgoing connection. A server stopped for an outage, or a proxy closed, can then listen on its port again, even
// with other test runs making connections on the same host meanwhile (CI runs several tiers at once).
const EPHEMERAL_LOW = (() => {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isSafeInteger(low) && low > 12_000 ? low : null
  } catch {
    return null
  }
})()

function listensOn(port) {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', err => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(null) : reject(err)))
    server.listen(port, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** A TCP port on 127.0.0.1 that was free a moment ago, below the ephemeral range where there is one. */
async function freePort() {
  if (EPHEMERAL_LOW === null) return listensOn(0)
  for (let i = 0; i < 100; i++) {
    const port = await listensOn(10_000 + Math.floor(Math.random() * (EPHEMERAL_LOW - 10_000)))
    if (port !== null) return port
  }
  return listensOn(0)
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

/** What to install for each kind of server, as reportMissing takes it. */
const MISSING = {
  redis: ['redis-server', "apt-get install redis-server (Debian's package)"],
  postgres: ['PostgreSQL', "apt-get install postgresql (Debian's package)"],
  mariadb: ['MariaDB', "apt-get install mariadb-server (Debian's package)"],
}

/**
 * A server for the tests of a file: what `start` (startRedis, startPostgres, startMariadbDatabase...) resolves to,
 * stopped after the tests of `test` unless `stop` is false; null, once reported missing as `kind` (a key of MISSING),
 * when it is not installed.
 */
async function serverFor(test, kind, start, { stop = true } = {}) {
  const started = await start()
  if (!started) {
    reportMissing(test, ...MISSING[kind])
    return null
  }
  // startMariadbDatabase resolves to { server, settings, admin }; the others to the server.
  if (stop) test.after(() => (started.server ?? started).stop())
  return started
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
 * Starts a throwaway PostgreSQL cluster on a free loopback port: trust auth for the user `snowid`, no fsync;
 * `settings` (name: value) are added to or override its `-c` settings. With `standbyOf` (a server this returned), the
 * cluster is a streaming standby of that one, made with `pg_basebackup -R -X stream`, that streams through `via` (a
 * port that reaches the primary, such as a proxy's). Returns `{ port, host, user, database, restart(), promote(), kill(),
 * stop() }`, or `undefined` when PostgreSQL is not installed.
 */
async function startPostgres({ settings = {}, standbyOf, via } = {}) {
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
  // A cluster that could not be made leaves nothing behind.
  const made = () => {
    if (standbyOf) {
      runAs('postgres', path.join(bin, 'pg_basebackup'), [
        '-h',
        '127.0.0.1',
        '-p',
        String(standbyOf.port),
        '-U',
        'snowid',
        '-D',
        data,
        '-R',
        '-X',
        'stream',
        '--no-sync',
      ])
    } else {
      runAs('postgres', path.join(bin, 'initdb'), [
        '-D',
        data,
        '-U',
        'snowid',
        '--auth=trust',
        '-E',
        'UTF8',
        '--no-sync',
      ])
    }
  }
  try {
    made()
  } catch (err) {
    fs.rmSync(root, { recursive: true, force: true })
    throw err
  }
  const port = await freePort()
  const all = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: root,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    // A standby streams through `via`: this overrides the primary_conninfo that pg_basebackup -R wrote.
    ...(standbyOf ? { primary_conninfo: `'host=127.0.0.1 port=${via ?? standbyOf.port} user=snowid'` } : {}),
    ...settings,
  }
  const options = [`-p ${port}`, ...Object.entries(all).map(([k, v]) => `-c ${k}=${v}`)].join(' ')
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
    /** Promotes a standby (`pg_ctl promote`, waiting until it accepts writes). */
    promote() {
      runAs('postgres', path.join(bin, 'pg_ctl'), ['-D', data, '-w', '-t', '60', 'promote'])
    },
    /** Starts the server again after kill() (crash recovery replays its WAL). */
    start,
    /** Stops the server as a crash would (`pg_ctl stop -m immediate`); its data stays until stop(). */
    kill() {
      runAs('postgres', path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'])
    },
    stop() {
      try {
        // Already stopped by kill(): pg_ctl status says so (exit 3), and there is nothing to stop.
        const status = spawnSync(asRoot ? 'runuser' : path.join(bin, 'pg_ctl'), [
          ...(asRoot ? ['-u', 'postgres', '--', path.join(bin, 'pg_ctl')] : []),
          '-D',
          data,
          'status',
        ])
        if (status.status === 0)
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
 * Waits until the redis-server `child` answers on `port`, or throws once it has exited. A connect alone proves
 * nothing: between freePort and the server's bind another process may take the port (the server then exits), and a
 * connect to a loopback port nothing listens on can meet itself when the kernel picks that port as its source. So the
 * server's INFO must name the child's pid.
 */
async function waitForRedis(port, child, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw Object.assign(new Error(`redis-server exited (${child.exitCode ?? child.signalCode}) on port ${port}`), {
        exited: true,
      })
    }
    const pid = await new Promise(resolve => {
      const socket = net.connect(port, '127.0.0.1')
      let reply = ''
      socket.setTimeout(2000, () => socket.destroy())
      socket.once('connect', () => socket.write('INFO server\r\n'))
      socket.on('data', d => {
        reply += d
        const m = /process_id:(\d+)/.exec(reply)
        if (m) {
          socket.destroy()
          resolve(Number(m[1]))
        }
      })
      socket.once('error', () => {})
      socket.once('close', () => resolve(null))
    })
    if (pid === child.pid) return
    if (Date.now() > until)
      throw new Error(`redis-server (pid ${child.pid}) does not answer on port ${port} after ${timeoutMs} ms`)
    await new Promise(r => setTimeout(r, 50))
  }
}

/** The redis-server binary, or `undefined`. */
const redisBin = () =>
  onPath('redis-server') || findExecutable(['/usr/bin/redis-server', '/usr/local/bin/redis-server'])

/**
 * Starts a redis-server on a free loopback port with persistence off, so that a restart loses every key; `args` are
 * added to its command line (`--replicaof 127.0.0.1 PORT`, `--cluster-enabled yes`, ...), and `port` may be given.
 * Returns `{ port, url, stop(), restart() }`, or `undefined` when redis-server is not installed.
 */
async function startRedis({ args = [], port: given } = {}) {
  const bin = redisBin()
  if (!bin) return undefined
  let port = given ?? (await freePort())
  // Its working directory: a replica writes the snapshot it receives there.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-redis-'))
  let child
  const launch = async () => {
    const spawnedAt = Date.now()
    child = spawn(
      bin,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        '--dir',
        dir,
        ...args,
      ],
      { stdio: 'ignore' },
    )
    await waitForRedis(port, child)
    return spawnedAt
  }
  const kill = () =>
    new Promise(resolve => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill('SIGKILL')
    })
  // A port taken by another process before the server's bind: another free port, when none was given.
  for (let tries = 1; ; tries++) {
    try {
      await launch()
      break
    } catch (err) {
      await kill()
      if (!err.exited || given !== undefined || tries === 5) {
        fs.rmSync(dir, { recursive: true, force: true })
        throw err
      }
      port = await freePort()
    }
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child.pid
    },
    async stop() {
      await kill()
      fs.rmSync(dir, { recursive: true, force: true })
    },
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
 * (`--user=root`), which mariadbd otherwise refuses; `args` are added to its command line (`--log-bin`,
 * `--server-id=2`, ...). Returns `{ host, port, user, restart(), kill(), stop() }`, or `undefined` when MariaDB is not
 * installed.
 */
async function startMariadb({ args = [] } = {}) {
  const bins = mariadbBins()
  if (!bins) return undefined
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-mariadb-'))
  const data = path.join(root, 'data')
  // A temporary directory of its own: a starting mariadbd removes every "#sql*" file in its tmpdir as its own leftover,
  // so with a shared /tmp it removed another server's temporary tables (CI: an install beside another server failed
  // with "Error on delete of '/tmp/#sql-temptable-…' (Errcode: 2)").
  const tmp = path.join(root, 'tmp')
  fs.mkdirSync(tmp)
  const asUser = process.getuid && process.getuid() === 0 ? ['--user=root'] : []
  let child
  const cleanUp = cleanedUpAtExit(root, () => [child])
  try {
    const install = spawnSync(
      bins.install,
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--tmpdir=${tmp}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
        ...asUser,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    )
    if (install.status !== 0) {
      throw new Error(
        `mariadb-install-db exited ${install.status ?? install.signal}: ${install.error ?? ''}${install.stdout}${install.stderr}`,
      )
    }
    const port = await freePort()
    const log = path.join(root, 'error.log')
    const serve = () =>
      spawn(
        bins.server,
        [
          '--no-defaults',
          `--datadir=${data}`,
          `--tmpdir=${tmp}`,
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
          ...args,
        ],
        { stdio: 'ignore' },
      )
    child = serve()
    let exited = new Promise(resolve => child.once('exit', resolve))
    const early = exited.then(code => {
      throw new Error(`mariadbd exited ${code} before it listened: ${fs.readFileSync(log, 'utf8').slice(-2000)}`)
    })
    await Promise.race([waitForPort(port, 60_000), early])
    early.catch(() => {})
    return {
      host: '127.0.0.1',
      port,
      user: 'root',
      /**
       * Shuts the server down (SIGTERM; its data stays), waits `downMs`, and starts it again on the same port.
       * Resolves to the `Date.now()` once it listens again.
       */
      async restart(downMs = 0) {
        child.kill('SIGTERM')
        await exited
        await new Promise(r => setTimeout(r, downMs))
        child = serve()
        exited = new Promise(resolve => child.once('exit', resolve))
        await waitForPort(port, 60_000)
        return Date.now()
      },
      /** Kills the server as a crash would (SIGKILL); its directory stays until stop(). */
      async kill() {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL')
          await exited
        }
      },
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

/**
 * A throwaway MariaDB (startMariadb) with the database `database` made in it: `{ server, settings, admin }`, where
 * `settings` are mysql2's connection options for that database and `admin` a promise-API connection with them (ended
 * by `server.stop()`); `undefined` when MariaDB is not installed.
 */
async function startMariadbDatabase(database, options) {
  const server = await startMariadb(options)
  if (!server) return undefined
  const mysql = require('mysql2/promise')
  const settings = { host: server.host, port: server.port, user: server.user, database }
  const setup = await mysql.createConnection({ host: server.host, port: server.port, user: server.user })
  await setup.query(`CREATE DATABASE ${database}`)
  await setup.end()
  const admin = await mysql.createConnection(settings)
  const stop = server.stop
  server.stop = async () => {
    await admin.end().catch(() => {})
    await stop()
  }
  return { server, settings, admin }
}

/** Runs one statement on `server` (startPostgres's) as its superuser, on a connection of its own: its rows. */
async function postgresQuery(server, text, params) {
  const { Client } = require('pg')
  const c = new Client({ host: server.host, port: server.port, user: server.user, database: server.database })
  await c.connect()
  try {
    return (await c.query(text, params)).rows
  } finally {
    await c.end()
  }
}

/**
 * A PostgreSQL primary (with `settings`), a proxy `link` to it (tcpProxy's) and a standby streaming through `link`:
 * `{ primary, link, standby }`, all stopped after `t`; `undefined` when PostgreSQL is not installed.
 */
async function startPostgresWithStandby(t, settings = {}) {
  const primary = await startPostgres({ settings })
  if (!primary) return undefined
  t.after(() => primary.stop())
  const link = await tcpProxy(primary.port)
  t.after(() => link.close())
  const standby = await startPostgres({ standbyOf: primary, via: link.port })
  t.after(() => standby.stop())
  return { primary, link, standby }
}

/**
 * Starts a Redis Sentinel on a free loopback port, watching the master at 127.0.0.1:`masterPort` as `name`, with a
 * quorum of `quorum`, declaring the master down after `downAfterMs`. Returns `{ port, stop() }` (which also removes its
 * directory), or `undefined` when redis-server is not installed.
 */
async function startSentinel(masterPort, { name = 'snowid', quorum = 2, downAfterMs = 1000 } = {}) {
  const bin = redisBin()
  if (!bin) return undefined
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-sentinel-'))
  const port = await freePort()
  const conf = path.join(dir, 'sentinel.conf')
  fs.writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      'sentinel resolve-hostnames no',
      `sentinel monitor ${name} 127.0.0.1 ${masterPort} ${quorum}`,
      `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
      `sentinel failover-timeout ${name} 3000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n'),
  )
  const child = spawn(bin, [conf, '--sentinel'], { stdio: 'ignore' })
  const exited = new Promise(resolve => child.once('exit', resolve))
  await waitForPort(port)
  return {
    port,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Starts a Redis Cluster of `masters` redis-servers on free loopback ports, each with `replicas` replicas
 * (`redis-cli --cluster create`), and waits until every node says the cluster is ok and every replica is in sync.
 * Returns `{ ports, nodes, stop() }` (`nodes`: what startRedis returned, in the order of `ports`), or `undefined` when
 * redis-server or redis-cli is not installed.
 */
async function startRedisCluster(masters = 3, { replicas = 0 } = {}) {
  const cli = onPath('redis-cli') || findExecutable(['/usr/bin/redis-cli', '/usr/local/bin/redis-cli'])
  if (!redisBin() || !cli) return undefined
  const nodes = []
  const stop = () => Promise.all(nodes.map(n => n.stop()))
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      nodes.push(
        await startRedis({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '2000',
            '--repl-diskless-sync-delay',
            '0',
          ],
        }),
      )
    }
    const ports = nodes.map(n => n.port)
    const created = spawnSync(
      cli,
      [
        '--cluster',
        'create',
        ...ports.map(p => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    )
    if (created.status !== 0) throw new Error(`redis-cli --cluster create: ${created.stdout}${created.stderr}`)
    const until = Date.now() + 30_000
    for (const port of ports) {
      for (;;) {
        const info = spawnSync(cli, ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8', timeout: 10_000 })
        const repl = spawnSync(cli, ['-p', String(port), 'info', 'replication'], { encoding: 'utf8', timeout: 10_000 })
        const synced = /role:slave/.test(repl.stdout)
          ? /master_link_status:up/.test(repl.stdout)
          : !/state=(?!online)/.test(repl.stdout)
        if (/cluster_state:ok/.test(info.stdout) && synced) break
        if (Date.now() > until) throw new Error(`the cluster is not ok on ${port} after 30 s: ${info.stdout}`)
        await new Promise(r => setTimeout(r, 100))
      }
    }
    return { ports, nodes, stop }
  } catch (err) {
    await stop()
    throw err
  }
}

/**
 * If this process exits before a server is stopped (a crash, an uncaught error), kills the server's processes
 * (`children()`, those still running) and removes its directory `root`. Returns that clean-up, which a stop runs or
 * takes off 'exit'.
 */
function cleanedUpAtExit(root, children) {
  const cleanUp = () => {
    for (const child of children())
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    fs.rmSync(root, { recursive: true, force: true })
  }
  process.once('exit', cleanUp)
  return cleanUp
}

/**
 * Where a server that syncs every write to disk keeps its data: /dev/shm when it has room (etcd 3.4 has no
 * --unsafe-no-fsync, and its WAL's fsync on a busy disk took over a renewal's 333 ms), else the OS temp dir.
 */
function memoryDir() {
  try {
    const { bavail, bsize } = fs.statfsSync('/dev/shm')
    if (bavail * bsize >= 2 ** 30) return '/dev/shm'
  } catch {
    // No /dev/shm (not Linux): the temp dir.
  }
  return os.tmpdir()
}

/**
 * Starts an etcd cluster of `members` (1 or 3) on free loopback ports, each in a directory of `memoryDir()`, with a fast
 * election (heartbeat 100 ms, election timeout 1000 ms). Returns `{ members, endpoints(), leader(), stop() }`, each
 * member `{ name, port, kill(), start() }` (start() brings a killed member back with its data), or `undefined` when
 * etcd is not installed.
 */
async function startEtcd(members = 1) {
  const bin = onPath('etcd') || findExecutable(['/usr/bin/etcd', '/usr/local/bin/etcd'])
  const ctl = onPath('etcdctl') || findExecutable(['/usr/bin/etcdctl', '/usr/local/bin/etcdctl'])
  if (!bin || !ctl) return undefined
  const root = fs.mkdtempSync(path.join(memoryDir(), 'snowid-etcd-'))
  const list = []
  for (let i = 0; i < members; i++) list.push({ name: `m${i}`, port: await freePort(), peer: await freePort() })
  const cluster = list.map(m => `${m.name}=http://127.0.0.1:${m.peer}`).join(',')
  for (const m of list) {
    m.dataDir = path.join(root, m.name)
    let child = null
    let exited = null
    m.start = async () => {
      child = spawn(
        bin,
        [
          '--name',
          m.name,
          '--data-dir',
          m.dataDir,
          '--listen-client-urls',
          `http://127.0.0.1:${m.port}`,
          '--advertise-client-urls',
          `http://127.0.0.1:${m.port}`,
          '--listen-peer-urls',
          `http://127.0.0.1:${m.peer}`,
          '--initial-advertise-peer-urls',
          `http://127.0.0.1:${m.peer}`,
          '--initial-cluster',
          cluster,
          '--initial-cluster-state',
          'new',
          '--initial-cluster-token',
          path.basename(root),
          '--heartbeat-interval',
          '100',
          '--election-timeout',
          '1000',
          '--logger',
          'zap',
          '--log-level',
          'error',
        ],
        { stdio: 'ignore' },
      )
      exited = new Promise(resolve => child.once('exit', resolve))
      await waitForPort(m.port, 30_000)
    }
    m.child = () => child
    m.kill = async () => {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
    }
  }
  const endpoints = () => list.map(m => `http://127.0.0.1:${m.port}`)
  // The members' data may be in memory (/dev/shm).
  const cleanUp = cleanedUpAtExit(root, () => list.map(m => m.child()))
  const stop = async () => {
    await Promise.all(list.map(m => m.kill()))
    fs.rmSync(root, { recursive: true, force: true })
    process.removeListener('exit', cleanUp)
  }
  /** The member that leads now, by etcdctl endpoint status; `undefined` while none does. */
  const leader = () => {
    const r = spawnSync(
      ctl,
      [
        '--endpoints',
        endpoints().join(','),
        '--dial-timeout',
        '300ms',
        '--command-timeout',
        '1s',
        'endpoint',
        'status',
        '-w',
        'json',
      ],
      {
        encoding: 'utf8',
        timeout: 10_000,
        env: { ...process.env, ETCDCTL_API: '3' },
      },
    )
    let status = []
    try {
      status = JSON.parse(r.stdout)
    } catch {
      return undefined
    }
    const lead = status.find(s => s.Status && String(s.Status.header.member_id) === String(s.Status.leader))
    return lead && list.find(m => lead.Endpoint.endsWith(`:${m.port}`))
  }
  try {
    await Promise.all(list.map(m => m.start()))
    const until = Date.now() + 30_000
    while (!leader()) {
      if (Date.now() > until) throw new Error('etcd elected no leader within 30 s')
      await new Promise(r => setTimeout(r, 100))
    }
  } catch (err) {
    await stop()
    throw err
  }
  return { members: list, endpoints, leader, stop }
}

/**
 * A TCP proxy on a free loopback port to 127.0.0.1:`target`, for faults the tests make: `cut()` stops forwarding
 * both ways on every connection, open or new (a partition: the peers see no answer, not a reset); `heal()` forwards
 * again, what was held included; `retarget(port)` sends new connections elsewhere (a switched virtual address);
 * `drop()` resets every open connection. Returns `{ port, cut(), heal(), retarget(), drop(), close() }`. `port`: the
 * port to listen on (a free one by default), such as a closed proxy's, to bring it back.
 */
async function tcpProxy(target, { port } = {}) {
  port ??= await freePort()
  const pairs = new Set()
  let cutOff = false
  let to = target
  const server = net.createServer(client => {
    const upstream = net.connect(to, '127.0.0.1')
    const pair = { client, upstream }
    pairs.add(pair)
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    client.pipe(upstream)
    upstream.pipe(client)
    if (cutOff) hold(pair)
  })
  const hold = ({ client, upstream }) => {
    client.unpipe(upstream)
    upstream.unpipe(client)
    client.pause()
    upstream.pause()
  }
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  return {
    port: server.address().port,
    cut() {
      cutOff = true
      for (const pair of pairs) hold(pair)
    },
    heal() {
      cutOff = false
      for (const { client, upstream } of pairs) {
        client.pipe(upstream)
        upstream.pipe(client)
        client.resume()
        upstream.resume()
      }
    },
    retarget(port) {
      to = port
    },
    drop() {
      for (const { client, upstream } of pairs) {
        client.resetAndDestroy()
        upstream.destroy()
      }
      pairs.clear()
    },
    close() {
      for (const { client, upstream } of pairs) {
        client.destroy()
        upstream.destroy()
      }
      pairs.clear()
      return new Promise(resolve => server.close(() => resolve()))
    },
  }
}

module.exports = {
  startEtcd,
  postgresBinDir,
  startRedisCluster,
  tcpProxy,
  startSentinel,
  freePort,
  findExecutable,
  onPath,
  reportMissing,
  runAs,
  serverFor,
  startMariadb,
  startMariadbDatabase,
  startPostgres,
  startPostgresWithStandby,
  postgresQuery,
  startRedis,
  waitForPort,
}
