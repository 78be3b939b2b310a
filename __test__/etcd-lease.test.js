'use strict'

// snowid/etcd against a real etcd (one member, started by the test on a free loopback port), through the etcd3 client.
// The scenarios every store must pass are __test__/holders.js's; a 3-member cluster that loses its leader, a member,
// and the holder's links runs in CI's slow tier (slow/etcd-cluster.test.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const fs = require('node:fs')

require('./helpers.js').isolateLeases()

const {
  releaseAfterAStepBack,
  endedClientExits,
  moreContendersThanSlots,
  stalledHolder,
  holdersThroughAnOutage,
  RECOVERY_MARGIN_MS,
  dataLostUnderAHolder,
} = require('./holders.js')
const { acquireWorkerId, configureWorkerId, EtcdLease } = require('../lib/etcd.js')
const { acquireAtOnce, etcdWithClient } = require('./etcd-crowd.js')
const { runNode } = require('./helpers.js')

async function main() {
  const started = await etcdWithClient(test)
  if (!started) return
  const { etcd, client } = started
  const { Etcd3 } = require('etcd3')
  const [member] = etcd.members
  const base = { store: 'etcd', client: 'etcd3', ports: [member.port] }

  test('a fresh datacenter: the first slot is held one TTL, issues ids, renews, and release lowers the mark', async () => {
    const started = Date.now()
    const lease = await acquireWorkerId({ client, datacenterId: 6, ttlMs: 1000, keyPrefix: 'unit' })
    const took = Date.now() - started
    assert.ok(lease instanceof EtcdLease)
    // A datacenter with no marks may be one whose data etcd lost (wiped, another cluster): its slots record no
    // incarnation, so the first use of each waits one TTL.
    assert.ok(took >= 1000, `held one TTL before use (${took} ms)`)
    assert.deepEqual([lease.datacenterId, lease.workerId], [6, 0])
    const d = lease.snowflake.decode(lease.snowflake.nextId())
    assert.deepEqual([d.datacenterId, d.workerId], [6, 0])
    const marks = JSON.parse(await client.get('unit/6/0/marks').string())
    assert.ok(marks.until >= lease.deadline, 'the mark covers the deadline')
    const cluster = (await client.get('unit/incarnation').exec()).header.cluster_id
    assert.equal(
      marks.incarnation,
      `${cluster}:${await client.get('unit/incarnation').string()}`,
      'with the incarnation',
    )
    const held = await client.get('unit/6/0/lease').exec()
    assert.notEqual(String(held.kvs[0].lease), '0', 'the lease key is bound to an etcd lease')
    const last = lease.snowflake.nextId()
    await lease.release()
    assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
    assert.equal(await client.get('unit/6/0/lease').string(), null)
    assert.equal(JSON.parse(await client.get('unit/6/0/marks').string()).until, lease.snowflake.timestampOf(last))
    const t0 = Date.now()
    const again = await acquireWorkerId({ client, datacenterId: 6, ttlMs: 10_000, keyPrefix: 'unit' })
    assert.ok(
      Date.now() - t0 < 10_000,
      `a slot given back in the same incarnation needs no wait (${Date.now() - t0} ms)`,
    )
    assert.equal(again.workerId, 0)
    assert.ok(again.snowflake.nextId() > last)
    await again.release()
  })

  test('renewals extend the deadline; a slot whose marks were deleted by hand is held one TTL', async () => {
    const opts = { client, datacenterId: 5, ttlMs: 1000, keyPrefix: 'hand', snowflake: { workerBits: 0 } }
    const lease = await acquireWorkerId(opts)
    const [{ deadline }] = await once(lease, 'renewed')
    assert.equal(deadline, lease.deadline)
    await lease.release()
    await client.delete().key('hand/5/0/marks')
    const started = Date.now()
    const again = await acquireWorkerId(opts)
    assert.ok(Date.now() - started >= 1000, `held ${Date.now() - started} ms before use`)
    await again.release()
  })

  test('a marks key with garbage in it is ERR_SNOWID_LEASE_CORRUPT, and is left as found', async () => {
    const opts = { client, datacenterId: 7, ttlMs: 1000, keyPrefix: 'bad', snowflake: { workerBits: 0 } }
    await (await acquireWorkerId(opts)).release()
    await client.put('bad/7/0/marks').value('garbage')
    await assert.rejects(acquireWorkerId(opts), err => {
      assert.equal(err.code, 'ERR_SNOWID_LEASE_CORRUPT', err.message)
      assert.match(err.message, /bad\/7\/0\/marks/)
      return true
    })
    assert.equal(await client.get('bad/7/0/marks').string(), 'garbage')
    assert.equal(await client.get('bad/7/0/lease').string(), null, 'the slot was given back')
  })

  // Every acquire at once, as a fleet starting together would, with waitMs 0: every one gets a slot while one is free,
  // and ERR_SNOWID_NO_FREE_WORKER_ID comes only once every slot is held. (256 on 256 slots: slow/etcd-contention.test.js.)
  test('32 acquires at once on the default layout all get distinct slots, with waitMs 0', async t => {
    const opts = { client, ttlMs: 3000, waitMs: 0, keyPrefix: 'crowd5' }
    await acquireAtOnce(t, acquireWorkerId, opts, 32)
  })

  test('more contenders than slots: the extras get ERR_SNOWID_NO_FREE_WORKER_ID after waitMs', tt =>
    moreContendersThanSlots(tt, base))

  test('a holder stopped past its TTL throws ERR_SNOWID_LEASE_LOST on resuming, with 0 duplicates', tt =>
    // etcd leases last whole seconds, at least 2 (its minimum): the newcomer takes the slot once it expires.
    stalledHolder(tt, base))

  test('a lost lease whose client is then closed stops taking slots, and its process exits', tt =>
    endedClientExits(tt, base))

  test('etcd killed and started again mid-run: holders stop, recover, and make 0 duplicates', tt =>
    holdersThroughAnOutage(tt, base, async () => {
      await member.kill()
      await new Promise(r => setTimeout(r, 1200))
      const startedAt = Date.now()
      await member.start()
      return startedAt
    }))

  test('etcd wiped and started again at the same address under a live holder: a newcomer waits one TTL, 0 duplicates', tt =>
    dataLostUnderAHolder(
      tt,
      { ...base, options: { keyPrefix: 'wiped' } },
      async () => {
        // The same flags, so the same cluster id: only the incarnation key tells the new data from the old.
        await member.kill()
        fs.rmSync(member.dataDir, { recursive: true, force: true })
        await member.start()
        return Date.now()
      },
      // A TTL of 6 s: the old holder may issue for seconds after the wipe, longer than a newcomer takes to start.
      { ttlMs: 6000 },
    ))

  test('etcd down for 2 TTLs, then back with its data: holders issue again soon after its first answer (1 s is the goal)', tt =>
    // With the client settings docs/across-hosts.md gives: etcd3's default circuit breaker holds every call for 5 s
    // after 3 failures, and gRPC backs off its reconnections from 1 s up. The time counts from etcd's first answer
    // (a member started again elects itself leader first).
    holdersThroughAnOutage(
      tt,
      { ...base, clientSettings: 'quick' },
      async () => {
        await member.kill()
        await new Promise(r => setTimeout(r, 1600))
        await member.start()
        while (!etcd.leader()) await new Promise(r => setTimeout(r, 20))
        return Date.now()
      },
      { withinMs: RECOVERY_MARGIN_MS },
    ))

  test('a holder released after a 2 s clock step back: the next on the host starts past its every id, 0 duplicates', tt =>
    releaseAfterAStepBack(tt, base))

  test('etcd unreachable at acquire is ERR_SNOWID_ETCD_UNAVAILABLE; bad options are coded errors', async () => {
    const down = new Etcd3({ hosts: 'http://127.0.0.1:9', dialTimeout: 500 })
    try {
      await assert.rejects(acquireWorkerId({ client: down, ttlMs: 1000 }), err => {
        assert.equal(err.code, 'ERR_SNOWID_ETCD_UNAVAILABLE', err.message)
        return true
      })
    } finally {
      down.close()
    }
    for (const client of [null, {}, { get: () => {} }])
      await assert.rejects(acquireWorkerId({ client }), { code: 'ERR_SNOWID_INVALID_ARGUMENT' })
    await assert.rejects(acquireWorkerId({ client, keyPrefix: '' }), { code: 'ERR_SNOWID_INVALID_ARGUMENT' })
    await assert.rejects(acquireWorkerId({ client, table: 'x' }), { code: 'ERR_SNOWID_INVALID_ARGUMENT' })
  })

  test('configureWorkerId gives the default generator the leased slot', () => {
    const code = `
const { Etcd3 } = require('etcd3')
const { configureWorkerId } = require('./lib/etcd.js')
const snowid = require('.')
const client = new Etcd3({ hosts: ${JSON.stringify(etcd.endpoints())} })
configureWorkerId({ client, datacenterId: 3, ttlMs: 1000, keyPrefix: 'configured' }).then(async lease => {
  const d = snowid.decode(snowid.nextId())
  console.log(JSON.stringify({ lease: [lease.datacenterId, lease.workerId], id: [d.datacenterId, d.workerId] }))
  await lease.release()
  client.close()
})`
    const r = runNode(code)
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.deepEqual(out.id, out.lease)
    assert.equal(typeof configureWorkerId, 'function')
  })
}

main()
