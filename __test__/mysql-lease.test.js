'use strict'

// snowid/mysql against a real MariaDB (started by the test on a free loopback port), through mysql2: a Pool of the
// callback API, and a Connection of the promise API. The conformance suite every store runs (store-conformance.js)
// runs once, with the Pool; the one with 40 processes at once runs in CI's slow tier (slow/stores-at-scale.test.js).

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const { serverFor, startMariadbDatabase, freePort } = require('./servers.js')
const { storeConformance } = require('./store-conformance.js')
const { acquireWorkerId, MysqlLease, tableSql } = require('../lib/mysql.js')
const { runNode } = require('./helpers.js')

const DATABASE = 'snowid'

async function main() {
  const started = await serverFor(test, 'mariadb', () => startMariadbDatabase(DATABASE), { stop: false })
  if (!started) return
  const { server, settings, admin } = started
  const mysql = require('mysql2')
  const mysqlPromise = require('mysql2/promise')
  const pool = mysql.createPool({ ...settings, connectionLimit: 4 })
  test.after(async () => {
    await new Promise(resolve => pool.end(() => resolve()))
    await server.stop()
  })
  const sql = async (text, params) => (await admin.query(text, params))[0]
  const base = { store: 'mysql', client: 'mysql2', ...settings }

  storeConformance(test, {
    name: 'MySQL',
    base,
    acquire: (client, options) => acquireWorkerId({ client, ...options }),
    Lease: MysqlLease,
    client: pool,
    at: table => ({ table }),
    slot: async (table, datacenterId, workerId) => {
      const [row] = await sql(`SELECT token, mark_ms FROM ${table} WHERE datacenter_id = ? AND worker_id = ?`, [
        datacenterId,
        workerId,
      ])
      return { held: row.token !== null, mark: Number(row.mark_ms) }
    },
    // A table just made may be one dropped and made again under live holders: its rows record no incarnation.
    fresh: async table =>
      assert.equal(
        (await sql(`SELECT COUNT(*) AS n FROM ${table} WHERE mark_ms = 0 AND written_on IS NULL`))[0].n,
        255,
        'the other 255 rows of 8 datacenters are fresh, in no incarnation',
      ),
    stepBack: { table: 'stepped' },
  })

  test('a row deleted by hand is made again with no mark, and held one TTL before use', async () => {
    const opts = { client: pool, datacenterId: 1, ttlMs: 500, table: 'deleted', snowflake: { workerBits: 0 } }
    await (await acquireWorkerId(opts)).release()
    await sql('DELETE FROM deleted WHERE datacenter_id = 1')
    const started = Date.now()
    const lease = await acquireWorkerId(opts)
    assert.ok(Date.now() - started >= 500, `held ${Date.now() - started} ms`)
    await lease.release()
  })

  test('snowid sql mysql prints DDL that runs, with a row per slot; reserved words are quoted', async () => {
    for (const table of ['order', `${DATABASE}.select`]) {
      await sql(tableSql(table, { datacenterBits: 1, workerBits: 2 }))
      const lease = await acquireWorkerId({ client: pool, table, ttlMs: 1500, snowflake: { workerBits: 2 } })
      assert.equal(lease.workerId, 0)
      await lease.release()
      assert.equal((await sql(`SELECT COUNT(*) AS n FROM \`${table.split('.').pop()}\``))[0].n, 8)
    }
    // A lease names the table the same way.
    const lease = await acquireWorkerId({ client: pool, table: 'user', ttlMs: 1500 })
    await lease.release()
    await assert.rejects(sql(tableSql('user')), { code: 'ER_TABLE_EXISTS_ERROR' })
  })

  test('a table that is not the lease table is ERR_SNOWID_STORE_TABLE_INVALID, naming what is wrong', async () => {
    await sql(
      'CREATE TABLE other_columns (datacenter_id int NOT NULL, worker_id int NOT NULL, PRIMARY KEY (datacenter_id, worker_id))',
    )
    await sql(
      'CREATE TABLE no_key (datacenter_id int NOT NULL, worker_id int NOT NULL, token varchar(64), expires_ms bigint, mark_ms bigint, clock_back int, written_on bigint)',
    )
    await sql(
      'CREATE TABLE wrong_type (datacenter_id int NOT NULL, worker_id int NOT NULL, token varchar(64), expires_ms bigint, mark_ms int, clock_back int, written_on bigint, PRIMARY KEY (datacenter_id, worker_id))',
    )
    await sql(
      'CREATE TABLE memory_engine (datacenter_id int NOT NULL, worker_id int NOT NULL, token varchar(64), expires_ms bigint, mark_ms bigint, clock_back int, written_on bigint, PRIMARY KEY (datacenter_id, worker_id)) ENGINE=MEMORY',
    )
    // A table made by a version before written_on: the message says how to add it.
    await sql(
      'CREATE TABLE before_origin (datacenter_id int NOT NULL, worker_id int NOT NULL, token varchar(64), expires_ms bigint, mark_ms bigint, clock_back int, PRIMARY KEY (datacenter_id, worker_id))',
    )
    await sql('CREATE VIEW a_view AS SELECT 1 AS x')
    for (const [table, found] of [
      ['other_columns', /columns with no token, no expires_ms, no mark_ms, no clock_back, no written_on/],
      ['no_key', /no primary key/],
      ['wrong_type', /columns with mark_ms int null/],
      ['memory_engine', /the engine MEMORY/],
      ['a_view', /no base table/],
      ['before_origin', /no written_on; add it with ALTER TABLE `before_origin` ADD COLUMN written_on bigint NULL$/],
    ]) {
      await assert.rejects(acquireWorkerId({ client: pool, table, ttlMs: 500 }), err => {
        assert.equal(err.code, 'ERR_SNOWID_STORE_TABLE_INVALID', `${table}: ${err.message}`)
        assert.match(err.message, found)
        assert.ok(err.message.length <= 480)
        return true
      })
    }
  })

  test("bad options are coded errors; the server's own databases are refused", async () => {
    for (const [table, Class] of [
      ['mysql.user', RangeError],
      ['information_schema.tables', RangeError],
      ['a;b', TypeError],
      ['a.b.c', TypeError],
      ['', TypeError],
    ]) {
      await assert.rejects(
        acquireWorkerId({ client: pool, table }),
        err => err instanceof Class && err.code === 'ERR_SNOWID_INVALID_ARGUMENT',
      )
    }
    await assert.rejects(acquireWorkerId({ client: {} }), { code: 'ERR_SNOWID_INVALID_ARGUMENT' })
    const throwing = new Proxy(
      {},
      {
        get: () => {
          throw new Error('no')
        },
        has: () => {
          throw new Error('no')
        },
        ownKeys: () => {
          throw new Error('no')
        },
      },
    )
    await assert.rejects(acquireWorkerId({ client: pool, snowflake: throwing }), {
      code: 'ERR_SNOWID_INVALID_ARGUMENT',
    })
    await assert.rejects(acquireWorkerId({ client: throwing }), { code: 'ERR_SNOWID_INVALID_ARGUMENT' })
  })

  test('a promise-API Connection works too, and a row snowid did not write is ERR_SNOWID_LEASE_CORRUPT, left as found', async () => {
    const connection = await mysqlPromise.createConnection(settings)
    try {
      const lease = await acquireWorkerId({
        client: connection,
        datacenterId: 3,
        ttlMs: 500,
        table: 'conn',
        snowflake: { workerBits: 0 },
      })
      assert.equal(typeof lease.snowflake.nextId(), 'bigint')
      await lease.release()
      await sql('UPDATE conn SET mark_ms = -5 WHERE datacenter_id = 3')
      const before = await sql('SELECT * FROM conn WHERE datacenter_id = 3')
      await assert.rejects(
        acquireWorkerId({
          client: connection,
          datacenterId: 3,
          ttlMs: 500,
          table: 'conn',
          snowflake: { workerBits: 0 },
        }),
        err => {
          assert.equal(err.code, 'ERR_SNOWID_LEASE_CORRUPT', err.message)
          assert.match(err.message, /the row \(3, 0\) of conn/)
          return true
        },
      )
      assert.deepEqual(await sql('SELECT * FROM conn WHERE datacenter_id = 3'), before)
    } finally {
      await connection.end()
    }
  })

  test('free slots whose marks are far ahead are skipped; when all are, ERR_SNOWID_CLOCK_BACKWARDS after waitMs', async () => {
    const opts = { client: pool, datacenterId: 4, ttlMs: 1000, table: 'ahead', snowflake: { workerBits: 2 } }
    await (await acquireWorkerId(opts)).release()
    await sql('UPDATE ahead SET mark_ms = ? WHERE datacenter_id = 4 AND worker_id < 3', [Date.now() + 30_000])
    const lease = await acquireWorkerId({ ...opts, waitMs: 3000 })
    assert.equal(lease.workerId, 3, 'the slot whose mark is behind the clock')
    await lease.release()
    await sql('UPDATE ahead SET mark_ms = ? WHERE datacenter_id = 4', [Date.now() + 30_000])
    const started = Date.now()
    await assert.rejects(acquireWorkerId({ ...opts, waitMs: 1000 }), err => {
      assert.equal(err.code, 'ERR_SNOWID_CLOCK_BACKWARDS', err.message)
      assert.match(err.message, /every free slot's mark is a TTL or more ahead/)
      return true
    })
    assert.ok(Date.now() - started >= 1000, 'it waited waitMs')
  })

  test('MySQL unreachable at acquire is ERR_SNOWID_MYSQL_UNAVAILABLE', async () => {
    const port = await freePort()
    const dead = mysql.createPool({ ...settings, port, connectionLimit: 1 })
    try {
      await assert.rejects(acquireWorkerId({ client: dead, ttlMs: 500 }), { code: 'ERR_SNOWID_MYSQL_UNAVAILABLE' })
    } finally {
      await new Promise(resolve => dead.end(() => resolve()))
    }
  })

  test('configureWorkerId gives the default generator the leased slot', () => {
    const r = runNode(`
      const { configureWorkerId } = require('./lib/mysql.js')
      const pool = require('mysql2').createPool(${JSON.stringify(settings)})
      configureWorkerId({ client: pool, datacenterId: 5, ttlMs: 1000, table: 'configured' }).then(async (lease) => {
        const snowid = require('.')
        const d = snowid.decode(snowid.nextId())
        await lease.release()
        let after = 'issued'
        try { snowid.nextId() } catch (e) { after = e.code }
        console.log(JSON.stringify({ ids: [d.datacenterId, d.workerId], slot: [lease.datacenterId, lease.workerId], after }))
        pool.end()
      })
    `)
    assert.equal(r.status, 0, r.stderr)
    const res = JSON.parse(r.stdout)
    assert.deepEqual(res.ids, res.slot)
    assert.equal(res.after, 'ERR_SNOWID_LEASE_LOST')
  })
}

main()
