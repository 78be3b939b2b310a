'use strict'

// node benchmark/acquire.js [--rounds N]
//
// How long acquireWorkerId takes, from the call to a lease whose generator may issue ids, on servers this script
// starts on free loopback ports (as the tests do): PostgreSQL (pg Pool), MySQL (MariaDB, mysql2 Pool), Redis
// (ioredis) alone and with one replica (whose WAIT each confirmed write then needs), and a 3-member etcd cluster
// (etcd3), with the default ttlMs (10 s). Cases:
// - new table:  the first acquire, which makes the lease table (PostgreSQL, MySQL) or finds no keys (Redis);
// - fresh slot: a slot never held, on a table made earlier (another datacenter's row);
// - used slot:  a slot given back by release(), so its mark is behind the clock.
// Every lease issues one id before it is released; their xor is printed, so no lease goes unused.

const os = require('node:os')
const path = require('node:path')

const root = path.resolve(__dirname, '..')
const { startEtcd, startMariadb, startPostgres, startRedis } = require(path.join(root, '__test__', 'servers.js'))

function parseArgs(argv) {
  const args = { rounds: 5 }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--rounds') args.rounds = Number(argv[++i])
    else throw new Error(`unknown argument ${argv[i]}`)
  }
  if (!Number.isInteger(args.rounds) || args.rounds < 1) throw new Error('--rounds: expected a positive integer')
  return args
}

let xor = 0n

/** Milliseconds from the call of `acquire()` to its lease, whose generator then issues an id; the lease is released. */
async function timeAcquire(acquire) {
  const started = process.hrtime.bigint()
  const lease = await acquire()
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  xor ^= lease.snowflake.nextId()
  await lease.release()
  return ms
}

const median = values => [...values].sort((a, b) => a - b)[values.length >> 1]
const fmt = values =>
  `${median(values).toFixed(1)} ms (min ${Math.min(...values).toFixed(1)}, max ${Math.max(...values).toFixed(1)})`

async function measure(name, rounds, { newTable, freshSlot, usedSlot }) {
  const row = { store: name }
  const cases = [
    ['new table', newTable],
    ['fresh slot', freshSlot],
    ['used slot', usedSlot],
  ]
  for (const [label, run] of cases) {
    const times = []
    for (let i = 0; i < (label === 'new table' && name.startsWith('Redis') ? Math.min(rounds, 2) : rounds); i++)
      times.push(await timeAcquire(() => run(i)))
    row[label] = fmt(times)
  }
  return row
}

async function postgres(rounds) {
  const server = await startPostgres()
  if (!server) return null
  const { Pool } = require(path.join(root, 'node_modules', 'pg'))
  const pool = new Pool({ host: server.host, port: server.port, user: server.user, database: server.database, max: 4 })
  const { acquireWorkerId } = require(path.join(root, 'lib', 'postgres.js'))
  try {
    await pool.query('SELECT 1')
    return await measure('PostgreSQL (pg Pool)', rounds, {
      newTable: i => acquireWorkerId({ client: pool, table: `new_${i}` }),
      freshSlot: i => acquireWorkerId({ client: pool, table: 'new_0', datacenterId: 1 + (i % 7) }),
      usedSlot: () => acquireWorkerId({ client: pool, table: 'new_0' }),
    })
  } finally {
    await pool.end()
    await server.stop()
  }
}

async function mysql(rounds) {
  const server = await startMariadb()
  if (!server) return null
  const mysql2 = require(path.join(root, 'node_modules', 'mysql2'))
  const setup = mysql2.createConnection({ host: server.host, port: server.port, user: server.user }).promise()
  await setup.query('CREATE DATABASE bench')
  await setup.end()
  const pool = mysql2.createPool({
    host: server.host,
    port: server.port,
    user: server.user,
    database: 'bench',
    connectionLimit: 4,
  })
  const { acquireWorkerId } = require(path.join(root, 'lib', 'mysql.js'))
  try {
    await pool.promise().query('SELECT 1')
    return await measure('MySQL (MariaDB, mysql2 Pool)', rounds, {
      newTable: i => acquireWorkerId({ client: pool, table: `new_${i}` }),
      freshSlot: i => acquireWorkerId({ client: pool, table: 'new_0', datacenterId: 1 + (i % 7) }),
      usedSlot: () => acquireWorkerId({ client: pool, table: 'new_0' }),
    })
  } finally {
    await new Promise(resolve => pool.end(() => resolve()))
    await server.stop()
  }
}

