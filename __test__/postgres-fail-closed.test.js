'use strict'

// snowid/postgres when the lease's data is lost or locked under live holders, against a real PostgreSQL (started by
// the test): a table dropped and made again, a fresh initdb at the same address, a table dropped under its only
// holder, and a table locked (LOCK TABLE ... ACCESS EXCLUSIVE). docs/guarantees.md, "Fail closed", lists each case.

const test = require('node:test')

require('./helpers.js').isolateLeases()

const { serverFor, startPostgres, tcpProxy } = require('./servers.js')
const { dataLostUnderAHolder, lockedTableFailsClosed, tableDroppedUnderAHolder } = require('./holders.js')
const { acquireWorkerId } = require('../lib/postgres.js')

function pool(server, port = server.port) {
  const { Pool } = require('pg')
  const client = new Pool({ host: server.host, port, user: server.user, database: server.database, max: 4 })
  client.on('error', () => {})
  return client
}

async function main() {
  const server = await serverFor(test, 'postgres', startPostgres)
  if (!server) return
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
    const clients = Array.from({ length: 3 }, () => pool(server))
    try {
      await lockedTableFailsClosed(tt, {
        clients,
        acquire: client => acquireWorkerId({ client, table, ttlMs: 1000, datacenterId: 1 }),
        lock: () => locker.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`),
        unlock: () => locker.query('ROLLBACK'),
        heldCount: async () => {
          const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE token IS NOT NULL`)
          return rows[0].n
        },
        message: /lock timeout|statement timeout/,
      })
    } finally {
      // The lock goes first: a pool whose connections still wait for it could not end.
      await locker.query('ROLLBACK').catch(() => {})
      await Promise.all(clients.map(c => c.end()))
      locker.release()
    }
  })
}

main()
