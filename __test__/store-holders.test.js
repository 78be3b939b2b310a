'use strict'

// Who holds a store's slots (listHolders of snowid/redis, postgres, mysql and etcd, and `snowid leases --<store>`),
// against real servers: a holder in another process is listed with its pid, host and command while it holds; once it
// is killed without releasing, it is listed as gone when its TTL has passed, never as live; a holder that releases is
// no longer listed.

const test = require('node:test')
const assert = require('node:assert')
const os = require('node:os')
const path = require('node:path')
const { spawn, execFile } = require('node:child_process')
const { reportMissing, startRedis, startPostgres, startMariadbDatabase, startEtcd } = require('./servers.js')

const CLI = path.join(__dirname, '..', 'bin', 'snowid.js')
const ROOT = path.join(__dirname, '..')
const TTL_MS = 1000
// A word on the holder's command line, to find it by.
const MARK = 'holder-under-test'

// Each store: how to start its server (a URL, a stop), and the code that makes a client from `url` (for the child
// and for this process).
const STORES = {
  redis: {
    async start() {
      const r = await startRedis()
      return r && { url: `redis://127.0.0.1:${r.port}`, stop: () => r.stop() }
    },
    client: `(() => { const Redis = require('ioredis'); const c = new Redis(url); c.on('error', () => {}); return { client: c, close: () => c.disconnect() } })()`,
    missing: ['Redis', 'apt-get install redis-server'],
  },
  postgres: {
    async start() {
      const s = await startPostgres()
      return s && { url: `postgres://${s.user}@${s.host}:${s.port}/${s.database}`, stop: () => s.stop() }
    },
    client: `(() => { const { Pool } = require('pg'); const c = new Pool({ connectionString: url, max: 2 }); c.on('error', () => {}); return { client: c, close: () => c.end() } })()`,
    missing: ['PostgreSQL', 'apt-get install postgresql'],
  },
  mysql: {
    async start() {
      const started = await startMariadbDatabase('snowid_holders')
      if (!started) return undefined
      const { server, settings } = started
      return {
        url: `mysql://${settings.user}@${settings.host}:${settings.port}/${settings.database}`,
        stop: () => server.stop(),
      }
    },
    client: `(() => { const c = require('mysql2').createPool({ uri: url, connectionLimit: 2 }); return { client: c, close: () => c.end() } })()`,
    missing: ['MariaDB', 'apt-get install mariadb-server'],
  },
  etcd: {
    async start() {
      const e = await startEtcd(1)
      return e && { url: e.endpoints()[0], stop: () => e.stop() }
    },
    client: `(() => { const { Etcd3 } = require('etcd3'); const c = new Etcd3({ hosts: url }); return { client: c, close: () => c.close() } })()`,
    missing: ['etcd', 'apt-get install etcd-server etcd-client'],
  },
}

const connect = (kind, url) => new Function('require', 'url', `return ${STORES[kind].client}`)(require, url)

/**
 * A server of `kind` and a client of it, both stopped after `t`; null (reported as missing) if the server cannot be
 * started here.
 */
async function startStore(t, kind) {
  const server = await STORES[kind].start()
  if (!server) {
    reportMissing(t, ...STORES[kind].missing)
    return null
  }
  t.after(() => server.stop())
  const { client, close } = connect(kind, server.url)
  t.after(() => close())
  return { server, client }
}

/** A child process that holds a slot of datacenter `datacenterId` until killed; resolves to { child, workerId }. */
function startHolder(kind, url, datacenterId) {
  const code = `
const url = ${JSON.stringify(url)}
const { client } = ${STORES[kind].client}
require(${JSON.stringify(path.join(ROOT, 'lib', `${kind}.js`))})
  .acquireWorkerId({ client, datacenterId: ${datacenterId}, ttlMs: ${TTL_MS} })
  .then(lease => {
    console.log(JSON.stringify({ workerId: lease.workerId }))
    setInterval(() => {}, 1 << 30)
  }, err => { console.error(err); process.exit(1) })
`
  const child = spawn(process.execPath, ['-e', code, MARK], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    child.stderr.on('data', d => {
      err += d
    })
    child.stdout.on('data', d => {
      out += d
      const line = out.split('\n')[0]
      if (out.includes('\n')) resolve({ child, workerId: JSON.parse(line).workerId })
    })
    child.on('exit', code => reject(new Error(`the holder exited ${code}: ${err.slice(-2000)}`)))
  })
}

