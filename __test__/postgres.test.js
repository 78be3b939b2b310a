'use strict'

// Ids in a real PostgreSQL: 100k ids from four worker ids in a bigint primary key, read back through `pg`.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

const { Snowflake, encode } = require('..')
const { reportMissing, startPostgres } = require('./servers.js')

const TOTAL = 100_000
const DATACENTER = 5
const WORKERS = [0, 7, 12, 31]

/**
 * Makes TOTAL ids from one generator per worker id, in bursts of varying size that take turns, with short sleeps so
 * that they span many ms. Returns every id with its worker, its place in the order of generation and the wall-clock
 * bracket of its burst.
 */
async function generate() {
  const gens = WORKERS.map(workerId => new Snowflake({ datacenterId: DATACENTER, workerId, lease: false }))
  const rows = []
  let turn = 0
  while (rows.length < TOTAL) {
    const g = turn++ % gens.length
    const size = Math.min(TOTAL - rows.length, 1 + ((turn * 7919) % 900))
    const before = Date.now()
    const ids = []
    for (let i = 0; i < size; i++) ids.push(gens[g].nextId())
    const after = Date.now()
    for (const id of ids) rows.push({ id, worker: WORKERS[g], n: rows.length, before, after })
    if (turn % 16 === 0) await sleep(3)
  }
  return { gens, rows }
}

