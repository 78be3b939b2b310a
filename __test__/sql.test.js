'use strict'

// `snowid sql postgres --functions`, installed in a real PostgreSQL: the functions agree with decode, minIdAt and
// maxIdAt for 100,000 ids on each of three layouts, and a range query by time returns exactly the expected ids.

const test = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const fs = require('node:fs')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const { Snowflake } = require('..')
const { postgresFunctions } = require('../lib/sql.js')
const { WASI, cleanEnv, layoutCase, runCli } = require('./helpers.js')
const { reportMissing, startPostgres } = require('./servers.js')

const TOTAL = 100_000
const MAX_ID = (1n << 63n) - 1n

// Each layout as the environment gives it to the CLI, and as options to a Snowflake.
const LAYOUTS = [
  layoutCase('default'),
  layoutCase('wide_sequence', {
    datacenterBits: 0,
    workerBits: 4,
    clockBackBits: 0,
    sequenceBits: 20,
    epoch: '2025-01-01',
  }),
  layoutCase('zero_widths', {
    datacenterBits: 0,
    workerBits: 0,
    clockBackBits: 3,
    sequenceBits: 8,
    epoch: '2024-06-15T12:34:56.789Z',
  }),
]

/**
 * TOTAL ids of a layout: half made now by generators on every worker id the layout has room for (up to 4), in
 * bursts that span many ms; half drawn at random from the whole id range, so every field and far-future
 * timestamps are covered; plus the extremes.
 */
async function idsFor(layout) {
  const bits = layout.options.workerBits ?? 5
  const gens = [0, 1, 2, 3]
    .filter(w => w < 2 ** bits)
    .map(workerId => new Snowflake({ ...layout.options, workerId, lease: false }))
  const reader = gens[0]
  const { epoch, expiresAt } = reader.config()
  const ids = new Set([0n, MAX_ID, reader.minIdAt(epoch), reader.maxIdAt(expiresAt), reader.minIdAt(expiresAt)])
  for (let turn = 0; ids.size < TOTAL / 2; turn++) {
    const g = gens[turn % gens.length]
    for (let i = 0, n = 1 + ((turn * 7919) % 500); i < n; i++) ids.add(g.nextId())
    if (turn % 8 === 0) await sleep(2)
  }
  while (ids.size < TOTAL) {
    for (const r of new BigUint64Array(crypto.randomBytes(8 * (TOTAL - ids.size)).buffer)) ids.add(r & MAX_ID)
  }
  return { reader, ids: [...ids] }
}

test('snowid sql: usage errors exit 2 with a message; --json prints the SQL as one JSON string', () => {
  for (const [args, message] of [
    [['sql'], /^snowid: sql: expected a dialect \(postgres, mysql\), found nothing/],
    [['sql', 'sqlite'], /^snowid: sql: expected a dialect \(postgres, mysql\), found "sqlite"/],
    [['sql', 'postgres', 'extra'], /^snowid: sql: expected one dialect, found also "extra"/],
    [['sql', 'postgres', '--functions', '--table', 't'], /--table applies to the lease table/],
    [['sql', 'postgres', '--table'], /^snowid: --table: expected a table name, found nothing/],
    [['sql', 'postgres', '--table='], /^snowid: --table: expected a table name, found an empty name/],
    [['sql', 'postgres', '--encoding', 'hex'], /--encoding applies to ids only/],
    [['3', '--functions'], /^snowid: --functions applies to snowid sql only/],
    [['config', '--table', 'x'], /^snowid: --table applies to snowid sql only/],
    [['sql', 'postgres', '--function'], /^snowid: unknown option "--function"/],
  ]) {
    const r = runCli(args)
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, message)
    assert.match(r.stderr, /\(snowid --help shows the usage\)\n$/)
    assert.equal(r.stderr.split('\n').length, 2, 'one line')
  }
  const text = runCli(['sql', 'postgres', '--functions'])
  const json = runCli(['sql', 'postgres', '--functions', '--json'])
  assert.equal(json.status, 0, json.stderr)
  assert.equal(JSON.parse(json.stdout), text.stdout)
  const help = runCli(['--help'])
  assert.match(help.stdout, /snowid sql postgres --functions/)
})

