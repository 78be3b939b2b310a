'use strict'

// Slow tier (npm run test:slow, run by CI): snowid/etcd on a 3-member etcd cluster on loopback (Debian's
// etcd-server), through faults: the leader killed, a member lost for good, and the holder partitioned from every
// member (its client reaches them through TCP proxies of the test's own, which cut the links: no answers, no
// resets). Ids are counted by sorting: 0 duplicates.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { countDuplicates } = require('../helpers.js')
const { reportMissing, startEtcd, tcpProxy } = require('../servers.js')
const { holder } = require('../holders.js')
const snowid = require('../..')

const TTL = 3000

/** A 3-member cluster, stopped after `t`. */
async function cluster(t) {
  const etcd = await startEtcd(3)
  t.after(() => etcd.stop())
  return etcd
}

const lease = (ports, extra = {}) => ({
  store: 'etcd',
  client: 'etcd3',
  ports,
  mode: 'stream',
  ttlMs: TTL,
  waitMs: 20_000,
  ...extra,
})

/**
 * Three holders on slots of their own stream ids while `fault(etcd)` runs; afterwards every one issues again, and
 * their ids hold no duplicate.
 */
async function throughAFault(t, fault) {
  const etcd = await cluster(t)
  const ports = etcd.members.map(m => m.port)
  const holders = Array.from({ length: 3 }, () => holder(lease(ports, { datacenterId: 1 })))
  t.after(() => Promise.all(holders.map(h => h.stop())))
  await Promise.all(holders.map(h => h.waitFor(e => e.event === 'acquired', 30_000)))
  await sleep(1000)
  const faultAt = Date.now()
  const what = await fault(etcd)
  const doneAt = Date.now()
  await sleep(TTL + 2000)
  await Promise.all(holders.map(h => h.stop()))
  const layout = new snowid.Snowflake({ workerId: 0, lease: false })
  const { total, dups } = countDuplicates(holders.map(h => h.ids()))
  const events = h =>
    h.events
      .filter(e => ['lost', 'reacquired', 'renewFailed'].includes(e.event))
      .map(e => e.event)
      .filter((e, i, all) => e !== all[i - 1])
      .join(' ')
  t.diagnostic(
    `${what}; ${total} ids, ${dups} duplicates; events: ${holders.map(h => events(h) || 'none').join(' | ')}`,
  )
  for (const [i, h] of holders.entries()) {
    assert.ok(
      h.ids().some(id => layout.decode(id).timestamp > doneAt),
      `holder ${i} issued ids after the fault (${doneAt - faultAt} ms)`,
    )
  }
  assert.equal(dups, 0, `${dups} duplicate ids of ${total}`)
}

async function main() {
  const probe = await startEtcd(1)
  if (!probe) {
    reportMissing(test, 'etcd', "apt-get install etcd-server etcd-client (Debian's packages)")
    return
  }
  await probe.stop()

  test('the leader killed, then started again: the holders go on (or lose and take again), 0 duplicates', t =>
    throughAFault(t, async etcd => {
      const leader = etcd.leader()
      await leader.kill()
      const start = Date.now()
      while (!etcd.leader() && Date.now() - start < 30_000) await sleep(100)
      const elected = Date.now() - start
      await sleep(2000)
      await leader.start()
      return `leader ${leader.name} killed; another elected after ${elected} ms; ${leader.name} back 2 s later`
    }))

  test('a follower lost for good: the holders go on, 0 duplicates', t =>
    throughAFault(t, async etcd => {
      const leader = etcd.leader()
      const follower = etcd.members.find(m => m !== leader)
      await follower.kill()
      await sleep(TTL)
      return `follower ${follower.name} killed`
    }))

  test('the holder partitioned from every member: it stops by its deadline, the newcomer takes the slot, 0 duplicates', async t => {
    const etcd = await cluster(t)
    const proxies = []
    for (const m of etcd.members) proxies.push(await tcpProxy(m.port))
    t.after(() => Promise.all(proxies.map(p => p.close())))
    // One slot (workerBits 0), so the newcomer must take the holder's.
    const h = holder(
      lease(
        proxies.map(p => p.port),
        { workerBits: 0, datacenterId: 2 },
      ),
    )
    let n
    try {
      await h.waitFor(e => e.event === 'acquired', 30_000)
      await sleep(1000)
      const cutAt = Date.now()
      for (const p of proxies) p.cut()
      n = holder(
        lease(
          etcd.members.map(m => m.port),
          { workerBits: 0, datacenterId: 2 },
        ),
      )
      const acquired = await n.waitFor(e => e.event === 'acquired', 40_000)
      await sleep(1000)
      for (const p of proxies) p.heal()
      await sleep(TTL)
      await h.stop()
      await n.stop()
      const layout = new snowid.Snowflake({ workerBits: 0, workerId: 0, lease: false })
      const time = id => layout.decode(id).timestamp
      const { total, dups } = countDuplicates([h.ids(), n.ids()])
      const hLast = Math.max(...h.ids().map(time))
      const nFirst = Math.min(...n.ids().map(time))
      const lost = h.events.find(e => e.event === 'lost')
      t.diagnostic(
        `cut at 0 ms; H's last id at ${hLast - cutAt} ms, 'lost' at ${lost ? lost.at - cutAt : 'never'} ms; N took the slot at ${acquired.at - cutAt} ms, first id at ${nFirst - cutAt} ms; ${total} ids, ${dups} duplicates`,
      )
      assert.ok(nFirst > hLast, 'N began after H stopped')
      assert.ok(lost, "H reported the loss ('lost')")
      assert.equal(dups, 0, `${dups} duplicate ids of ${total}`)
    } finally {
      await h.stop()
      if (n) await n.stop()
    }
  })
}

main()
