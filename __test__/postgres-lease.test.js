'use strict'

// snowid/postgres against a real PostgreSQL (started by the test on a free loopback port). The conformance suite every
// store runs (store-conformance.js) runs once, with a pg Pool; postgres.js runs its adapter's smoke test, and what
// depends on the client (the rows it returns, its end); a pg Client runs configureWorkerId. The scenario with 40
// processes at once runs in CI's slow tier (slow/stores-at-scale.test.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

require('./helpers.js').isolateLeases()

const { serverFor, startPostgres, freePort } = require('./servers.js')
const { holder, assertNoDuplicates, endedClientExits, holdersThroughAnOutage } = require('./holders.js')
const { clientSmoke, storeConformance } = require('./store-conformance.js')
const { acquireWorkerId, PostgresLease, tableSql } = require('../lib/postgres.js')
const { runNode } = require('./helpers.js')

const CLIENTS = ['pg', 'postgres']

function connect(kind, server, extra = {}) {
  const settings = { host: server.host, port: server.port, user: extra.user ?? server.user, database: server.database }
  if (kind === 'pg') {
    const { Pool } = require('pg')
    const client = new Pool({ ...settings, max: 4 })
    client.on('error', () => {})
    return { client, sql: (text, params) => client.query(text, params).then(r => r.rows), close: () => client.end() }
  }
  const postgres = require('postgres')
  const client = postgres({ ...settings, max: 4, onnotice: () => {} })
  return {
    client,
    sql: (text, params) => client.unsafe(text, params).then(rows => Array.from(rows)),
    close: () => client.end({ timeout: 1 }),
  }
}