async function redis(rounds) {
  const server = await startRedis()
  if (!server) return null
  const Redis = require(path.join(root, 'node_modules', 'ioredis'))
  const client = new Redis({ host: '127.0.0.1', port: server.port })
  const { acquireWorkerId } = require(path.join(root, 'lib', 'redis.js'))
  try {
    await client.ping()
    return await measure('Redis (ioredis)', rounds, {
      newTable: i => acquireWorkerId({ client, keyPrefix: `new${i}` }),
      freshSlot: i => acquireWorkerId({ client, keyPrefix: 'new0', datacenterId: 1 + (i % 7) }),
      usedSlot: () => acquireWorkerId({ client, keyPrefix: 'new0' }),
    })
  } finally {
    client.disconnect()
    await server.stop()
  }
}

async function redisWithReplica(rounds) {
  const fast = ['--repl-diskless-sync-delay', '0']
  const server = await startRedis({ args: fast })
  if (!server) return null
  const replica = await startRedis({ args: [...fast, '--replicaof', '127.0.0.1', String(server.port)] })
  const Redis = require(path.join(root, 'node_modules', 'ioredis'))
  const client = new Redis({ host: '127.0.0.1', port: server.port })
  const { acquireWorkerId } = require(path.join(root, 'lib', 'redis.js'))
  try {
    // The replica in sync before any lease is taken.
    while (!/slave0:.*state=online/.test(await client.info('replication'))) await new Promise(r => setTimeout(r, 50))
    return await measure('Redis, 1 replica (ioredis)', rounds, {
      newTable: i => acquireWorkerId({ client, keyPrefix: `new${i}` }),
      freshSlot: i => acquireWorkerId({ client, keyPrefix: 'new0', datacenterId: 1 + (i % 7) }),
      usedSlot: () => acquireWorkerId({ client, keyPrefix: 'new0' }),
    })
  } finally {
    client.disconnect()
    await replica.stop()
    await server.stop()
  }
}

async function etcd(rounds) {
  const cluster = await startEtcd(3)
  if (!cluster) return null
  const { Etcd3 } = require(path.join(root, 'node_modules', 'etcd3'))
  const client = new Etcd3({ hosts: cluster.endpoints() })
  const { acquireWorkerId } = require(path.join(root, 'lib', 'etcd.js'))
  try {
    return await measure('etcd, 3 members (etcd3)', rounds, {
      newTable: i => acquireWorkerId({ client, keyPrefix: `new${i}` }),
      freshSlot: i => acquireWorkerId({ client, keyPrefix: 'new0', datacenterId: 1 + (i % 7) }),
      usedSlot: () => acquireWorkerId({ client, keyPrefix: 'new0' }),
    })
  } finally {
    client.close()
    await cluster.stop()
  }
}

async function main() {
  const { rounds } = parseArgs(process.argv.slice(2))
  const cpu = os.cpus()[0]
  console.log(
    `acquireWorkerId latency, ${rounds} rounds per case (Redis new table: ${Math.min(rounds, 2)}), ttlMs 10000`,
  )
  console.log(
    `${cpu ? cpu.model : 'unknown CPU'} x ${os.cpus().length}, Node ${process.version}, ${os.platform()} ${os.release()}\n`,
  )
  const rows = []
  for (const [name, run] of [
    ['PostgreSQL', postgres],
    ['MySQL', mysql],
    ['Redis', redis],
    ['Redis with a replica', redisWithReplica],
    ['etcd', etcd],
  ]) {
    const row = await run(rounds)
    if (row) rows.push(row)
    else console.log(`(${name}: server not installed, skipped)`)
  }
  console.log('| store | new table | fresh slot | used slot |')
  console.log('|---|---|---|---|')
  for (const r of rows) console.log(`| ${r.store} | ${r['new table']} | ${r['fresh slot']} | ${r['used slot']} |`)
  console.log(`\nxor of one id per lease: ${xor}`)
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
