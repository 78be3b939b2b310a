'use strict'

// Slow tier (npm run test:slow, run by CI): what depends on the client library (redis-scenarios.js's clientScenarios:
// its reconnection, its end) with the lowest majors the peer ranges declare, ioredis 5 and node-redis 4 (installed
// under aliases). npm test runs it with the newest majors, and every client's adapter smoke test (redis.test.js).

const test = require('node:test')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { serverFor, startRedis } = require('../servers.js')
const { clientScenarios } = require('../redis-scenarios.js')

async function main() {
  const redis = await serverFor(test, 'redis', startRedis)
  if (!redis) return
  for (const kind of ['ioredis-5', 'redis-4'])
    test(`with ${kind}: what depends on the client library`, t => clientScenarios(t, kind, redis.port))
}

main()
