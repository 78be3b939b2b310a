'use strict'

// Slow tier (npm run test:slow, run by CI): each store's lease with 40 processes across 2 datacenter ids taking slots
// at once (holders.js's manyAtOnce), once per store with one client, as the conformance suite runs
// (store-conformance.js): Redis with ioredis, PostgreSQL with pg, MariaDB with mysql2. Each store's other scenarios,
// and each other client's adapter smoke test, are in npm test.

const test = require('node:test')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { startMariadb, startPostgres, startRedis } = require('../servers.js')
const { manyAtOnce } = require('../holders.js')

const SCENARIO = '40 processes across 2 datacenter ids acquire at once: distinct slots, 0 duplicate ids'

/**
 * A server from `start`, stopped after test `t`; or, where it is not installed, nothing, with `t` skipped loudly
 * (failed when CI is set). Each test starts its own, so one server runs at a time.
 */
async function serverFor(t, start, what, install) {
  const server = await start()
  if (server) {
    t.after(() => server.stop())
    return server
  }
  const message = `${what} is not installed, so this test cannot run (install it with: ${install})`
  process.stderr.write(`\n*** SKIPPED: ${message} ***\n\n`)
  if (process.env.CI) throw new Error(message)
  t.skip(message)
}

test(`Redis with ioredis: ${SCENARIO}`, async t => {
  const server = await serverFor(t, startRedis, 'redis-server', "apt-get install redis-server (Debian's package)")
  if (server) await manyAtOnce(t, { store: 'redis', client: 'ioredis', port: server.port })
})

test(`PostgreSQL with pg: ${SCENARIO}`, async t => {
  const server = await serverFor(t, startPostgres, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
  if (!server) return
  const { host, port, user, database } = server
  await manyAtOnce(t, { store: 'postgres', client: 'pg', host, port, user, database })
})

test(`MariaDB with mysql2: ${SCENARIO}`, async t => {
  const server = await serverFor(t, startMariadb, 'MariaDB', "apt-get install mariadb-server (Debian's package)")
  if (!server) return
  const { host, port, user } = server
  const setup = await require('mysql2/promise').createConnection({ host, port, user })
  await setup.query('CREATE DATABASE snowid')
  await setup.end()
  await manyAtOnce(t, { store: 'mysql', client: 'mysql2', host, port, user, database: 'snowid' })
})