async function main() {
  const server = await startPostgres()
  if (!server) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }
  const { Client } = require('pg')
  const client = new Client({ host: server.host, port: server.port, user: server.user, database: server.database })

  test.after(async () => {
    await client.end().catch(() => {})
    server.stop()
  })

  const { gens, rows } = await generate()
  const byText = new Map(rows.map(r => [String(r.id), r]))
  const timestampOf = id => gens[0].timestampOf(id)

  test('100k ids from four worker ids go into a bigint primary key', async t => {
    await client.connect()
    await client.query(
      'CREATE TABLE ids (id bigint PRIMARY KEY, worker int NOT NULL, n int NOT NULL, b62 text COLLATE "C" NOT NULL)',
    )
    for (let start = 0; start < rows.length; start += 10_000) {
      const chunk = rows.slice(start, start + 10_000)
      // Half the chunks send ids as bigint parameters (pg writes a bigint as its decimal text), half as strings.
      const ids = chunk.map(r => (start % 20_000 === 0 ? r.id : String(r.id)))
      await client.query(
        'INSERT INTO ids (id, worker, n, b62) SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[])',
        [ids, chunk.map(r => r.worker), chunk.map(r => r.n), chunk.map(r => encode(r.id, 'base62'))],
      )
    }
    const {
      rows: [count],
    } = await client.query('SELECT count(*)::int AS n, count(DISTINCT id)::int AS distinct FROM ids')
    assert.deepEqual(count, { n: TOTAL, distinct: TOTAL })
    const span = timestampOf(rows[rows.length - 1].id) - timestampOf(rows[0].id)
    t.diagnostic(`${TOTAL} ids over ${span} ms from workers ${WORKERS.join(', ')}`)
    assert.ok(span >= 20, `the ids span ${span} ms, enough for range queries`)
  })

  test('every id comes back from pg as the decimal string of the id generated', async () => {
    const { rows: back } = await client.query('SELECT id, n FROM ids')
    assert.equal(back.length, TOTAL)
    for (const row of back) {
      assert.equal(typeof row.id, 'string', 'pg returns int8 as a string')
      assert.equal(row.id, String(rows[row.n].id))
      assert.equal(BigInt(row.id), rows[row.n].id)
    }
  })

  test('ORDER BY id keeps each generator in its order of generation, and is sorted by time across them', async t => {
    const { rows: sorted } = await client.query('SELECT id, worker, n FROM ids ORDER BY id')
    const lastN = new Map()
    let outOfOrder = 0
    for (let i = 0; i < sorted.length; i++) {
      const { id, worker, n } = sorted[i]
      assert.ok(!lastN.has(worker) || lastN.get(worker) < n, `worker ${worker}: id order matches generation order`)
      lastN.set(worker, n)
      if (i > 0) {
        const prev = sorted[i - 1]
        const [t0, t1] = [timestampOf(prev.id), timestampOf(id)]
        assert.ok(t0 <= t1, 'timestamps never decrease along id order')
        if (prev.n > n) {
          // Generated later but sorted earlier: only within one ms, between different generators.
          outOfOrder++
          assert.equal(t0, t1, `ids ${prev.id} and ${id} are out of generation order across ms`)
          assert.notEqual(prev.worker, worker)
        }
      }
    }
    t.diagnostic(`${outOfOrder} adjacent pairs out of generation order, each within one ms`)
    // The base62 texts, compared byte by byte, sort the same way.
    const { rows: byB62 } = await client.query('SELECT id FROM ids ORDER BY b62')
    assert.deepEqual(
      byB62.map(r => r.id),
      sorted.map(r => r.id),
    )
  })

  test('WHERE id BETWEEN minIdAt(a) AND maxIdAt(b) returns exactly the ids made in [a, b]', async () => {
    const times = [...new Set(rows.map(r => timestampOf(r.id)))].sort((x, y) => x - y)
    const pick = q => times[Math.floor(q * (times.length - 1))]
    const ranges = [
      [pick(0.25), pick(0.75)],
      [pick(0.5), pick(0.5)],
      [times[0], times[times.length - 1]],
      [times[0] - 1000, times[0] - 1],
      [pick(0.9), Date.now() + 60_000],
    ]
    for (const [a, b] of ranges) {
      const lo = gens[0].minIdAt(a)
      const hi = gens[0].maxIdAt(new Date(b))
      const { rows: found } = await client.query('SELECT id FROM ids WHERE id BETWEEN $1 AND $2 ORDER BY id', [lo, hi])
      const expected = rows
        .filter(r => timestampOf(r.id) >= a && timestampOf(r.id) <= b)
        .map(r => r.id)
        .sort((x, y) => (x < y ? -1 : 1))
        .map(String)
      assert.deepEqual(
        found.map(r => r.id),
        expected,
        `[${a}, ${b}]`,
      )
      // And the ids' own time agrees with the wall clock around their generation.
      for (const id of expected) {
        const r = byText.get(id)
        const t = timestampOf(r.id)
        assert.ok(r.before <= t && t <= r.after, `id ${id} made in [${r.before}, ${r.after}] carries ${t}`)
      }
    }
    const {
      rows: [mid],
    } = await client.query('SELECT count(*)::int AS n FROM ids WHERE id BETWEEN $1 AND $2', [
      String(gens[0].minIdAt(pick(0.25))),
      String(gens[0].maxIdAt(pick(0.75))),
    ])
    assert.ok(mid.n > 0 && mid.n < TOTAL, `the middle range holds ${mid.n} of ${TOTAL}`)
  })

  test('ids stored as bigint decode to their worker ids, in JS and in SQL', async () => {
    const { rows: back } = await client.query(
      `SELECT id, worker,
              (id >> 19) & 7 AS dc,
              (id >> 14) & 31 AS w,
              ((id >> 22) + 1580486400000)::text AS ms
         FROM ids`,
    )
    const seen = new Set()
    for (const row of back) {
      const d = gens[0].decode(row.id)
      assert.equal(d.workerId, row.worker)
      assert.equal(d.datacenterId, DATACENTER)
      assert.equal(Number(row.w), row.worker)
      assert.equal(Number(row.dc), DATACENTER)
      assert.equal(Number(row.ms), d.timestamp)
      seen.add(d.workerId)
    }
    assert.deepEqual(
      [...seen].sort((a, b) => a - b),
      WORKERS,
    )
  })
}

main()
