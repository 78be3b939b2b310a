'use strict'

// Random sequences of configuration calls in two processes at once, as in call-order.test.js, with snowid/redis's
// configureWorkerId among them (it configures the default generator with the slot it leases from Redis): 0 duplicates
// in every id space (see call-order.js). It starts a Redis, so it is among scripts/test-files.js's SERVER_FILES.

const test = require('node:test')
const assert = require('node:assert/strict')

const { wasiSkip } = require('./helpers.js')
const { serverFor, startRedis } = require('./servers.js')
const { runRounds } = require('./call-order.js')

async function main() {
  const redis = await serverFor(test, 'redis', startRedis)
  if (!redis) return
  test(
    'random sequences of configuration calls and configureWorkerId in two processes at once: 0 duplicates',
    wasiSkip('the WASI build has no host lease'),
    async () => {
      assert.ok((await runRounds(8, { redisPort: redis.port })) > 0)
    },
  )
}

main()
