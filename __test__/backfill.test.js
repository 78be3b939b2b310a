'use strict'

// backfill() from snowid/sql: ids for past times on a slot reserved by configuration. The checks of each time, and a
// table moved from bigserial in a real PostgreSQL (ROWS rows: 200,000 here, 10M in slow/backfill-10m.test.js) while a live service inserts rows with
// its own ids: the new ids sort as the rows' created_at, fall in snowid_min_id_at/snowid_max_id_at of it, and none
// equals another, nor one of the live service.

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const { Snowflake } = require('..')
const { backfill, postgresFunctions } = require('../lib/sql.js')
const { runNode } = require('./helpers.js')
const { reportMissing, startPostgres } = require('./servers.js')

const ROWS = Number(process.env.BACKFILL_TEST_ROWS || 200_000)

function duplicates(ids) {
  const sorted = BigInt64Array.from(ids, BigInt).sort()
  let n = 0
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) n++
  return n
}

test('backfill() checks each time: in order, before its start, from the epoch to expiresAt; and owns its slot', () => {
  const b = backfill({ datacenterId: 7, workerId: 3 })
  assert.ok(Math.abs(b.start - Date.now()) < 5000)
  const a = b.idAt('2021-01-01T00:00:00.000Z')
  const a2 = b.idAt(new Date('2021-01-01T00:00:00.000Z'))
  const later = b.idAt(Date.parse('2021-01-01T00:00:00.001Z'))
  assert.ok(a < a2 && a2 < later)
  const reader = new Snowflake({ workerId: 0, lease: false })
  assert.deepEqual(reader.decode(a2), {
    id: String(a2),
    timestamp: Date.parse('2021-01-01'),
    datacenterId: 7,
    workerId: 3,
    clockBack: 0,
    sequence: 1,
  })
  const code = (fn, Class, c, message) =>
    assert.throws(fn, err => err instanceof Class && err.code === c && message.test(err.message))
  code(
    () => b.idAt('2021-01-01'),
    RangeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    /^time: expected a time at or after the previous one, 1609459200001 /,
  )
  code(
    () => b.idAt(b.start),
    RangeError,
    'ERR_SNOWID_TIME_IN_FUTURE',
    /^time: expected a time before the backfill's start /,
  )
  code(() => b.idAt(Date.now() + 60_000), RangeError, 'ERR_SNOWID_TIME_IN_FUTURE', /found \d+ \(/)
  code(() => b.idAt(1000), RangeError, 'ERR_SNOWID_INVALID_ARGUMENT', /^time: expected a time from the epoch/)
  code(() => b.idAt(4e12), RangeError, 'ERR_SNOWID_INVALID_ARGUMENT', /to expiresAt/)
  code(() => b.idAt('yesterday'), TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', /^time: expected a Date/)
  code(
    () => backfill({ datacenterId: 7 }),
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    /^options\.workerId: expected the worker id reserved/,
  )
  code(
    () => backfill({ datacenterId: 7, workerId: 3 }),
    Error,
    'ERR_SNOWID_WORKER_ID_IN_USE',
    /another backfill of this process/,
  )
  // A ms holds as many ids as its clockBack and sequence fields count: here 2 + 2 bits.
  const small = backfill({
    datacenterId: 1,
    workerId: 1,
    clockBackBits: 2,
    sequenceBits: 2,
    workerBits: 5,
    datacenterBits: 3,
  })
  const ids = Array.from({ length: 16 }, () => small.idAt('2022-02-02'))
  assert.deepEqual(
    ids,
    [...ids].sort((x, y) => (x < y ? -1 : 1)),
  )
  assert.deepEqual(
    ids
      .map(
        id => small.idAt && new Snowflake({ clockBackBits: 2, sequenceBits: 2, workerId: 0, lease: false }).decode(id),
      )
      .map(d => `${d.clockBack}.${d.sequence}`)
      .slice(3, 6),
    ['0.3', '1.0', '1.1'],
  )
  code(
    () => small.idAt('2022-02-02'),
    RangeError,
    'ERR_SNOWID_SEQUENCE_EXHAUSTED',
    /^time: expected at most 16 ids for one ms/,
  )
  assert.ok(small.idAt('2022-02-02T00:00:00.001Z') > ids[15], 'the next ms goes on')
})

test('a backfill on a slot a live process holds is refused', () => {
  const r = runNode(
    `const { backfill } = require(${JSON.stringify(require.resolve('../lib/sql.js'))})
     const { Snowflake } = require(${JSON.stringify(require.resolve('..'))})
     new Snowflake({ datacenterId: 6, workerId: 9 }).nextId()
     const { spawnSync } = require('node:child_process')
     const child = spawnSync(process.execPath, ['-e', ${JSON.stringify(
       `try { require(${JSON.stringify(require.resolve('../lib/sql.js'))}).backfill({ datacenterId: 6, workerId: 9 }); console.log('taken') } catch (e) { console.log(e.code) }`,
     )}], { encoding: 'utf8' })
     console.log(child.stdout.trim())`,
  )
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'ERR_SNOWID_WORKER_ID_IN_USE')
})

async function main() {
  const server = await startPostgres()
  if (!server) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }
  const { Pool } = require('pg')
  const db = new Pool({ host: server.host, port: server.port, user: server.user, database: server.database, max: 3 })
  db.on('error', () => {})
  test.after(async () => {
    await db.end().catch(() => {})
    server.stop()
  })

  test(`a table of ${ROWS} rows moved from bigserial to snowid ids while the live service inserts`, async t => {
    const live = new Snowflake({ datacenterId: 0, workerId: 4 })
    await db.query(postgresFunctions(live.config()))
    // Rows of the last two years, created_at to the ms, increasing with ties (several rows in one ms).
    await db.query(`CREATE TABLE orders (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL, total int NOT NULL);
      INSERT INTO orders (created_at, total)
        SELECT timestamptz '2024-06-01' + (g / 3) * interval '60 ms' + (g % 3 / 2) * interval '1 ms', g % 1000
        FROM generate_series(1, ${ROWS}) AS g;
      ALTER TABLE orders ADD COLUMN new_id bigint`)
    const started = Date.now()
    // The live service goes on inserting rows, with its ids, while the table is moved.
    let liveRows = 0
    let moving = true
    const service = (async () => {
      while (moving) {
        const ids = Array.from({ length: 200 }, () => String(live.nextId()))
        await db.query(`INSERT INTO orders (created_at, total, new_id) SELECT now(), 0, unnest($1::bigint[])`, [ids])
        liveRows += ids.length
        await new Promise(r => setTimeout(r, 20))
      }
    })()
    const b = backfill({ datacenterId: 7, workerId: 0 })
    let after = { at: '-infinity', id: 0 }
    let moved = 0
    try {
      for (;;) {
        // Keyset pages in the order of (created_at, id), read as exact text (ORDER BY names the table's columns: an
        // output column of the same name, the text id here, would order as text).
        const { rows } = await db.query(
          `SELECT id::text AS id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, created_at::text AS raw
             FROM orders WHERE new_id IS NULL AND (created_at, id) > ($1::timestamptz, $2::bigint)
             ORDER BY orders.created_at, orders.id LIMIT 50000`,
          [after.raw ?? after.at, after.id],
        )
        if (rows.length === 0) break
        const ids = rows.map(r => String(b.idAt(r.at)))
        await db.query(
          'UPDATE orders SET new_id = u.n FROM unnest($1::bigint[], $2::bigint[]) AS u(o, n) WHERE orders.id = u.o',
          [rows.map(r => r.id), ids],
        )
        moved += rows.length
        after = rows.at(-1)
      }
    } finally {
      moving = false
      await service
    }
    t.diagnostic(`${moved} rows moved in ${Date.now() - started} ms; ${liveRows} live rows meanwhile`)
    assert.equal(moved, ROWS)
    const { rows: checks } = await db.query(`
      SELECT
        (SELECT count(*) FROM orders WHERE new_id IS NULL)::int AS missing,
        (SELECT count(*) FROM (SELECT new_id < lag(new_id) OVER (ORDER BY created_at, id) AS down FROM orders WHERE id <= ${ROWS}) AS s WHERE down)::int AS unsorted,
        (SELECT count(*) FROM orders WHERE id <= ${ROWS} AND NOT (new_id BETWEEN snowid_min_id_at(created_at) AND snowid_max_id_at(created_at)))::int AS outside,
        (SELECT count(*) FROM orders WHERE id <= ${ROWS} AND (snowid_datacenter_id(new_id), snowid_worker_id(new_id)) <> (7, 0))::int AS other_slot`)
    assert.deepEqual(checks, [{ missing: 0, unsorted: 0, outside: 0, other_slot: 0 }])
    // Every id, the live service's included, is distinct: as a unique index, and counted in a BigInt64Array.
    await db.query('CREATE UNIQUE INDEX orders_new_id ON orders (new_id)')
    const { rows: all } = await db.query('SELECT new_id::text AS id FROM orders')
    assert.equal(all.length, ROWS + liveRows)
    assert.equal(duplicates(all.map(r => r.id)), 0)
  })
}

main()
