'use strict'

// The JS suite's files (`__test__/*.test.*`, what `npm run test:js` runs), for the scripts that run it elsewhere: on
// the other Node lines, on the WASI build, under Wine.

const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')

/** The files whose tests start a database server (PostgreSQL, Redis, MariaDB or etcd, through __test__/servers.js). */
const SERVER_FILES = [
  'backfill.test.js',
  'call-order-stores.test.js',
  'diagnostics.test.js',
  'etcd-lease.test.js',
  'mariadb.test.js',
  'mysql-fail-closed.test.js',
  'mysql-lease.test.js',
  'postgres-fail-closed.test.js',
  'postgres-lease.test.js',
  'postgres.test.js',
  'queues.test.js',
  'realm-stores.test.js',
  'redis-cluster.test.js',
  'redis-incarnation.test.js',
  'redis.test.js',
  'sql-generator.test.js',
  'sql-mysql.test.js',
  'sql.test.js',
  'store-holders.test.js',
]

/**
 * The files that take longest (15 s or more each, six files at a time on two quiet cores, `npm run test:js`), longest
 * first: `npm run test:js` starts them first, so that none of them is what the run waits for at its end. A name here
 * that is no test file fails the run.
 */
const LONGEST_FILES = [
  'etcd-lease.test.js',
  'redis.test.js',
  'postgres-lease.test.js',
  'postgres-fail-closed.test.js',
  'store-lease.test.js',
  'mysql-lease.test.js',
  'store-holders.test.js',
  'mysql-fail-closed.test.js',
  'lease-takeover.test.js',
  'host-lease.test.js',
  'sql-mysql.test.js',
  'lease-space.test.js',
  'env.test.js',
  'consumer-types.test.js',
  'redis-cluster.test.js',
]

/** The suite's file names, sorted; without SERVER_FILES when `servers` is false. */
function testFiles({ servers = true } = {}) {
  return fs
    .readdirSync(path.join(ROOT, '__test__'))
    .filter(f => /\.test\.[cm]?[jt]s$/.test(f) && (servers || !SERVER_FILES.includes(f)))
    .sort()
}

module.exports = { LONGEST_FILES, SERVER_FILES, testFiles }
