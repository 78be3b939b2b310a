'use strict'

// Slow tier (npm run test:slow, run by CI): a Redis Cluster of 3 masters with a replica each loses the master of the
// shard that holds a holder's keys (SIGKILL), and its replica is promoted. The holder, through ioredis 6's and 5.0.0's
// Cluster and node-redis's createCluster, stops by its deadline, takes a slot on the promoted node and issues ids again
// within 2 TTLs of the promotion (its marks were written under the old master's replication id, so the slot is held one
// TTL first), with 0 duplicates. Each take and renewal is a pipeline of EVAL and WAIT: ioredis follows a pipeline's
// MOVED only when every command in it failed alike, and WAIT succeeds wherever it goes, so snowid follows it itself.
// ioredis 5.0.0 also sent EVAL to a random node (it found the keys only of 'eval'), so its first acquire failed.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { onPath, reportMissing, startRedis, startRedisCluster } = require('../servers.js')
const { holder, assertNoDuplicates } = require('../holders.js')
const snowid = require('../..')

const TTL_MS = 4000
// The holders' layout (workerBits 1), to read their ids' times.
const layout = new snowid.Snowflake({ workerBits: 1, workerId: 0, lease: false })
const timeOf = id => layout.decode(id).timestamp

const cli = (port, ...args) =>
  spawnSync('redis-cli', ['-p', String(port), ...args.map(String)], { encoding: 'utf8', timeout: 10_000 }).stdout ?? ''

/** The master (a node of `cluster.nodes`) that serves `key`'s hash slot, and its replica, as `node` sees the cluster. */
function shardOf(cluster, node, key) {
  const slot = Number(cli(node.port, 'CLUSTER', 'KEYSLOT', key).trim())
  const lines = cli(node.port, 'CLUSTER', 'NODES').trim().split('\n')
  // A line of CLUSTER NODES: id, address, flags (myself,master ...), its master's id, ..., the slot ranges from the 9th.
  const master = lines.find(l => {
    const f = l.split(' ')
    return (
      f[2].split(',').includes('master') &&
      !f[2].includes('fail') &&
      f.slice(8).some(range => {
        const [lo, hi = lo] = range.split('-').map(Number)
        return slot >= lo && slot <= hi
      })
    )
  })
  const replica = master && lines.find(l => l.split(' ')[3] === master.split(' ')[0])
  const byLine = line => {
    const port = line && /:(\d+)@/.exec(line)
    return port ? cluster.nodes.find(n => n.port === Number(port[1])) : undefined
  }
  return { master: byLine(master), replica: byLine(replica) }
}

async function main() {
  const probe = await startRedis()
  if (!probe || !onPath('redis-cli')) {
    await probe?.stop()
    reportMissing(test, 'redis-server and redis-cli', "apt-get install redis-server (Debian's package)")
    return
  }
  await probe.stop()

  for (const client of ['ioredis-cluster', 'ioredis-5-cluster', 'redis-cluster']) {
    test(`${client}: a holder whose shard's master is killed issues again within 2 TTLs of the promotion`, async t => {
      // A cluster of its own, whole at the start.
      const cluster = await startRedisCluster(3, { replicas: 1 })
      t.after(() => cluster.stop())
      const { ports } = cluster
      const keyPrefix = `failover-${client}`
      const key = `{${keyPrefix}}`
      const end = Date.now() + 20_000
      let shard = shardOf(cluster, cluster.nodes[0], key)
      while (!shard.replica) {
        if (Date.now() > end) throw new Error(`no replica of the master of ${key} after 20 s`)
        await sleep(100)
        shard = shardOf(cluster, cluster.nodes[0], key)
      }
      const settings = { store: 'redis', client, ports, mode: 'stream', ttlMs: TTL_MS, workerBits: 1 }
      const h = holder({ ...settings, options: { keyPrefix } })
      try {
        const acquired = await h.waitFor(e => e.event === 'acquired' || e.event === 'error', 30_000)
        assert.equal(acquired.event, 'acquired', `the first acquire: ${acquired.code} ${acquired.message}`)
        await h.waitFor(e => e.event === 'renewed', 30_000)
        await sleep(300)
        const killedAt = Date.now()
        process.kill(shard.master.pid, 'SIGKILL')
        // Promoted: the replica says it is a master.
        let promotedAt
        for (const until = Date.now() + 30_000; ; ) {
          if (/^master/.test(cli(shard.replica.port, 'ROLE').trim())) {
            promotedAt = Date.now()
            break
          }
          if (Date.now() > until) throw new Error('the replica was not promoted within 30 s')
          await sleep(20)
        }
        // Ids again, stamped after the promotion, within 2 TTLs of it (and a TTL of slack to see them arrive).
        const again = () => h.ids().find(id => timeOf(id) >= promotedAt)
        for (const until = promotedAt + 3 * TTL_MS + 10_000; !again() && Date.now() < until; ) await sleep(50)
        await sleep(300)
        await h.stop()
        const first = again()
        const failed = h.events.filter(e => e.event === 'renewFailed')
        const codes = [...new Set(failed.map(e => `${e.code}: ${e.message.slice(0, 120)}`))]
        const story = h.events
          .filter(e => e.event !== 'ids')
          .map(e => `${e.event}${e.at ? `@${e.at - promotedAt}` : ''}${e.message ? ` ${e.message.slice(0, 90)}` : ''}`)
        t.diagnostic(`events (ms from the promotion): ${story.join(' | ')}`)
        assert.ok(first, `no id after the promotion; renewFailed ${failed.length}: ${codes.slice(0, 3).join(' | ')}`)
        const after = timeOf(first) - promotedAt
        assert.ok(
          after <= 2 * TTL_MS,
          `ids again ${after} ms after the promotion; renewFailed ${failed.length}: ${codes.slice(0, 3).join(' | ')}`,
        )
        assertNoDuplicates(h.ids(), 'across the failover')
        t.diagnostic(
          `promoted ${promotedAt - killedAt} ms after the kill; ids again ${after} ms after the promotion; ${h.ids().length} ids, 0 duplicates; renewFailed ${failed.length} times`,
        )
      } finally {
        await h.stop()
      }
    })
  }
}

main()
