'use strict'

// snowid_next_id() in a real PostgreSQL: installed from `snowid sql postgres --generator`, on a slot of the lease
// table that the database holds for good. Many sessions at once, in transactions that commit or roll back, next to an
// app lease making ids in the same table's slots, and across a crash (`pg_ctl stop -m immediate`) of a server whose
// commits are asynchronous (the test servers run synchronous_commit=off, so the last commits before the crash are
// lost): no id is ever returned twice, and none equals an app's.

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const { Snowflake, decode } = require('..')
const { postgresGenerator, postgresFunctions } = require('../lib/sql.js')
const { acquireWorkerId, tableSql } = require('../lib/postgres.js')
const { runCli } = require('./helpers.js')
const { reportMissing, startPostgres } = require('./servers.js')

// The default layout and epoch, datacenter 0.
const LAYOUT = new Snowflake({ workerId: 0, lease: false }).config()
// Two slots only: the database holds one, so one app lease fits.
const SMALL = {
  epoch: 1580486400000,
  timestampBits: 45,
  datacenterBits: 0,
  workerBits: 1,
  clockBackBits: 2,
  sequenceBits: 15,
}

/** Ids as a sorted BigInt64Array, and how many of them repeat. */
function duplicates(ids) {
  const sorted = BigInt64Array.from(ids, BigInt).sort()
  let n = 0
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) n++
  return n
}

