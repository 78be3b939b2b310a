'use strict'

// `snowid sql mysql --functions` and `--generator`, run by the mariadb client in a real MariaDB: the read functions
// agree with decode, minIdAt and maxIdAt; snowid_next_id() (called by a BEFORE INSERT trigger) never returns an id
// twice with many sessions in transactions that commit or roll back, and never equals an app lease's ids.

const test = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const { spawnSync } = require('node:child_process')

require('./helpers.js').isolateLeases()

const { Snowflake } = require('..')
const { mysqlFunctions, mysqlGenerator } = require('../lib/sql.js')
const { acquireWorkerId, tableSql } = require('../lib/mysql.js')
const { countDuplicates, layoutCase, runCli } = require('./helpers.js')
const { findExecutable, onPath, reportMissing, startMariadb } = require('./servers.js')

const MAX_ID = (1n << 63n) - 1n
const LAYOUTS = [
  layoutCase('default'),
  layoutCase('odd', {
    datacenterBits: 0,
    workerBits: 3,
    clockBackBits: 1,
    sequenceBits: 14,
    epoch: '2024-06-15T12:34:56.789Z',
  }),
]

/** A UTC DATETIME(3) as MySQL prints it, for Unix ms. */
const datetime = ms => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')

async function main() {
  const client = onPath('mariadb') || findExecutable(['/usr/bin/mariadb', '/usr/bin/mysql'])
  const server = client && (await startMariadb())
  if (!server) {
    reportMissing(test, 'MariaDB and its client', "apt-get install mariadb-server mariadb-client (Debian's packages)")
    return
  }
  const mysql = require('mysql2/promise')
  const pools = []
  const pool = (database, max = 4) => {
    const p = mysql.createPool({
      host: server.host,
      port: server.port,
      user: server.user,
      database,
      connectionLimit: max,
      supportBigNumbers: true,
      bigNumberStrings: true,
    })
    pools.push(p)
    return p
  }
  test.after(async () => {
    await Promise.all(pools.map(p => p.end().catch(() => {})))
    await server.stop()
  })
  /** Runs `sql` with the mariadb client, as a user pastes it: the DELIMITER lines are the client's. */
  const runSql = (database, sql) =>
    spawnSync(client, ['--protocol=tcp', '-h', server.host, '-P', String(server.port), '-u', server.user, database], {
      input: sql,
      encoding: 'utf8',
      timeout: 60_000,
    })
  const admin = pool(undefined, 2)

  for (const layout of LAYOUTS) {
    test(`${layout.name} layout: the MySQL read functions agree with decode, minIdAt and maxIdAt`, async () => {
      const cli = runCli(['sql', 'mysql', '--functions'], layout.env)
      assert.equal(cli.status, 0, cli.stderr)
      const gens = [0, 1, 2].map(workerId => new Snowflake({ ...layout.options, workerId, lease: false }))
      const reader = gens[0]
      assert.equal(cli.stdout, mysqlFunctions(reader.config()))
      const db = `read_${layout.name}`
      await admin.query(`CREATE DATABASE ${db}`)
      const installed = runSql(db, cli.stdout)
      assert.equal(installed.status, 0, installed.stderr)
      const { epoch, expiresAt } = reader.config()
      const ids = new Set([0n, MAX_ID, reader.minIdAt(epoch), reader.maxIdAt(expiresAt)])
      for (let i = 0; ids.size < 10_000; i++) ids.add(gens[i % 3].nextId())
      for (const r of new BigUint64Array(crypto.randomBytes(8 * 10_000).buffer)) ids.add(r & MAX_ID)
      const all = [...ids]
      const p = pool(db)
      await p.query('CREATE TABLE ids (id BIGINT PRIMARY KEY, n INT NOT NULL)')
      await p.query('INSERT INTO ids (id, n) VALUES ?', [all.map((id, n) => [String(id), n])])
      const last = String(reader.minIdAt(expiresAt))
      const [rows] = await p.query(
        `SELECT n, CAST(snowid_timestamp(id) AS CHAR) AS t, snowid_datacenter_id(id) AS dc, snowid_worker_id(id) AS w,
                snowid_clock_back(id) AS cb, snowid_sequence(id) AS seq,
                snowid_min_id_at(snowid_timestamp(id)) AS lo, snowid_max_id_at(snowid_timestamp(id)) AS hi,
                IF(id < ?, snowid_min_id_at(TIMESTAMPADD(MICROSECOND, 500, snowid_timestamp(id))), NULL) AS lo_half,
                IF(id < ?, snowid_max_id_at(TIMESTAMPADD(MICROSECOND, 500, snowid_timestamp(id))), NULL) AS hi_half
           FROM ids`,
        [last, last],
      )
      assert.equal(rows.length, all.length)
      for (const row of rows) {
        const id = all[row.n]
        const d = reader.decode(id)
        const inSql = [row.t, row.dc, row.w, row.cb, row.seq, row.lo, row.hi, row.lo_half, row.hi_half].map(String)
        const inJs = [
          datetime(d.timestamp),
          d.datacenterId,
          d.workerId,
          d.clockBack,
          d.sequence,
          reader.minIdAt(d.timestamp),
          reader.maxIdAt(d.timestamp),
          d.timestamp < expiresAt ? reader.minIdAt(d.timestamp + 1) : null,
          d.timestamp < expiresAt ? reader.maxIdAt(d.timestamp) : null,
        ].map(String)
        if (inSql.join() !== inJs.join()) assert.deepEqual(inSql, inJs, `id ${id}`)
      }
      // The same in another session time zone: DATETIME has none, and the functions read no setting.
      const c = await p.getConnection()
      try {
        await c.query("SET time_zone = '-11:30'")
        const [[r]] = await c.query('SELECT CAST(snowid_timestamp(?) AS CHAR) AS t', [String(all[5])])
        assert.equal(r.t, datetime(reader.timestampOf(all[5])))
      } finally {
        c.release()
      }
      // Bad input is an error with a SQLSTATE; NULL gives NULL.
      for (const [sql, state, message] of [
        [
          'SELECT snowid_timestamp(-1)',
          '22003',
          /^snowid_timestamp: expected an id from 0 to 9223372036854775807, found -1$/,
        ],
        ['SELECT snowid_worker_id(-5)', '22003', /found -5$/],
        [
          `SELECT snowid_min_id_at('${datetime(epoch - 1)}')`,
          '22008',
          /^snowid_min_id_at: expected a time from .* \(the epoch\) to /,
        ],
        [`SELECT snowid_max_id_at('${datetime(expiresAt + 1)}')`, '22008', /^snowid_max_id_at: expected a time/],
      ]) {
        await assert.rejects(p.query(sql), err => {
          assert.equal(err.sqlState, state, `${sql}: ${err.message}`)
          assert.match(err.message, message)
          return true
        })
      }
      const [[nulls]] = await p.query('SELECT snowid_timestamp(NULL) AS a, snowid_min_id_at(NULL) AS b')
      assert.deepEqual(nulls, { a: null, b: null })
    })
  }

  test('snowid_next_id() in MariaDB: a slot held for good, 16 sessions committing or rolling back, no id twice', async t => {
    await admin.query('CREATE DATABASE gen')
    const p = pool('gen', 20)
    await p.query(tableSql())
    const gen = runCli(['sql', 'mysql', '--generator'])
    assert.equal(gen.status, 0, gen.stderr)
    assert.equal(gen.stdout, mysqlGenerator(new Snowflake({ workerId: 0, lease: false }).config(), { datacenterId: 0 }))
    const installed = runSql(
      'gen',
      `${mysqlFunctions(new Snowflake({ workerId: 0, lease: false }).config())}\n${gen.stdout}`,
    )
    assert.equal(installed.status, 0, installed.stderr)
    const [[row]] = await p.query(
      'SELECT token, CAST(expires_ms AS CHAR) AS e FROM snowid_workers WHERE datacenter_id = 0 AND worker_id = 31',
    )
    assert.match(row.token, /^snowid-database:/)
    assert.equal(row.e, '9223372036854775807')
    // Installed twice; on a slot an app holds.
    const twice = runSql('gen', gen.stdout)
    assert.notEqual(twice.status, 0)
    assert.match(twice.stderr, /it is installed already/)
    const appPool = pool('gen', 2)
    const lease = await acquireWorkerId({ client: appPool, ttlMs: 2000 })
    assert.equal(lease.workerId, 0)
    await admin.query('CREATE DATABASE gen2')
    const onApp = runSql(
      'gen2',
      mysqlGenerator(new Snowflake({ workerId: 0, lease: false }).config(), {
        datacenterId: 0,
        workerId: 0,
        table: 'gen.snowid_workers',
      }),
    )
    assert.notEqual(onApp.status, 0)
    assert.match(
      onApp.stderr,
      /\(SN004\).*expected the slot \(0, 0\) of gen\.snowid_workers free, found token [0-9a-f]+/,
    )
    const [procs] = await admin.query(
      "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'gen2'",
    )
    assert.deepEqual(procs, [])

    // The database's slot had no history (a table just made): it is held one TTL (10 s) before its first id, and
    // snowid_next_id() refuses (SN001) until then.
    const held = Date.now()
    for (;;) {
      try {
        await p.query('SELECT snowid_next_id()')
        break
      } catch (err) {
        if (err.sqlState !== 'SN001' || Date.now() - held > 60_000) throw err
        await new Promise(resolve => setTimeout(resolve, 200))
      }
    }
    await p.query('CREATE TABLE orders (id BIGINT PRIMARY KEY, s INT NOT NULL, r INT NOT NULL)')
    await p.query(
      'CREATE TRIGGER orders_id BEFORE INSERT ON orders FOR EACH ROW SET NEW.id = IF(NEW.id IS NULL OR NEW.id = 0, snowid_next_id(), NEW.id)',
    )
    const returned = []
    const appIds = []
    let committed = 0
    try {
      await Promise.all(
        Array.from({ length: 16 }, async (_, s) => {
          const c = await p.getConnection()
          try {
            for (let r = 0; r < 40; r++) {
              await c.query('START TRANSACTION')
              const n = 1 + ((s + r) % 5)
              await c.query('INSERT INTO orders (s, r) VALUES ?', [Array.from({ length: n }, () => [s, r])])
              const [[direct]] = await c.query('SELECT CAST(snowid_next_id() AS CHAR) AS id')
              const [mine] = await c.query('SELECT CAST(id AS CHAR) AS id FROM orders WHERE s = ? AND r = ?', [s, r])
              returned.push(direct.id, ...mine.map(m => m.id))
              if ((s + r) % 4 === 0) await c.query('ROLLBACK')
              else {
                await c.query('COMMIT')
                committed += n
              }
              appIds.push(lease.snowflake.nextId())
            }
          } finally {
            c.release()
          }
        }),
      )
      const [[{ n }]] = await p.query('SELECT COUNT(*) AS n FROM orders')
      assert.equal(Number(n), committed)
      t.diagnostic(`${returned.length} ids returned, ${committed} committed`)
      assert.equal(countDuplicates([returned]).dups, 0)
      assert.equal(countDuplicates([returned, appIds]).dups, 0)
      const [fields] = await p.query(
        'SELECT DISTINCT snowid_worker_id(id) AS w, snowid_clock_back(id) AS cb FROM orders',
      )
      assert.deepEqual(fields, [{ w: 31, cb: 0 }])
      const newest = new Snowflake({ workerId: 0, lease: false }).decode(returned.at(-1))
      assert.ok(Math.abs(newest.timestamp - Date.now()) < 5000, `stamped now: ${newest.timestamp}`)
    } finally {
      await lease.release()
    }
  })
}

main()