test('snowid sql postgres --functions takes the layout from the environment, and refuses a bad one with exit 1', () => {
  const r = runCli(['sql', 'postgres', '--functions'], {
    SNOWID_SEQUENCE_BITS: '10',
    SNOWID_WORKER_BITS: '7',
    SNOWID_EPOCH: '2024-01-01',
  })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /^-- {3}epoch 1704067200000 \(2024-01-01T00:00:00.000Z\), timestamp 41 bits/m)
  assert.match(r.stdout, /RETURN \(\(id >> 12\) & 127\)::integer;/, 'workerId: 7 bits above 2 + 10')
  const bad = runCli(['sql', 'postgres', '--functions'], { SNOWID_SEQUENCE_BITS: '64' })
  assert.equal(bad.status, 1)
  assert.equal(bad.stdout, '')
  assert.match(
    bad.stderr,
    /^snowid: SNOWID_SEQUENCE_BITS: expected an integer from 0 to 32, found "64" \(ERR_SNOWID_INVALID_CONFIG\)/,
  )
  // No lease is taken to print SQL: a lease directory that cannot be used (a file) does not matter, where
  // `snowid config` fails on it.
  const dir = cleanEnv().SNOWID_LEASE_DIR
  const notADir = path.join(dir, 'file')
  fs.writeFileSync(notADir, '')
  try {
    // (On WASI there is no host lease, so `snowid config` does not open the directory either.)
    if (!WASI) assert.equal(runCli(['config'], { SNOWID_LEASE_DIR: notADir }).status, 1)
    const r2 = runCli(['sql', 'postgres', '--functions'], { SNOWID_LEASE_DIR: notADir })
    assert.equal(r2.status, 0, r2.stderr)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('postgresFunctions() refuses what is not a layout', () => {
  const base = { epoch: 0, timestampBits: 41, datacenterBits: 3, workerBits: 5, clockBackBits: 2, sequenceBits: 12 }
  assert.match(postgresFunctions(base), /snowid_timestamp/)
  for (const [bad, name] of [
    [undefined, 'TypeError'],
    [null, 'TypeError'],
    [{ ...base, workerBits: -1 }, 'RangeError'],
    [{ ...base, workerBits: 1.5 }, 'RangeError'],
    [{ ...base, epoch: '0' }, 'RangeError'],
    [{ ...base, timestampBits: 40 }, 'RangeError'],
    [{ ...base, timestampBits: 53, sequenceBits: 0, clockBackBits: 0, workerBits: 7 }, 'RangeError'],
  ]) {
    assert.throws(
      () => postgresFunctions(bad),
      err => err.constructor.name === name && err.code === 'ERR_SNOWID_INVALID_ARGUMENT',
    )
  }
})

test('snowid sql postgres prints the lease table of snowid/postgres', () => {
  const { tableSql } = require('../lib/postgres.js')
  const r = runCli(['sql', 'postgres'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trimEnd(), tableSql().trimEnd())
  const named = runCli(['sql', 'postgres', '--table', 'ids.snowid_slots'])
  assert.equal(named.status, 0, named.stderr)
  assert.equal(named.stdout.trimEnd(), tableSql('ids.snowid_slots').trimEnd())
  assert.match(named.stdout, /CREATE TABLE "ids"\."snowid_slots"/)
})

test('snowid sql mysql prints the lease table of snowid/mysql; reserved words are quoted; the rows follow the layout', () => {
  const mysql = require('../lib/mysql.js')
  const r = runCli(['sql', 'mysql', '--table', 'user'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trimEnd(), mysql.tableSql('user').trimEnd())
  assert.match(r.stdout, /CREATE TABLE `user` \(/)
  const pg = runCli(['sql', 'postgres', '--table', 'order'])
  assert.match(pg.stdout, /CREATE TABLE "order" \(/)
  // The rows are those of the configured layout: 2 datacenters of 4 slots.
  const small = runCli(['sql', 'postgres'], { SNOWID_DATACENTER_BITS: '1', SNOWID_WORKER_BITS: '2' })
  assert.match(small.stdout, /generate_series\(0, 1\) AS d, generate_series\(0, 3\) AS w/)
})

test('snowid sql refuses a temporary or system table with exit 1 and a coded message', () => {
  for (const [dialect, table] of [
    ['postgres', 'pg_temp.t'],
    ['postgres', 'information_schema.tables'],
    ['mysql', 'mysql.user'],
    ['mysql', 'a-b'],
  ]) {
    const r = runCli(['sql', dialect, '--table', table])
    assert.equal(r.status, 1, `${dialect} ${table}: ${r.stdout}`)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^snowid: table: expected .*\(ERR_SNOWID_INVALID_ARGUMENT\)\n$/)
  }
})

test('postgresFunctions() refuses a config that throws when read, and an epoch in the future', () => {
  const base = { epoch: 0, timestampBits: 41, datacenterBits: 3, workerBits: 5, clockBackBits: 2, sequenceBits: 12 }
  const boom = () => {
    throw new Error('unreadable')
  }
  for (const traps of [{ get: boom }, { getOwnPropertyDescriptor: boom }]) {
    assert.throws(
      () => postgresFunctions(new Proxy(base, traps)),
      err => err instanceof TypeError && err.code === 'ERR_SNOWID_INVALID_ARGUMENT',
    )
  }
  // Only its own properties: a layout's fields on a prototype are not the config's.
  assert.throws(
    () => postgresFunctions(Object.create(base)),
    err =>
      err instanceof RangeError &&
      /^config\.epoch: expected a non-negative integer, found undefined$/.test(err.message),
  )
  for (const epoch of [8.64e15, 9e15, Date.parse('2100-01-01')]) {
    assert.throws(
      () => postgresFunctions({ ...base, epoch }),
      err => err instanceof RangeError && err.code === 'ERR_SNOWID_INVALID_ARGUMENT' && /in the past/.test(err.message),
    )
  }
})

async function main() {
  const server = await startPostgres()
  if (!server) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }
  let client
  test.after(async () => {
    await client?.end().catch(() => {})
    server.stop()
  })
  const { Client } = require('pg')
  client = new Client({ host: server.host, port: server.port, user: server.user, database: server.database })
  test.before(() => client.connect())

  for (const layout of LAYOUTS) {
    test(`${layout.name} layout: the SQL functions agree with decode, minIdAt and maxIdAt for ${TOTAL} ids`, async t => {
      const cli = runCli(['sql', 'postgres', '--functions'], layout.env)
      assert.equal(cli.status, 0, cli.stderr)
      const sql = cli.stdout
      const { reader, ids } = await idsFor(layout)
      // The CLI read the layout from the environment as the library does; the library's own call gives the same SQL.
      assert.equal(sql, postgresFunctions(reader.config()))

      const schema = `layout_${layout.name}`
      await client.query(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`)
      await client.query(sql)
      const { rows: marks } = await client.query(
        `SELECT proname, provolatile, proparallel, proisstrict FROM pg_proc WHERE pronamespace = $1::regnamespace ORDER BY proname`,
        [schema],
      )
      assert.deepEqual(
        marks.map(m => [m.proname, m.provolatile, m.proparallel, m.proisstrict]),
        [
          'snowid_clock_back',
          'snowid_datacenter_id',
          'snowid_max_id_at',
          'snowid_min_id_at',
          'snowid_sequence',
          'snowid_timestamp',
          'snowid_worker_id',
        ].map(name => [name, 'i', 's', true]),
      )

      await client.query('CREATE TABLE ids (id bigint PRIMARY KEY, n int NOT NULL)')
      await client.query('INSERT INTO ids SELECT * FROM unnest($1::bigint[], $2::int[])', [
        ids.map(String),
        ids.map((_, n) => n),
      ])
      await client.query('ANALYZE ids')

      // Every field, and both bounds of the id's own ms and of a time half a ms into it, in one query.
      const decodeSql = `
        SELECT n, trim_scale(extract(epoch FROM snowid_timestamp(id)) * 1000)::text AS ms,
               snowid_datacenter_id(id) AS dc, snowid_worker_id(id) AS w, snowid_clock_back(id) AS cb,
               snowid_sequence(id) AS seq,
               snowid_min_id_at(snowid_timestamp(id)) AS lo, snowid_max_id_at(snowid_timestamp(id)) AS hi,
               CASE WHEN id < $1 AND n % 4 = 0 THEN snowid_min_id_at(snowid_timestamp(id) + interval '0.5 ms') END AS lo_half,
               CASE WHEN id < $1 AND n % 4 = 0 THEN snowid_max_id_at(snowid_timestamp(id) + interval '0.5 ms') END AS hi_half
          FROM ids`
      // Half a ms into the last ms is past expiresAt, so ids of that ms skip the half-ms check.
      const { rows } = await client.query(decodeSql, [String(reader.minIdAt(reader.config().expiresAt))])
      assert.equal(rows.length, TOTAL)
      let checked = 0
      for (const row of rows) {
        const id = ids[row.n]
        const d = reader.decode(id)
        const inSql = [row.ms, row.dc, row.w, row.cb, row.seq, row.lo, row.hi]
        const inJs = [
          d.timestamp,
          d.datacenterId,
          d.workerId,
          d.clockBack,
          d.sequence,
          reader.minIdAt(d.timestamp),
          reader.maxIdAt(d.timestamp),
        ]
        if (row.lo_half !== null) {
          // Half a ms in: the smallest id at or after it is in the next ms; the largest at or before it, in this one.
          inSql.push(row.lo_half, row.hi_half)
          inJs.push(reader.minIdAt(d.timestamp + 1), reader.maxIdAt(d.timestamp))
          checked++
        }
        // One string comparison per id keeps 100,000 checks fast; a difference is shown field by field.
        if (inSql.join() !== inJs.join()) assert.deepEqual(inSql.map(String), inJs.map(String), `id ${id}`)
      }
      t.diagnostic(`${TOTAL} ids decoded alike in SQL and JS; ${checked} also checked half a ms into their ms`)

      // The results read no setting: the same under another time zone and DateStyle (on every tenth id).
      const digest = `SELECT md5(string_agg(concat_ws(',', extract(epoch FROM snowid_timestamp(id)), snowid_min_id_at(snowid_timestamp(id)),
                             snowid_max_id_at(snowid_timestamp(id))), ';' ORDER BY id)) AS h FROM ids WHERE n % 10 = 0`
      const {
        rows: [utc],
      } = await client.query(digest)
      await client.query("SET TimeZone = 'Pacific/Chatham'; SET DateStyle = 'SQL, DMY'")
      const {
        rows: [chatham],
      } = await client.query(digest)
      await client.query('RESET TimeZone; RESET DateStyle')
      assert.equal(chatham.h, utc.h)
    })

    test(`${layout.name} layout: BETWEEN snowid_min_id_at(a) AND snowid_max_id_at(b) returns exactly the ids in [a, b]`, async () => {
      const schema = `layout_${layout.name}`
      await client.query(`SET search_path TO ${schema}`)
      const reader = new Snowflake({ ...layout.options, workerId: 0, lease: false })
      const { rows } = await client.query('SELECT id FROM ids ORDER BY id')
      const all = rows.map(r => ({ id: r.id, ms: reader.timestampOf(r.id) }))
      const now = Date.now()
      const recent = all.map(r => r.ms).filter(ms => Math.abs(ms - now) < 3_600_000)
      const times = [...new Set(recent)].sort((a, b) => a - b)
      assert.ok(times.length > 20, `the ids made now span ${times.length} ms`)
      const pick = q => times[Math.floor(q * (times.length - 1))]
      const ranges = [
        [pick(0.25), pick(0.75)],
        [pick(0.5), pick(0.5)],
        [times[0], times[times.length - 1]],
        [pick(0.3) + 0.25, pick(0.6) + 0.75], // bounds inside a ms: [a, b] holds the ms after a's, up to b's
        [reader.config().epoch, reader.config().epoch + 1000],
      ]
      for (const [a, b] of ranges) {
        const iso = ms =>
          new Date(Math.floor(ms))
            .toISOString()
            .replace('Z', `${String(Math.round((ms % 1) * 1000)).padStart(3, '0')}Z`)
        const { rows: found } = await client.query(
          'SELECT id FROM ids WHERE id BETWEEN snowid_min_id_at($1::timestamptz) AND snowid_max_id_at($2::timestamptz) ORDER BY id',
          [iso(a), iso(b)],
        )
        const expected = all.filter(r => r.ms >= a && r.ms <= b).map(r => r.id)
        assert.ok(expected.length > 0, `[${iso(a)}, ${iso(b)}] holds ids`)
        assert.deepEqual(
          found.map(r => r.id),
          expected,
          `[${iso(a)}, ${iso(b)}]`,
        )
      }
      // IMMUTABLE lets the planner fold the bounds into constants, so the range is an index scan of the key.
      const { rows: plan } = await client.query(
        `EXPLAIN SELECT id FROM ids WHERE id BETWEEN snowid_min_id_at('${new Date(pick(0.5)).toISOString()}') AND snowid_max_id_at('${new Date(pick(0.5)).toISOString()}')`,
      )
      const text = plan.map(r => r['QUERY PLAN']).join('\n')
      assert.match(text, /Index (Only )?Scan/, text)
      assert.doesNotMatch(text, /snowid_/, `the bounds are constants in the plan:\n${text}`)
    })
  }

  test('bad input to the SQL functions is an error, never a wrong value', async () => {
    await client.query('SET search_path TO layout_default')
    const reader = new Snowflake({ workerId: 0, lease: false })
    const { epoch, expiresAt } = reader.config()
    const cases = [
      [
        'SELECT snowid_timestamp(-1)',
        '22003',
        /^snowid_timestamp: expected an id from 0 to 9223372036854775807, found -1$/,
      ],
      ['SELECT snowid_worker_id(-9223372036854775808)', '22003', /^snowid_worker_id: expected an id/],
      ['SELECT snowid_sequence(-5)', '22003', /found -5$/],
      [
        `SELECT snowid_min_id_at('${new Date(epoch - 1).toISOString()}')`,
        '22008',
        /^snowid_min_id_at: expected a time from 2020-01-31T16:00:00.000Z \(the epoch\) to 2089-10-07T07:47:35.551Z, found /,
      ],
      [
        `SELECT snowid_max_id_at('${new Date(expiresAt + 1).toISOString()}')`,
        '22008',
        /^snowid_max_id_at: expected a time/,
      ],
      ["SELECT snowid_min_id_at('infinity')", '22008', /found infinity$/],
      ["SELECT snowid_max_id_at('-infinity')", '22008', /found -infinity$/],
    ]
    for (const [sql, code, message] of cases) {
      await assert.rejects(client.query(sql), err => {
        assert.equal(err.code, code, `${sql}: ${err.message}`)
        assert.match(err.message, message)
        return true
      })
    }
    const {
      rows: [nulls],
    } = await client.query('SELECT snowid_timestamp(NULL) AS a, snowid_min_id_at(NULL) AS b')
    assert.deepEqual(nulls, { a: null, b: null })
    const {
      rows: [edges],
    } = await client.query(
      `SELECT snowid_min_id_at('${new Date(epoch).toISOString()}') AS lo, snowid_max_id_at('${new Date(expiresAt).toISOString()}') AS hi`,
    )
    assert.deepEqual(edges, { lo: '0', hi: String(MAX_ID) })
  })
}

main()
