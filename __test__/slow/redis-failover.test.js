'use strict'

// Slow tier (npm run test:slow, run by CI): snowid/redis through a failover, on real redis-server and Redis Sentinel
// processes on loopback. A replica reaches its master through a TCP proxy of the test's own, which cuts the link
// (a partition: no answers, no resets) and heals it.
//
// - Split brain: the master is cut off from its replica and the three sentinels, which promote the replica; a holder
//   H still reaches the old master directly, and a newcomer N, through the sentinels, takes H's slot (the only one)
//   on the new master. After the heal the sentinels demote the old master.
// - Failover with replication lag: the replica stops receiving writes for longer than a TTL (so H's lease key has
//   expired on it), the master is killed, and the replica is promoted (REPLICAOF NO ONE, as Sentinel does). H reached
//   the master through a proxy, which now answers nothing (its client still on the dead master: the longest overlap,
//   until H's deadline); N takes H's slot on the new master. Once with the default (renewals wait for the replica,
//   WAIT), once with `replicas: 0`, where only the replication id of the slot's marks protects it.
//
// Every holder's ids are counted by sorting: 0 duplicates.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { onPath, reportMissing, startRedis, startSentinel, tcpProxy } = require('../servers.js')
const { holder, tally, until } = require('../holders.js')
const snowid = require('../..')

const NAME = 'snowid'
// One slot (workerBits 0), so the newcomer must take the holder's. ttlMs 3000: renewals every second.
const LEASE = { store: 'redis', mode: 'stream', ttlMs: 3000, workerBits: 0, datacenterId: 7 }

const cli = (port, ...args) => {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args.map(String)], { encoding: 'utf8', timeout: 10_000 })
  return r.stdout.trim()
}
const info = (port, field) => new RegExp(`^${field}:(.*)$`, 'm').exec(cli(port, 'INFO', 'replication'))?.[1]?.trim()

/** A master, and a replica that reaches it through the proxy `link`, fully synced; stopped after `t`. */
async function masterAndReplica(t) {
  const fast = ['--repl-diskless-sync-delay', '0', '--repl-timeout', '60']
  const master = await startRedis({ args: fast })
  t.after(() => master.stop())
  const link = await tcpProxy(master.port)
  t.after(() => link.close())
  const replica = await startRedis({ args: [...fast, '--replicaof', '127.0.0.1', link.port] })
  t.after(() => replica.stop())
  await until(() => /state=online/.test(info(master.port, 'slave0') ?? ''), 30_000, 'the replica in sync')
  return { master, link, replica }
}

// The holders' layout (workerBits 0), to read the times of their ids.
const LAYOUT = new snowid.Snowflake({ workerBits: 0, workerId: 0, lease: false })

async function main() {
  if (!onPath('redis-server') || !onPath('redis-cli')) {
    reportMissing(test, 'redis-server and redis-cli', "apt-get install redis-server (Debian's package)")
    return
  }

  test('Sentinel split brain: the old master confirms no renewal, the newcomer waits a TTL, 0 duplicates', async t => {
    const { master, link, replica } = await masterAndReplica(t)
    const sentinels = []
    for (let i = 0; i < 3; i++) sentinels.push(await startSentinel(link.port, { name: NAME, quorum: 2 }))
    t.after(() => Promise.all(sentinels.map(s => s.stop())))
    // Each sentinel knows the replica and the other two before the fault.
    await until(
      () =>
        sentinels.every(
          s =>
            /num-slaves\n1\b/.test(cli(s.port, 'SENTINEL', 'MASTER', NAME)) &&
            /num-other-sentinels\n2\b/.test(cli(s.port, 'SENTINEL', 'MASTER', NAME)),
        ),
      30_000,
      'the sentinels ready',
    )
    const h = holder({ ...LEASE, client: 'ioredis', port: master.port })
    let n
    try {
      await h.waitFor(e => e.event === 'acquired', 30_000)
      await sleep(1000)
      const cutAt = Date.now()
      link.cut()
      await until(
        () => cli(sentinels[0].port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME).endsWith(String(replica.port)),
        30_000,
        'the replica promoted',
      )
      const promotedAt = Date.now()
      n = holder({ ...LEASE, client: 'ioredis', sentinels: sentinels.map(s => s.port), name: NAME, waitMs: 30_000 })
      const acquired = await n.waitFor(e => e.event === 'acquired', 40_000)
      // The partition lasts 12 s in all, as long as H's old master takes renewals.
      await sleep(Math.max(0, cutAt + 12_000 - Date.now()))
      link.heal()
      const healedAt = Date.now()
      await until(() => info(master.port, 'role') === 'slave', 40_000, 'the old master demoted')
      const demotedAt = Date.now()
      await sleep(1000)
      await h.stop()
      await n.stop()
      const { total, dups, each } = tally([h, n], LAYOUT, cutAt)
      const lost = h.events.find(e => e.event === 'lost')
      t.diagnostic(
        `promoted ${promotedAt - cutAt} ms after the cut; N used the slot ${acquired.at - cutAt} ms after it; healed at ${healedAt - cutAt} ms, old master demoted ${demotedAt - healedAt} ms later`,
      )
      t.diagnostic(`H: ${each[0]}; 'lost' ${lost ? `${lost.at - cutAt} ms after the cut` : 'never'}; N: ${each[1]}`)
      t.diagnostic(`${dups} duplicate ids of ${total}`)
      assert.ok(n.ids().length > 0, 'N issued ids')
      assert.equal(dups, 0, `${dups} duplicate ids of ${total}`)
    } finally {
      await h.stop()
      if (n) await n.stop()
    }
  })

  for (const variant of ['default', 'replicas: 0']) {
    test(`failover with replication lag (${variant}): the promoted replica's stale slot waits a TTL, 0 duplicates`, async t => {
      const { master, link, replica } = await masterAndReplica(t)
      const front = await tcpProxy(master.port)
      t.after(() => front.close())
      const options = variant === 'default' ? {} : { replicas: 0 }
      const h = holder({ ...LEASE, client: 'ioredis', port: front.port, options })
      let n
      try {
        await h.waitFor(e => e.event === 'acquired', 30_000)
        await sleep(1000)
        // The replica falls behind: it receives none of the writes from here on, for longer than a TTL, so that H's
        // lease key has expired on it by the time it is promoted.
        const cutAt = Date.now()
        link.cut()
        await sleep(LEASE.ttlMs + 1000)
        front.cut()
        await master.stop()
        cli(replica.port, 'REPLICAOF', 'NO', 'ONE')
        const promotedAt = Date.now()
        n = holder({ ...LEASE, client: 'ioredis', port: replica.port, waitMs: 15_000, options })
        const acquired = await n.waitFor(e => e.event === 'acquired', 40_000)
        await sleep(3000)
        await h.stop()
        await n.stop()
        const { total, dups, each } = tally([h, n], LAYOUT, cutAt)
        const lost = h.events.find(e => e.event === 'lost')
        t.diagnostic(
          `replica cut off at 0 ms, promoted at ${promotedAt - cutAt} ms; N used the slot at ${acquired.at - cutAt} ms`,
        )
        t.diagnostic(`H: ${each[0]}; 'lost' ${lost ? `at ${lost.at - cutAt} ms` : 'never'}; N: ${each[1]}`)
        t.diagnostic(`${dups} duplicate ids of ${total}`)
        assert.ok(n.ids().length > 0, 'N issued ids')
        assert.equal(dups, 0, `${dups} duplicate ids of ${total}`)
      } finally {
        await h.stop()
        if (n) await n.stop()
      }
    })
  }
}

main()