async function main() {
  const server = await serverFor(test, 'postgres', startPostgres)
  if (!server) return
  const admin = connect('pg', server)
  test.after(() => admin.close())

  const base = {
    store: 'postgres',
    client: 'pg',
    host: server.host,
    port: server.port,
    user: server.user,
    database: server.database,
  }
  const store = {
    name: 'PostgreSQL',
    base: { ...base, table: 'conform_holders' },
    acquire: (client, options) => acquireWorkerId({ client, ...options }),
    Lease: PostgresLease,
    client: admin.client,
    at: table => ({ table }),
    slot: async (table, datacenterId, workerId) => {
      const [row] = await admin.sql(
        `SELECT token, mark_ms::text AS mark FROM ${table} WHERE datacenter_id = $1 AND worker_id = $2`,
        [datacenterId, workerId],
      )
      return { held: row.token !== null, mark: Number(row.mark) }
    },
    stepBack: { table: 'stepped' },
  }
  storeConformance(test, store)

  clientSmoke(test, store, 'postgres', {
    open: async () => connect('postgres', server),
    unreachable: async () => connect('postgres', { ...server, port: await freePort() }),
    code: 'ERR_SNOWID_POSTGRES_UNAVAILABLE',
  })

  // What each client returns rows in (its own types) and how it sends DDL.
  for (const kind of CLIENTS) {
    test(`with ${kind}`, async t => {
      const { client, sql, close } = connect(kind, server)
      t.after(() => close())

      await t.test(
        'the table is created on first use, under a schema-qualified name, as snowid sql postgres prints it',
        async () => {
          await sql(`CREATE SCHEMA IF NOT EXISTS ids_${kind}`)
          const lease = await acquireWorkerId({
            client,
            datacenterId: 1,
            ttlMs: 1000,
            table: `ids_${kind}.slots`,
            snowflake: { workerBits: 1 },
          })
          await lease.release()
          const columns = await sql(
            `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'slots' ORDER BY ordinal_position`,
            [`ids_${kind}`],
          )
          assert.deepEqual(
            columns.map(c => `${c.column_name} ${c.data_type}`),
            [
              'datacenter_id integer',
              'worker_id integer',
              'token text',
              'expires_at timestamp with time zone',
              'mark_ms bigint',
              'clock_back integer',
              'written_on text',
              'holder text',
            ],
          )
          assert.equal(
            (await sql(`SELECT count(*)::int AS n FROM ids_${kind}.slots`))[0].n,
            16,
            'a row per slot of every datacenter (8 of 2 slots)',
          )
          assert.match(tableSql(`ids_${kind}.slots`), new RegExp(`CREATE TABLE "ids_${kind}"\\."slots"`))
        },
      )

      await t.test(
        'a row that holds something snowid did not write is ERR_SNOWID_LEASE_CORRUPT, and is left as found',
        async () => {
          const table = `bad_${kind}`
          const opts = { client, datacenterId: 7, ttlMs: 200, table, snowflake: { workerBits: 0 } }
          await admin.sql(tableSql(table))
          for (const [mark, clockBack] of [
            [-5, null],
            [null, 3],
            [1700000000000, 5000],
            [2 ** 60, 0],
          ]) {
            await sql(`DELETE FROM ${table}`)
            await sql(`INSERT INTO ${table} (datacenter_id, worker_id, mark_ms, clock_back) VALUES (7, 0, $1, $2)`, [
              mark,
              clockBack,
            ])
            const before = await sql(`SELECT * FROM ${table}`)
            await assert.rejects(acquireWorkerId(opts), err => {
              assert.equal(err.code, 'ERR_SNOWID_LEASE_CORRUPT', `${mark}/${clockBack}: ${err.message}`)
              assert.match(err.message, new RegExp(`the row \\(7, 0\\) of ${table}`))
              return true
            })
            assert.deepEqual(await sql(`SELECT * FROM ${table}`), before, 'the row is left as found')
          }
        },
      )
    })
  }

  test('a fresh table: each slot is held one TTL before its first use, then taken in one round trip; a row deleted by hand is held one TTL', async () => {
    const ttlMs = 1000
    const statements = []
    const counting = {
      query: (text, params) => {
        statements.push(text)
        return admin.client.query(text, params)
      },
    }
    const started = Date.now()
    const lease = await acquireWorkerId({ client: counting, datacenterId: 2, ttlMs, table: 'fresh_slots' })
    // A table just made may be one dropped and made again under live holders: its rows record no incarnation.
    assert.ok(Date.now() - started >= ttlMs, `held ${Date.now() - started} ms`)
    assert.equal(typeof lease.snowflake.nextId(), 'bigint')
    const [row] = await admin.sql(
      'SELECT count(*)::int AS n, count(*) FILTER (WHERE mark_ms = 0 AND written_on IS NULL)::int AS fresh FROM fresh_slots',
    )
    assert.deepEqual(
      row,
      { n: 256, fresh: 255 },
      'a row per slot of the 8 datacenters, made never held, in no incarnation',
    )
    const [held] = await admin.sql('SELECT written_on FROM fresh_slots WHERE datacenter_id = 2 AND worker_id = 0')
    assert.match(held.written_on, /^\d+:\d+:\d+$/, 'the slot records the incarnation: system id, timeline, table oid')
    await lease.release()
    // Given back, in the same incarnation: the next holder takes it with one statement, past its mark.
    await sleep(5)
    statements.length = 0
    const t1 = Date.now()
    const next = await acquireWorkerId({ client: counting, datacenterId: 2, ttlMs: 10_000, table: 'fresh_slots' })
    assert.ok(Date.now() - t1 < 10_000, `no TTL's wait (${Date.now() - t1} ms)`)
    assert.equal(statements.filter(text => /FOR UPDATE SKIP LOCKED/.test(text)).length, 1)
    await next.release()
    // A hand deletion: the row is made again with no mark, and that slot waits one TTL.
    await admin.sql('DELETE FROM fresh_slots WHERE datacenter_id = 3')
    const t0 = Date.now()
    const again = await acquireWorkerId({ client: admin.client, datacenterId: 3, ttlMs: 500, table: 'fresh_slots' })
    assert.ok(Date.now() - t0 >= 500, `held ${Date.now() - t0} ms`)
    await again.release()
  })

  test('a fresh table made by 8 clients at once: every one gets a slot, whichever error the catalog gives the others', async () => {
    // Concurrent CREATE TABLEs collide on the catalog with 23505, 42P07 or 42710 (the row type); 6 rounds of 8 made
    // 42710 about once a round before it was accepted.
    const clients = Array.from({ length: 8 }, () => connect('pg', server))
    try {
      // A fresh table's slots are held one TTL, then renewed once before use: a TTL of 1 s gives that renewal a third of
      // it (333 ms) on a busy machine.
      for (let round = 0; round < 6; round++) {
        const leases = await Promise.all(
          clients.map(({ client }, i) =>
            acquireWorkerId({ client, table: `racing_${round}`, datacenterId: i % 2, ttlMs: 1000 }),
          ),
        )
        assert.equal(
          new Set(leases.map(l => `${l.datacenterId}:${l.workerId}`)).size,
          8,
          `round ${round}: distinct slots`,
        )
        await Promise.all(leases.map(l => l.release()))
      }
    } finally {
      await Promise.all(clients.map(({ close }) => close()))
    }
  })

  test('tables: reserved words work; pg_* schemas are refused; a table that is not the lease table is ERR_SNOWID_STORE_TABLE_INVALID', async () => {
    for (const table of ['user', 'select', 'order']) {
      const lease = await acquireWorkerId({ client: admin.client, table, ttlMs: 1500 })
      assert.equal(lease.workerId, 0)
      await lease.release()
    }
    await admin.sql(tableSql('public.group', { datacenterBits: 0, workerBits: 1 }))
    assert.equal(
      (await admin.sql('SELECT count(*)::int AS n FROM "group"'))[0].n,
      2,
      'the printed DDL runs, with its rows',
    )
    for (const table of [
      'pg_temp.snowid_workers',
      'pg_catalog.pg_class',
      'information_schema.tables',
      'pg_class',
      'pg_toast.t',
    ]) {
      await assert.rejects(
        acquireWorkerId({ client: admin.client, table }),
        err => err instanceof RangeError && err.code === 'ERR_SNOWID_INVALID_ARGUMENT',
      )
    }
    const { Client } = require('pg')
    const one = new Client({ host: server.host, port: server.port, user: server.user, database: server.database })
    await one.connect()
    try {
      // A temporary table of the same name hides the permanent one on its connection.
      await one.query(tableSql('shadowed'))
      await one.query('CREATE TEMPORARY TABLE shadowed (LIKE public.shadowed INCLUDING ALL)')
      await admin.sql('CREATE UNLOGGED TABLE unlogged (LIKE public.shadowed INCLUDING ALL)')
      await admin.sql('CREATE TABLE no_key (LIKE public.shadowed)')
      await admin.sql(
        'CREATE TABLE wrong_type (datacenter_id integer, worker_id integer, token text, expires_at timestamptz, mark_ms integer, clock_back integer, written_on text, PRIMARY KEY (datacenter_id, worker_id))',
      )
      await admin.sql('CREATE TABLE other_key (LIKE public.shadowed, PRIMARY KEY (worker_id, datacenter_id))')
      // A table made by a version before written_on: the message says how to add it.
      await admin.sql(
        'CREATE TABLE before_origin (datacenter_id integer NOT NULL, worker_id integer NOT NULL, token text, expires_at timestamptz, mark_ms bigint, clock_back integer, PRIMARY KEY (datacenter_id, worker_id))',
      )
      for (const [client, table, found] of [
        [one, 'shadowed', /a temporary table/],
        [admin.client, 'unlogged', /an unlogged table/],
        [admin.client, 'no_key', /no primary key/],
        [admin.client, 'wrong_type', /columns with mark_ms integer/],
        [admin.client, 'other_key', /the primary key \(worker_id, datacenter_id\)/],
        [
          admin.client,
          'before_origin',
          /no written_on; add it with ALTER TABLE "before_origin" ADD COLUMN written_on text$/,
        ],
      ]) {
        await assert.rejects(acquireWorkerId({ client, table, ttlMs: 500 }), err => {
          assert.equal(err.code, 'ERR_SNOWID_STORE_TABLE_INVALID', `${table}: ${err.message}`)
          assert.match(err.message, found)
          assert.ok(err.message.length <= 480)
          return true
        })
      }
    } finally {
      await one.end()
    }
  })

  test('free slots whose marks are far ahead are skipped; when all are, ERR_SNOWID_CLOCK_BACKWARDS after waitMs', async () => {
    const opts = { client: admin.client, datacenterId: 4, ttlMs: 1000, table: 'ahead', snowflake: { workerBits: 2 } }
    await (await acquireWorkerId(opts)).release()
    await admin.sql('UPDATE ahead SET mark_ms = $1 WHERE datacenter_id = 4 AND worker_id < 3', [Date.now() + 30_000])
    const lease = await acquireWorkerId({ ...opts, waitMs: 3000 })
    assert.equal(lease.workerId, 3, 'the slot whose mark is behind the clock')
    await lease.release()
    await admin.sql('UPDATE ahead SET mark_ms = $1 WHERE datacenter_id = 4', [Date.now() + 30_000])
    const started = Date.now()
    await assert.rejects(acquireWorkerId({ ...opts, waitMs: 1000 }), err => {
      assert.equal(err.code, 'ERR_SNOWID_CLOCK_BACKWARDS', err.message)
      assert.match(err.message, /every free slot's mark is a TTL or more ahead/)
      return true
    })
    assert.ok(Date.now() - started >= 1000, 'it waited waitMs')
  })

  // The client's own end (the adapter's `closed`); pg's runs in the conformance suite.
  test('a lost lease whose postgres client is then ended stops taking slots, and its process exits', tt =>
    endedClientExits(tt, { store: 'postgres', client: 'postgres', ...server, table: 'ended_postgres' }))

  test('the server restarted (pg_ctl restart -m fast) while 3 holders stream: they stop by their deadlines, recover, 0 duplicates', tt =>
    holdersThroughAnOutage(tt, { store: 'postgres', client: 'pg', ...server }, () => server.restart(1200)))

  test("pg_terminate_backend on the leases' connections: the holders stop by their deadlines, recover, 0 duplicates", async tt => {
    // The holders log in as a role of their own, with the documented grants, so that its connections can be both
    // refused (CONNECTION LIMIT 0) and ended; a pool would otherwise reconnect at once.
    await admin.sql(tableSql()).catch(err => assert.equal(err.code, '42P07', err.message))
    await admin.sql(`DROP ROLE IF EXISTS snowid_holder`)
    await admin.sql(`CREATE ROLE snowid_holder LOGIN`)
    await admin.sql(`GRANT SELECT, INSERT, UPDATE ON snowid_workers TO snowid_holder`)
    await holdersThroughAnOutage(
      tt,
      { store: 'postgres', client: 'pg', ...server, user: 'snowid_holder' },
      async () => {
        await admin.sql(`ALTER ROLE snowid_holder CONNECTION LIMIT 0`)
        const ended = await admin.sql(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE usename = 'snowid_holder'`,
        )
        assert.ok(ended[0].n >= 3, `ended ${ended[0].n} connections`)
        await sleep(1500)
        await admin.sql(`ALTER ROLE snowid_holder CONNECTION LIMIT -1`)
        return Date.now()
      },
    )
  })

  test('a pg.Pool whose every connection is busy: the holders stop by their deadlines, recover, 0 duplicates', tt =>
    holdersThroughAnOutage(
      tt,
      { store: 'postgres', client: 'pg', ...server },
      async procs => {
        for (const p of procs) p.child.kill('SIGUSR2')
        await Promise.all(procs.map(p => p.waitFor(e => e.event === 'busy')))
        await sleep(1500)
        return Date.now()
      },
      { settings: { poolMax: 1, busyMs: 1500 } },
    ))

  test('permission errors are ERR_SNOWID_STORE_PERMISSION_DENIED; the documented grants are enough', async () => {
    await admin.sql(`DROP ROLE IF EXISTS snowid_app`)
    await admin.sql(`DROP ROLE IF EXISTS snowid_none`)
    await admin.sql(`CREATE ROLE snowid_app LOGIN`)
    await admin.sql(`CREATE ROLE snowid_none LOGIN`)
    await admin.sql(`CREATE SCHEMA IF NOT EXISTS granted`)
    await admin.sql(tableSql('granted.slots'))
    await admin.sql(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
    await admin.sql(`GRANT USAGE ON SCHEMA granted TO snowid_app`)
    await admin.sql(`GRANT SELECT, INSERT, UPDATE ON granted.slots TO snowid_app`)
    const app = connect('pg', server, { user: 'snowid_app' })
    const none = connect('postgres', server, { user: 'snowid_none' })
    try {
      // The grants the README lists, on a table made beforehand: enough, although the role cannot create it.
      const lease = await acquireWorkerId({
        client: app.client,
        datacenterId: 2,
        ttlMs: 1000,
        table: 'granted.slots',
        snowflake: { workerBits: 1 },
      })
      assert.equal(typeof lease.snowflake.nextId(), 'bigint')
      await lease.release()
      for (const [client, table] of [
        [none.client, 'granted.slots'],
        [app.client, 'public.elsewhere'],
      ]) {
        await assert.rejects(acquireWorkerId({ client, datacenterId: 2, ttlMs: 200, table }), err => {
          assert.equal(err.code, 'ERR_SNOWID_STORE_PERMISSION_DENIED', err.message)
          assert.match(err.message, /permission denied/)
          assert.match(err.message, /SELECT, INSERT and UPDATE on the table/)
          return true
        })
      }
    } finally {
      await app.close()
      await none.close()
    }
  })

  test('PostgreSQL unreachable at acquire is ERR_SNOWID_POSTGRES_UNAVAILABLE, with either client', async () => {
    const port = await freePort()
    for (const kind of CLIENTS) {
      const { client, close } = connect(kind, { ...server, port })
      try {
        await assert.rejects(acquireWorkerId({ client, ttlMs: 500 }), err => {
          assert.equal(err.code, 'ERR_SNOWID_POSTGRES_UNAVAILABLE', `${kind}: ${err.message}`)
          return true
        })
      } finally {
        await close()
      }
    }
  })

  test('bad options are coded errors', async () => {
    const pool = admin.client
    const boom = () => {
      throw new Error('unreadable')
    }
    const throwing = new Proxy({}, { get: boom, has: boom, ownKeys: boom })
    const bad = [
      [undefined, TypeError],
      [{}, TypeError],
      [{ client: {} }, TypeError],
      [{ client: pool, ttlMs: 5 }, RangeError],
      [{ client: pool, waitMs: -1 }, RangeError],
      [{ client: pool, table: 'a;drop table x' }, TypeError],
      [{ client: pool, table: 'a.b.c' }, TypeError],
      [{ client: pool, table: '' }, TypeError],
      [{ client: pool, table: 5 }, TypeError],
      [{ client: pool, snowflake: { workerId: 3 } }, TypeError],
      [{ client: pool, keyPrefix: 'x' }, TypeError],
      [{ client: pool, snowflake: throwing }, TypeError],
      [{ client: throwing }, TypeError],
      [throwing, TypeError],
    ]
    for (const [options, Class] of bad) {
      await assert.rejects(acquireWorkerId(options), err => {
        assert.ok(err instanceof Class, `${bad.indexOf(bad.find(([o]) => o === options))}: ${err}`)
        assert.equal(err.code, 'ERR_SNOWID_INVALID_ARGUMENT')
        return true
      })
    }
    await assert.rejects(acquireWorkerId({ client: pool, datacenterId: 8 }), { code: 'ERR_SNOWID_INVALID_CONFIG' })
  })

  test('configureWorkerId gives the default generator the leased slot, with a pg Client', () => {
    const r = runNode(`
      const { configureWorkerId } = require('./lib/postgres.js')
      const { Client } = require('pg')
      const client = new Client(${JSON.stringify({ host: server.host, port: server.port, user: server.user, database: server.database })})
      client.connect().then(() => configureWorkerId({ client, datacenterId: 3, ttlMs: 1000, table: 'configured' })).then(async (lease) => {
        const snowid = require('.')
        const d = snowid.decode(snowid.nextId())
        await lease.release()
        let after = 'issued'
        try { snowid.nextId() } catch (e) { after = e.code }
        console.log(JSON.stringify({ ids: [d.datacenterId, d.workerId], slot: [lease.datacenterId, lease.workerId], after }))
        await client.end()
      })
    `)
    assert.equal(r.status, 0, r.stderr)
    const res = JSON.parse(r.stdout)
    assert.deepEqual(res.ids, res.slot)
    assert.equal(res.after, 'ERR_SNOWID_LEASE_LOST', 'the default generator stops with the lease')
  })

  test('holders of both clients share one table: 0 duplicates', async tt => {
    const procs = ['pg', 'postgres', 'pg', 'postgres'].map(client =>
      // ttlMs 5000: no holder loses its slot to a stall on busy cores while the others start.
      holder({ store: 'postgres', client, ...server, mode: 'burst', count: 5000, ttlMs: 5000, datacenterId: 5 }),
    )
    try {
      const acquired = await Promise.all(
        procs.map(p => p.waitFor(e => e.event === 'acquired' || e.event === 'error', 60_000)),
      )
      assert.deepEqual(
        acquired.filter(e => e.event !== 'acquired'),
        [],
      )
      await Promise.all(procs.map(p => p.waitFor(e => e.event === 'ids', 60_000)))
      assert.equal(new Set(acquired.map(e => e.workerId)).size, 4)
      assertNoDuplicates(
        procs.flatMap(p => p.ids()),
        'between pg and postgres.js holders',
      )
      tt.diagnostic('4 holders, 2 per client, distinct slots, 20000 ids, 0 duplicates')
    } finally {
      await Promise.all(procs.map(p => p.stop()))
    }
  })
}

main()
