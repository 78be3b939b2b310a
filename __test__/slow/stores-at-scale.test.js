'use strict'

// Slow tier (npm run test:slow, run by CI): each store's lease with 40 processes across 2 datacenter ids taking slots
// at once (holders.js's manyAtOnce), with every client: Redis with ioredis 6 and 5 and node-redis 6 and 4, PostgreSQL
// with pg and postgres.js, MariaDB with mysql2. Each store's other scenarios are in npm test.

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

for (const kind of ['ioredis', 'redis', 'ioredis-5', 'redis-4']) {
  test(`Redis with ${kind}: ${SCENARIO}`, async t => {
    const server = await serverFor(t, startRedis, 'redis-server', "apt-get install redis-server (Debian's package)")
    if (server) await manyAtOnce(t, { store: 'redis', client: kind, port: server.port })
  })
}

test(`PostgreSQL: ${SCENARIO}`, async t => {
  const server = await serverFor(t, startPostgres, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
  if (!server) return
  const { host, port, user, database } = server
  for (const kind of ['pg', 'postgres'])
    await t.test(`with ${kind}`, tt => manyAtOnce(tt, { store: 'postgres', client: kind, host, port, user, database }))
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
