'use strict'

// The soak of __test__/call-order.test.js's property test: many rounds of random sequences of configuration calls
// (config(), configure(), new Snowflake(), ids, and snowid/redis's configureWorkerId) in two processes at once, 0
// duplicates in every id space (see ../call-order.js). SNOWID_CALL_ORDER_SEED=<seed> reruns from a seed.

const test = require('node:test')
const assert = require('node:assert/strict')

const { wasiSkip } = require('../helpers.js')
const { serverFor, startRedis } = require('../servers.js')
const { runRounds } = require('../call-order.js')

const noLease = wasiSkip('the WASI build has no host lease')

test('40 rounds of random configuration calls in two processes at once: 0 duplicates', noLease, async () => {
  assert.ok((await runRounds(40)) > 0)
})

async function main() {
  const redis = await serverFor(test, 'redis', startRedis)
  if (!redis) return
  test('40 rounds with configureWorkerId among the calls: 0 duplicates', noLease, async () => {
    assert.ok((await runRounds(40, { redisPort: redis.port })) > 0)
  })
}

main()
