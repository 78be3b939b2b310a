'use strict'

// snowid/redis on a Redis Cluster of 3 masters (started by the test on free loopback ports), through ioredis's
// Cluster and node-redis's createCluster: every key of a take is passed in KEYS under the prefix's hash tag, so the
// client routes each script (and its WAIT) to the node that holds the tag's slot, whichever node that is.

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const { reportMissing, startRedisCluster } = require('./servers.js')
const { holder, assertNoDuplicates } = require('./holders.js')
const { acquireWorkerId } = require('../lib/redis.js')

// Prefixes whose hash tags land on each of the 3 masters' slot ranges (0-5460, 5461-10922, 10923-16383), as
// redis-cli --cluster create splits them.
const PREFIXES = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']

// The leases' TTL. A lease renews every third of it, and its key expires a TTL after the last renewal: a process left
// off the cores for two thirds of a TTL rightly loses its slot. CI's machine is busy (two cores, several suites side
// by side), so that margin is over a second.
const TTL_MS = 2000

async function connect(kind, ports) {
  if (kind === 'ioredis') {
    const { Cluster } = require('ioredis')
    const client = new Cluster(
      ports.map(port => ({ host: '127.0.0.1', port })),
      { clusterRetryStrategy: () => null },
    )
    client.on('error', () => {})
    await new Promise((resolve, reject) => {
      client.once('ready', resolve)
      client.once('end', () => reject(new Error('the ioredis Cluster ended before it was ready')))
    })
    return { client, slotOf: key => client.call('CLUSTER', 'KEYSLOT', key), close: () => client.disconnect() }
  }
  const { createCluster } = require('redis')
  const client = createCluster({ rootNodes: ports.map(port => ({ url: `redis://127.0.0.1:${port}` })) })
  client.on('error', () => {})
  await client.connect()
  return {
    client,
    slotOf: key => client.sendCommand(undefined, true, ['CLUSTER', 'KEYSLOT', key]),
    close: () => client.destroy(),
  }
}

async function main() {
  const cluster = await startRedisCluster(3)
  if (!cluster) {
    reportMissing(test, 'redis-server and redis-cli', "apt-get install redis-server (Debian's package)")
    return
  }
  test.after(() => cluster.stop())

  for (const kind of ['ioredis', 'redis']) {
    test(`with ${kind === 'redis' ? 'node-redis createCluster' : 'an ioredis Cluster'}`, async t => {
      const { client, slotOf, close } = await connect(kind, cluster.ports)
      t.after(() => close())

      await t.test(
        'every acquire succeeds, on whichever master holds its prefix, and leases distinct slots',
        async () => {
          // The prefixes at once, and each prefix's two takes at once, as a fresh slot is held a TTL before use. Each
          // prefix on a datacenter id of its own: the generators of one identity in a process share their state.
          const slots = await Promise.all(
            PREFIXES.map(async (prefix, i) => {
              const slot = Math.floor(Number(await slotOf(`{${kind}-${prefix}}`)) / 5461)
              const keyPrefix = `${kind}-${prefix}`
              const take = () =>
                acquireWorkerId({ client, keyPrefix, datacenterId: i, ttlMs: TTL_MS, snowflake: { workerBits: 1 } })
              const [a, b] = await Promise.all([take(), take()])
              assert.deepEqual([a.workerId, b.workerId].sort(), [0, 1])
              await assert.rejects(take(), { code: 'ERR_SNOWID_NO_FREE_WORKER_ID' })
              assert.notEqual(a.snowflake.nextId(), b.snowflake.nextId())
              await a.release()
              await b.release()
              return slot
            }),
          )
          assert.equal(new Set(slots).size, 3, 'the prefixes span every master')
        },
      )

      await t.test('renewals go to the node of the slot: the lease renews, and release frees the slot', async () => {
        const lease = await acquireWorkerId({ client, keyPrefix: `${kind}-renew`, ttlMs: TTL_MS })
        const renewed = await new Promise(resolve => lease.once('renewed', resolve))
        assert.ok(renewed.deadline > Date.now())
        await lease.release()
        const again = await acquireWorkerId({ client, keyPrefix: `${kind}-renew`, ttlMs: TTL_MS })
        assert.equal(again.workerId, lease.workerId, 'the slot released is free again, and is taken first')
        await again.release()
      })
    })
  }

  test('two holders on one slot through the cluster clients: the second takes it after the first, 0 duplicates', async t => {
    const settings = {
      store: 'redis',
      ports: cluster.ports,
      mode: 'stream',
      ttlMs: 600,
      workerBits: 0,
      datacenterId: 4,
    }
    const a = holder({ ...settings, client: 'ioredis-cluster', waitMs: 5000 })
    let b
    try {
      await a.waitFor(e => e.event === 'acquired', 30_000)
      b = holder({ ...settings, client: 'redis-cluster', waitMs: 20_000 })
      await new Promise(r => setTimeout(r, 300))
      await a.stop()
      await b.waitFor(e => e.event === 'acquired', 30_000)
      await new Promise(r => setTimeout(r, 300))
      await b.stop()
      assert.ok(a.ids().length > 0 && b.ids().length > 0)
      assertNoDuplicates([...a.ids(), ...b.ids()], 'between the two cluster clients')
      t.diagnostic(
        `ioredis Cluster: ${a.ids().length} ids, then node-redis createCluster: ${b.ids().length} ids; 0 duplicates`,
      )
    } finally {
      await a.stop()
      if (b) await b.stop()
    }
  })
}

main()
