'use strict'

// Slow tier (npm run test:slow, run by CI): snowid/redis on a Redis Cluster of 3 masters with a replica each, through
// ioredis's Cluster and node-redis's createCluster. A renewal waits for the replica of the master that holds the
// prefix's hash tag (WAIT, sent to that node after the script): with that replica stopped (SIGSTOP), the renewals
// are refused as not replicated and the lease is lost at its deadline; once it runs again, the lease takes a slot
// again. A WAIT sent to another node would be answered by replicas that have nothing to confirm, and the lease would
// go on.

const test = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const { spawnSync } = require('node:child_process')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { reportMissing, startRedisCluster } = require('../servers.js')
const { acquireWorkerId } = require('../../lib/redis.js')

const cli = (port, ...args) =>
  spawnSync('redis-cli', ['-p', String(port), ...args.map(String)], { encoding: 'utf8', timeout: 10_000 }).stdout

async function connect(kind, ports) {
  if (kind === 'ioredis') {
    const { Cluster } = require('ioredis')
    const client = new Cluster(
      ports.map(port => ({ host: '127.0.0.1', port })),
      { clusterRetryStrategy: () => 100 },
    )
    client.on('error', () => {})
    await new Promise(resolve => client.once('ready', resolve))
    return { client, close: () => client.disconnect() }
  }
  const { createCluster } = require('redis')
  const client = createCluster({ rootNodes: ports.map(port => ({ url: `redis://127.0.0.1:${port}` })) })
  client.on('error', () => {})
  await client.connect()
  return { client, close: () => client.destroy() }
}

/**
 * The node (of `cluster.nodes`) that replicates the master holding `key`'s hash slot, once the first node's view of
 * the cluster (gossip, just after it was made) names it; waits up to 20 s.
 */
async function replicaOf(cluster, key) {
  const end = Date.now() + 20_000
  for (;;) {
    const node = findReplica(cluster, key)
    if (node) return node
    if (Date.now() > end) throw new Error(`no replica of the master of ${key} in CLUSTER NODES after 20 s`)
    await new Promise(r => setTimeout(r, 100))
  }
}

function findReplica(cluster, key) {
  const slot = Number(cli(cluster.ports[0], 'CLUSTER', 'KEYSLOT', key).trim())
  const lines = cli(cluster.ports[0], 'CLUSTER', 'NODES').trim().split('\n')
  // A line of CLUSTER NODES: id, address, flags (myself,master ...), its master's id, ..., the slot ranges from the 9th.
  const master = lines.find(
    l =>
      l.split(' ')[2].split(',').includes('master') &&
      l
        .split(' ')
        .slice(8)
        .some(range => {
          const [lo, hi = lo] = range.split('-').map(Number)
          return slot >= lo && slot <= hi
        }),
  )
  const replica = master && lines.find(l => l.split(' ')[3] === master.split(' ')[0])
  const port = replica && /:(\d+)@/.exec(replica)
  return port ? cluster.nodes.find(n => n.port === Number(port[1])) : undefined
}

async function main() {
  const cluster = await startRedisCluster(3, { replicas: 1 })
  if (!cluster) {
    reportMissing(test, 'redis-server and redis-cli', "apt-get install redis-server (Debian's package)")
    return
  }
  test.after(() => cluster.stop())

  for (const kind of ['ioredis', 'redis']) {
    test(`with ${kind === 'redis' ? 'node-redis createCluster' : 'an ioredis Cluster'}: renewals wait for the replica of their own shard`, async t => {
      const { client, close } = await connect(kind, cluster.ports)
      t.after(() => close())
      const keyPrefix = `replicated-${kind}`
      const replica = await replicaOf(cluster, `{${keyPrefix}}`)
      const lease = await acquireWorkerId({ client, keyPrefix, ttlMs: 3000, snowflake: { workerBits: 1 } })
      const events = []
      for (const name of ['renewed', 'renewFailed', 'lost', 'reacquired'])
        lease.on(name, x => events.push({ name, code: x && x.code, at: Date.now() }))
      try {
        await once(lease, 'renewed')
        const stoppedAt = Date.now()
        process.kill(replica.pid, 'SIGSTOP')
        let lost
        try {
          ;[lost] = await once(lease, 'lost')
        } finally {
          process.kill(replica.pid, 'SIGCONT')
        }
        const refused = events.filter(e => e.name === 'renewFailed').map(e => e.code)
        assert.ok(refused.length > 0 && refused.every(c => c === 'ERR_SNOWID_STORE_NOT_REPLICATED'), refused.join())
        assert.match(lost.message, /expected 1 Redis replica to acknowledge/)
        await once(lease, 'reacquired')
        t.diagnostic(
          `replica of the shard stopped; ${refused.length} renewals refused as not replicated, 'lost' after ${events.find(e => e.name === 'lost').at - stoppedAt} ms; taken again ${events.find(e => e.name === 'reacquired').at - stoppedAt} ms after the stop`,
        )
        assert.equal(typeof lease.snowflake.nextId(), 'bigint')
      } finally {
        await lease.release()
      }
    })
  }
}

main()
