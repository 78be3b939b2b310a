'use strict'

// Slow tier (npm run test:slow, run by CI): 256 acquires at once on the 256 slots of a layout with 8 worker bits, with
// waitMs 0, through one etcd3 client: every one gets a slot, and the next is ERR_SNOWID_NO_FREE_WORKER_ID. A take that
// loses a compare-and-swap goes on over the other free slots it read (lib/slot-choice.js); before, each gave up after
// 5 lost races, and 245 of 256 failed. 256 takes at once in one process cost it about 14 s of CPU (etcd3's gRPC calls:
// each take reads the free slots, again after lost races); on two cores with three busy loops beside it, every take
// timed out at the default TTL's 10 s. The TTL is 60 s, which is a take's timeout too: 256 slots are more than one
// transaction can mark, so each is also held one TTL before use.

const test = require('node:test')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { acquireAtOnce, etcdWithClient } = require('../etcd-crowd.js')
const { acquireWorkerId } = require('../../lib/etcd.js')

async function main() {
  const started = await etcdWithClient(test)
  if (!started) return
  const { client } = started

  test('256 acquires at once on 256 slots all get distinct slots, with waitMs 0', async t => {
    // 8 worker bits leave a timestamp of 10 years only without the datacenter bits.
    const opts = {
      client,
      waitMs: 0,
      ttlMs: 60_000,
      keyPrefix: 'crowd8',
      snowflake: { datacenterBits: 0, workerBits: 8 },
    }
    await acquireAtOnce(t, acquireWorkerId, opts, 256)
  })
}

main()
