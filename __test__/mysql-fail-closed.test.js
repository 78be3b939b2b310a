'use strict'

// snowid/mysql when the lease's data is lost or locked under live holders, against a real MariaDB (started by the
// test): a table dropped and made again, a table dropped under its only holder, and a table locked (LOCK TABLES ...
// WRITE). docs/guarantees.md, "Fail closed", lists each case.

const test = require('node:test')

require('./helpers.js').isolateLeases()

const { serverFor, startMariadbDatabase } = require('./servers.js')
const { dataLostUnderAHolder, lockedTableFailsClosed, tableDroppedUnderAHolder } = require('./holders.js')
const { acquireWorkerId } = require('../lib/mysql.js')

const DATABASE = 'snowid'

async function main() {
  const started = await serverFor(test, 'mariadb', () => startMariadbDatabase(DATABASE))
  if (!started) return
  const { settings, admin } = started
  const mysql = require('mysql2')
  const mysqlPromise = require('mysql2/promise')
  const base = table => ({ store: 'mysql', client: 'mysql2', ...settings, table })

  // A TTL of 6 s: the old holder may issue for up to 4.8 s after the drop, longer than a newcomer takes to start and
  // make the table here (0.5 to 1.3 s), so that a newcomer that did not wait would overlap it.
  test('DROP TABLE under a live holder: a newcomer makes the table and waits one TTL, 0 duplicates', tt =>
    dataLostUnderAHolder(
      tt,
      base('dropped'),
      async () => {
        await admin.query('DROP TABLE dropped')
        return Date.now()
      },
      { ttlMs: 6000 },
    ))

  test('a table dropped under its only holder: ERR_SNOWID_STORE_TABLE_MISSING, then made again and held one TTL', tt =>
    tableDroppedUnderAHolder(tt, base('dropped_alone'), async () => {
      await admin.query('DROP TABLE dropped_alone')
      return Date.now()
    }))

  test('LOCK TABLES ... WRITE: ERR_SNOWID_STORE_TIMEOUT from the server, and nothing held by nobody', async tt => {
    const table = 'locked_slots'
    const pools = Array.from({ length: 3 }, () => mysql.createPool({ ...settings, connectionLimit: 2 }))
    try {
      const first = await acquireWorkerId({ client: pools[0], table, ttlMs: 300, datacenterId: 1 })
      await first.release()
      const locker = await mysqlPromise.createConnection(settings)
      try {
        await lockedTableFailsClosed(tt, {
          clients: pools,
          acquire: client => acquireWorkerId({ client, table, ttlMs: 1000, datacenterId: 1 }),
          lock: () => locker.query(`LOCK TABLES ${table} WRITE`),
          unlock: () => locker.query('UNLOCK TABLES'),
          heldCount: async () => {
            const [[row]] = await admin.query(`SELECT COUNT(*) AS n FROM ${table} WHERE token IS NOT NULL`)
            return Number(row.n)
          },
        })
      } finally {
        await locker.end()
      }
    } finally {
      await Promise.all(pools.map(p => new Promise(resolve => p.end(() => resolve()))))
    }
  })
}

main()
