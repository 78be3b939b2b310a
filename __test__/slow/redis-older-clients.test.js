'use strict'

// Slow tier (npm run test:slow, run by CI): snowid/redis's scenarios with the lowest majors the peer ranges declare,
// ioredis 5 and node-redis 4 (installed under aliases). npm test runs them with the newest majors (redis.test.js).

const test = require('node:test')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { reportMissing, startRedis } = require('../servers.js')
const { withClient } = require('../redis-scenarios.js')

async function main() {
  const probe = await startRedis()
  if (!probe) {
    reportMissing(test, 'redis-server', "apt-get install redis-server (Debian's package)")
    return
  }
  await probe.stop()
  for (const kind of ['ioredis-5', 'redis-4']) test(`with ${kind}`, t => withClient(t, kind))
}

main()