function runCli(args) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr }))
      else resolve(stdout)
    })
  })
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

for (const kind of Object.keys(STORES)) {
  test(`${kind}: listHolders and snowid leases --${kind}`, { timeout: 180_000 }, async t => {
    const started = await startStore(t, kind)
    if (!started) return
    const { server, client } = started
    const { listHolders, acquireWorkerId } = require(`../lib/${kind}.js`)

    // A holder in another process: listed with its pid, host, start time and command line, as live.
    const { child, workerId } = await startHolder(kind, server.url, 1)
    t.after(() => child.kill('SIGKILL'))
    const before = Date.now()
    const held = (await listHolders({ client, datacenterId: 1 })).find(h => h.workerId === workerId)
    assert.ok(held, `slot 1/${workerId} listed`)
    assert.strictEqual(held.datacenterId, 1)
    assert.strictEqual(held.pid, child.pid)
    assert.strictEqual(held.host, os.hostname())
    assert.ok(held.command.includes(MARK), held.command)
    assert.ok(held.since <= before && held.since > before - 600_000, `since ${held.since}`)
    assert.strictEqual(held.live, true)
    assert.ok(held.deadline > before, `deadline ${held.deadline} after ${before}`)
    // Every datacenter when none is named: the same holder among them.
    const all = await listHolders({ client })
    assert.deepStrictEqual(
      all.filter(h => h.pid === child.pid).map(h => [h.datacenterId, h.workerId]),
      [[1, workerId]],
    )

    // The CLI: the same holder, as JSON and as a table.
    const json = JSON.parse(await runCli(['leases', `--${kind}`, server.url, '--json']))
    const row = json.find(h => h.pid === child.pid)
    assert.ok(row, `the CLI lists pid ${child.pid}: ${JSON.stringify(json)}`)
    assert.deepStrictEqual([row.datacenterId, row.workerId, row.host, row.live], [1, workerId, os.hostname(), true])
    const table = await runCli(['leases', `--${kind}=${server.url}`, '--datacenter-id', '1'])
    const line = table.split('\n').find(l => l.startsWith(`1/${workerId} `))
    assert.ok(line, table)
    assert.match(line, new RegExp(`^1/${workerId}\\s+live\\s+\\S+\\s+${child.pid}\\s`))

    // Killed without a release: shown as gone once its TTL has passed, never as live after.
    child.kill('SIGKILL')
    await new Promise(resolve =>
      child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', resolve),
    )
    let gone
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(200)) {
      const h = (await listHolders({ client, datacenterId: 1 })).find(h => h.workerId === workerId)
      if (h && !h.live) {
        gone = h
        break
      }
    }
    assert.ok(gone, 'listed as gone')
    assert.strictEqual(gone.pid, child.pid)
    assert.ok(gone.deadline === null || gone.deadline <= Date.now(), `deadline ${gone.deadline}`)
    const again = JSON.parse(await runCli(['leases', `--${kind}`, server.url, '--json', '--datacenter-id=1']))
    assert.deepStrictEqual(
      again.filter(h => h.pid === child.pid).map(h => h.live),
      [false],
    )

    // A holder that releases is listed while it holds, and no longer after.
    const lease = await acquireWorkerId({ client, datacenterId: 2, ttlMs: TTL_MS })
    const mine = (await listHolders({ client, datacenterId: 2 })).find(h => h.workerId === lease.workerId)
    assert.deepStrictEqual([mine.pid, mine.live], [process.pid, true])
    await lease.release()
    assert.deepStrictEqual(
      (await listHolders({ client, datacenterId: 2 })).filter(h => h.workerId === lease.workerId),
      [],
    )
  })
}