test('snowid sql postgres --generator prints postgresGenerator() for the layout and the slot given', () => {
  const r = runCli(['sql', 'postgres', '--generator', '--worker-id', '7', '--datacenter-id=2', '--table', 'ids.slots'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, postgresGenerator(LAYOUT, { workerId: 7, datacenterId: 2, table: 'ids.slots' }))
  assert.match(r.stdout, /slot \(datacenterId 2, workerId 7\) of ids\.slots/)
  const json = runCli(['sql', 'mysql', '--generator', '--json'])
  assert.equal(json.status, 0, json.stderr)
  assert.match(JSON.parse(json.stdout), /CREATE FUNCTION snowid_next_id\(\)/)
  for (const [args, message] of [
    [['sql', 'postgres', '--generator', '--functions'], /expected --functions or --generator, found both/],
    [['sql', 'postgres', '--worker-id', '3'], /--worker-id and --datacenter-id apply to --generator only/],
    [
      ['sql', 'postgres', '--generator', '--worker-id', '-1'],
      /--worker-id: expected a non-negative integer, found "-1"/,
    ],
    [['sql', 'postgres', '--generator', '--worker-id'], /--worker-id: expected a non-negative integer, found nothing/],
    [['3', '--generator'], /--generator applies to snowid sql only/],
  ]) {
    const bad = runCli(args)
    assert.equal(bad.status, 2, `${args.join(' ')}: ${bad.stderr}`)
    assert.match(bad.stderr, message)
  }
  const outOfRange = runCli(['sql', 'postgres', '--generator', '--worker-id', '32'])
  assert.equal(outOfRange.status, 1)
  assert.match(
    outOfRange.stderr,
    /options\.workerId: expected an integer from 0 to 31, found 32 \(ERR_SNOWID_INVALID_ARGUMENT\)/,
  )
})

test('postgresGenerator() takes the datacenter of config(), the highest worker id, and refuses bad options', () => {
  assert.match(postgresGenerator({ ...LAYOUT, datacenterId: 5 }), /slot \(datacenterId 5, workerId 31\)/)
  for (const [options, Class, message] of [
    [{ workerId: 1.5 }, RangeError, /^options\.workerId: expected an integer from 0 to 31, found 1\.5$/],
    [{ datacenterId: 8 }, RangeError, /^options\.datacenterId: expected an integer from 0 to 7/],
    [{ maxLeadMs: -1 }, RangeError, /^options\.maxLeadMs/],
    [
      { worker: 1 },
      TypeError,
      /^options: expected only table, datacenterId, workerId, maxLeadMs, ttlMs, found "worker"$/,
    ],
    [{ table: 'pg_temp.t' }, RangeError, /^table: expected a permanent table/],
    [null, TypeError, /^options: expected an object, found null$/],
  ]) {
    assert.throws(
      () => postgresGenerator(LAYOUT, options),
      err => err instanceof Class && err.code === 'ERR_SNOWID_INVALID_ARGUMENT' && message.test(err.message),
    )
  }
})

async function main() {
  const server = await startPostgres()
  if (!server) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }
  const { Client, Pool } = require('pg')
  const settings = { host: server.host, port: server.port, user: server.user, database: server.database }
  const admin = new Pool({ ...settings, max: 2 })
  admin.on('error', () => {})
  test.after(async () => {
    await admin.end().catch(() => {})
    server.stop()
  })
  const sql = (text, params) => admin.query(text, params).then(r => r.rows)

  test("the slot is the database's: app leases never take it, and it is never installed twice nor on an app's slot", async () => {
    await sql('CREATE SCHEMA s1; CREATE SCHEMA s2; CREATE SCHEMA s3')
    await sql(tableSql('s1.small', SMALL))
    await sql(
      `SET search_path TO s1; ${postgresGenerator(SMALL, { table: 's1.small', ttlMs: 100 })}; RESET search_path`,
    )
    const [row] = await sql(`SELECT token, expires_at::text AS e FROM s1.small WHERE worker_id = 1`)
    assert.match(row.token, /^snowid-database:/)
    assert.equal(row.e, 'infinity')
    const client = new Pool({ ...settings, max: 2 })
    client.on('error', () => {})
    const snowflake = { workerBits: 1, datacenterBits: 0, clockBackBits: 2, sequenceBits: 15 }
    const lease = await acquireWorkerId({ client, table: 's1.small', ttlMs: 1000, snowflake })
    try {
      assert.equal(lease.workerId, 0)
      await assert.rejects(acquireWorkerId({ client, table: 's1.small', ttlMs: 1000, snowflake }), {
        code: 'ERR_SNOWID_NO_FREE_WORKER_ID',
      })
      // Installed twice in one schema; on the app's slot; on the database's slot from another schema.
      for (const [schema, options, code, message] of [
        ['s1', {}, '42723', /it is installed already/],
        ['s2', { workerId: 0 }, 'SN004', /expected the slot \(0, 0\) free, found it held by an app until /],
        ['s3', {}, 'SN004', /found it held by a database generator already/],
        ['s2', { table: 's2.none' }, '42P01', /expected the lease table s2\.none/],
      ]) {
        const c = await admin.connect()
        try {
          await c.query(`SET search_path TO ${schema}`)
          await assert.rejects(c.query(postgresGenerator(SMALL, { table: 's1.small', ...options })), err => {
            assert.equal(err.code, code, err.message)
            assert.match(err.message, message)
            return true
          })
        } finally {
          await c.query('RESET search_path')
          c.release()
        }
      }
      assert.deepEqual(
        await sql(`SELECT proname FROM pg_proc WHERE pronamespace IN ('s2'::regnamespace, 's3'::regnamespace)`),
        [],
      )
      // The database's ids and the app's, made at once: distinct slots, so never equal.
      const ids = (await sql('SELECT s1.snowid_next_id()::text AS id FROM generate_series(1, 2000)')).map(r => r.id)
      const app = Array.from({ length: 2000 }, () => lease.snowflake.nextId())
      assert.equal(duplicates([...ids, ...app]), 0)
      const reader = new Snowflake({ ...snowflake, workerId: 0, lease: false })
      assert.deepEqual(new Set(ids.map(id => reader.decode(id).workerId)), new Set([1]))
    } finally {
      await lease.release()
      await client.end()
    }
  })

  test('16 sessions in transactions that commit or roll back, an app lease alongside, and a crash: no id twice', async t => {
    await sql(tableSql())
    // A TTL of 100 ms: the slot of a table just made is held that long, within maxLeadMs, so no call is refused.
    await sql(`${postgresFunctions(LAYOUT)}\n${postgresGenerator(LAYOUT, { ttlMs: 100 })}`)
    await sql('CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowid_next_id(), n int NOT NULL)')
    const appClient = new Pool({ ...settings, max: 2 })
    appClient.on('error', () => {})
    const lease = await acquireWorkerId({ client: appClient, ttlMs: 2000 })
    const appIds = []
    const returned = [] // every id a session saw, committed or rolled back
    let committed = 0
    let rolledBack = 0

    /** `sessions` clients, each running `rounds` transactions of 1-5 inserts, one in four rolled back. */
    async function run(sessions, rounds, tolerateCrash) {
      await Promise.all(
        Array.from({ length: sessions }, async (_, s) => {
          const c = new Client(settings)
          c.on('error', () => {})
          await c.connect()
          try {
            for (let i = 0; i < rounds; i++) {
              await c.query('BEGIN')
              const { rows } = await c.query(
                'INSERT INTO orders (n) SELECT g FROM generate_series(1, $1) AS g RETURNING id::text',
                [1 + ((s + i) % 5)],
              )
              for (const r of rows) returned.push(r.id)
              if ((s + i) % 4 === 0) {
                await c.query('ROLLBACK')
                rolledBack += rows.length
              } else {
                await c.query('COMMIT')
                committed += rows.length
              }
              appIds.push(lease.snowflake.nextId())
            }
          } catch (err) {
            if (!tolerateCrash) throw err
          } finally {
            await c.end().catch(() => {})
          }
        }),
      )
    }
    try {
      await run(16, 60, false)
      const [{ n }] = await sql('SELECT count(*)::int AS n FROM orders')
      assert.equal(n, committed)
      const before = returned.length
      // A crash while sessions insert: the server stops as on a power cut, losing its last asynchronous commits.
      const crashing = run(8, 1000, true)
      await new Promise(r => setTimeout(r, 300))
      server.kill()
      await crashing
      await admin.end()
      server.start()
      const after = new Pool({ ...settings, max: 2 })
      after.on('error', () => {})
      try {
        const c = new Client(settings)
        await c.connect()
        const { rows } = await c.query(
          'INSERT INTO orders (n) SELECT g FROM generate_series(1, 3000) AS g RETURNING id::text',
        )
        for (const r of rows) returned.push(r.id)
        const { rows: all } = await c.query(
          'SELECT id::text AS id, snowid_worker_id(id) AS w, snowid_clock_back(id) AS cb FROM orders',
        )
        await c.end()
        t.diagnostic(
          `${before} ids before the crash; ${returned.length} in all (${committed} committed, ${rolledBack} rolled back, the rest lost in the crash or made after it)`,
        )
        assert.ok(returned.length > before + 3000, 'ids were made while the server crashed')
        assert.equal(duplicates(returned), 0, 'no id returned twice, across rollbacks and the crash')
        assert.equal(duplicates([...returned, ...appIds]), 0, 'no id of the database equals one of the app')
        assert.deepEqual(new Set(all.map(r => `${r.w}/${r.cb}`)), new Set(['31/0']))
        // They decode in JS as in SQL, and sort by time with the app's ids.
        const last = returned.at(-1)
        const d = decode(last)
        assert.deepEqual([d.datacenterId, d.workerId, d.clockBack], [0, 31, 0])
        assert.ok(Math.abs(d.timestamp - Date.now()) < 5000, `stamped now: ${d.timestamp}`)
      } finally {
        await after.end()
      }
    } finally {
      await lease.release().catch(() => {})
      await appClient.end().catch(() => {})
    }
  })
}

main()
