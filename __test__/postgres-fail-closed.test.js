'use strict'

// snowid/postgres when the lease's data is lost or locked under live holders, against a real PostgreSQL (started by
// the test): a table dropped and made again, a fresh initdb at the same address, a table dropped under its only
// holder, and a table locked (LOCK TABLE ... ACCESS EXCLUSIVE). docs/guarantees.md, "Fail closed", lists each case.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

require('./helpers.js').isolateLeases()

const { reportMissing, startPostgres, tcpProxy } = require('./servers.js')
const { dataLostUnderAHolder, tableDroppedUnderAHolder } = require('./holders.js')
const { acquireWorkerId } = require('../lib/postgres.js')

function pool(server, port = server.port) {
  const { Pool } = require('pg')
  const client = new Pool({ host: server.host, port, user: server.user, database: server.database, max: 4 })
  client.on('error', () => {})
  return client
}

async function main() {
  const server = await startPostgres()
  if (!server) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }
  test.after(() => server.stop())
  const admin = pool(server)
  test.after(() => admin.end())
  const base = (client, table, port = server.port) => ({
    store: 'postgres',
    client,
    host: server.host,
    port,
    user: server.user,
    database: server.database,
    table,
  })

  for (const client of ['pg', 'postgres']) {
    test(`DROP TABLE under a live holder (${client}): a newcomer makes the table and waits one TTL, 0 duplicates`, tt =>
      dataLostUnderAHolder(tt, base(client, `dropped_${client}`), async () => {
        await admin.query(`DROP TABLE dropped_${client}`)
        return Date.now()
      }))
  }

  test('a table dropped under its only holder: ERR_SNOWID_STORE_TABLE_MISSING, then made again and held one TTL', tt =>
    tableDroppedUnderAHolder(tt, base('pg', 'dropped_alone'), async () => {
      await admin.query('DROP TABLE dropped_alone')
      return Date.now()
    }))

  test('a fresh initdb at the same address under a live holder: the newcomer waits one TTL, 0 duplicates', async tt => {
    const proxy = await tcpProxy(server.port)
    const fresh = await startPostgres()
    try {
      await dataLostUnderAHolder(
        tt,
        base('pg', 'moved', proxy.port),
        async () => {
          // The address now leads to another cluster, which has never seen the lease: as a fresh initdb would.
          proxy.retarget(fresh.port)
          proxy.drop()
          return Date.now()
        },
        // A TTL of 6 s: the old holder may issue for seconds after the switch, longer than a newcomer takes to start.
        { datacenterId: 6, ttlMs: 6000 },
      )
    } finally {
      await proxy.close()
      fresh.stop()
    }
  })

  test('LOCK TABLE ... ACCESS EXCLUSIVE: ERR_SNOWID_STORE_TIMEOUT from the server, and nothing held by nobody', async tt => {
    const table = 'locked_slots'
    const first = await acquireWorkerId({ client: admin, table, ttlMs: 1000, datacenterId: 1 })
    await first.release()
    const locker = await admin.connect()
    try {
      await locker.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
      const clients = Array.from({ length: 3 }, () => pool(server))
      try {
        const started = Date.now()
        const results = await Promise.allSettled(
          clients.map(client => acquireWorkerId({ client, table, ttlMs: 1000, datacenterId: 1 })),
        )
        const elapsed = Date.now() - started
        for (const r of results) {
          assert.equal(r.status, 'rejected')
          assert.equal(r.reason.code, 'ERR_SNOWID_STORE_TIMEOUT', r.reason.message)
          assert.match(r.reason.message, /lock timeout|statement timeout/)
          assert.doesNotMatch(r.reason.message, /is up and/)
        }
        tt.diagnostic(`${results[0].reason.message} (after ${elapsed} ms)`)
        // The server cancelled the takes: once the lock goes, no row is held.
        await locker.query('ROLLBACK')
        await sleep(500)
        const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE token IS NOT NULL`)
        assert.equal(rows[0].n, 0, 'no slot is held under a token nobody owns')
        const lease = await acquireWorkerId({ client: clients[0], table, ttlMs: 1000, datacenterId: 1 })
        assert.equal(lease.workerId, 0)
        await lease.release()
      } finally {
        // The lock goes first: a pool whose connections still wait for it could not end.
        await locker.query('ROLLBACK').catch(() => {})
        await Promise.all(clients.map(c => c.end()))
      }
    } finally {
      await locker.query('ROLLBACK').catch(() => {})
      locker.release()
    }
  })
}

main()