test('snowid leases: usage errors name what is wrong, and a password is not shown', async () => {
  const fails = async (args, status, pattern) => {
    const err = await runCli(args).then(
      () => null,
      e => e,
    )
    assert.ok(err, `${args.join(' ')} fails`)
    assert.strictEqual(err.code, status)
    assert.match(err.stderr, pattern)
  }
  // Without a store option, `snowid leases` lists this host's slots (cli.test.js); with one, not the host's too.
  await fails(
    ['leases', '--redis', 'redis://a', '--lease-dir', '/tmp'],
    2,
    /expected --lease-dir or --redis, found both/,
  )
  await fails(['leases', '--redis'], 2, /--redis: expected the store's URL, found nothing/)
  await fails(['leases', '--redis', 'redis://a', '--etcd', 'http://b'], 2, /expected one store URL/)
  await fails(['3', '--postgres', 'postgres://a'], 2, /--postgres applies to snowid leases only/)
  await fails(['leases', '--redis', 'redis://a', '--table', 't'], 2, /--table applies to --postgres and --mysql/)
  // Port 9 (discard) has no server here: the connection is refused.
  const err = await runCli(['leases', '--postgres', 'postgres://who:secret@127.0.0.1:9/db']).catch(e => e)
  assert.strictEqual(err.code, 1)
  assert.match(err.stderr, /cannot connect to "postgres:\/\/who:\*\*\*@127\.0\.0\.1:9\/db"/)
  assert.doesNotMatch(err.stderr, /secret/)
})

// A table as an earlier version made it: today's DDL less the holder column; and the SQL to run on it.
const LEGACY = {
  postgres: {
    drop: /\s*holder text,/,
    held: `UPDATE old_workers SET token = 'earlier', expires_at = clock_timestamp() + interval '1 hour' WHERE datacenter_id = 0 AND worker_id = 0`,
    columns: `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'old_workers' AND column_name = 'holder'`,
    sql: async (client, text) => (await client.query(text)).rows,
  },
  mysql: {
    drop: /\s*holder text NULL,/,
    held: `UPDATE old_workers SET token = 'earlier', expires_ms = (UNIX_TIMESTAMP() + 3600) * 1000 WHERE datacenter_id = 0 AND worker_id = 0`,
    columns: `SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'old_workers' AND column_name = 'holder'`,
    sql: async (client, text) => (await client.promise().query(text))[0],
  },
}

for (const kind of Object.keys(LEGACY)) {
  test(`${kind}: a table of an earlier version, with no holder column, lists holders as unknown, then gets the column`, {
    timeout: 120_000,
  }, async t => {
    const started = await startStore(t, kind)
    if (!started) return
    const { client } = started
    const { sql, drop, held, columns } = LEGACY[kind]
    const { listHolders, acquireWorkerId, tableSql } = require(`../lib/${kind}.js`)
    const old = tableSql('old_workers', { datacenterBits: 1, workerBits: 2 }).replace(drop, '')
    assert.doesNotMatch(old, /holder text/)
    await sql(client, old)
    // Held by an earlier version's take: a token, no holder.
    await sql(client, held)
    const listed = await listHolders({ client, table: 'old_workers', datacenterId: 0 })
    assert.deepStrictEqual(
      listed.map(h => [h.workerId, h.host, h.pid, h.command, h.live]),
      [[0, null, null, null, true]],
    )
    // A lease of this version adds the column, and records itself.
    const lease = await acquireWorkerId({
      client,
      table: 'old_workers',
      datacenterId: 0,
      ttlMs: TTL_MS,
      snowflake: { workerBits: 2, datacenterBits: 1 },
    })
    t.after(() => lease.release())
    assert.strictEqual(Number((await sql(client, columns))[0].n), 1)
    const mine = (await listHolders({ client, table: 'old_workers', datacenterId: 0 })).find(
      h => h.workerId === lease.workerId,
    )
    assert.deepStrictEqual([mine.pid, mine.host, mine.live], [process.pid, os.hostname(), true])
  })
}
