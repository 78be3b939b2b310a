'use strict'

// snowid/etcd against a real etcd (one member, started by the test on a free loopback port), through the etcd3 client.
// The conformance suite every store runs is store-conformance.js's; a 3-member cluster that loses its leader, a member,
// and the holder's links runs in CI's slow tier (slow/etcd-cluster.test.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const fs = require('node:fs')

require('./helpers.js').isolateLeases()

const { holdersThroughAnOutage, RECOVERY_MARGIN_MS, dataLostUnderAHolder } = require('./holders.js')
const { storeConformance } = require('./store-conformance.js')
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

  storeConformance(test, {
    name: 'etcd',
    base,
    acquire: (client, options) => acquireWorkerId({ client, ...options }),
    Lease: EtcdLease,
    client,
    at: keyPrefix => ({ keyPrefix }),
    slot: async (prefix, datacenterId, workerId) => ({
      held: (await client.get(`${prefix}/${datacenterId}/${workerId}/lease`).string()) !== null,
      mark: JSON.parse(await client.get(`${prefix}/${datacenterId}/${workerId}/marks`).string()).until,
    }),
    // A datacenter with no marks may be one whose data etcd lost (wiped, another cluster): its slots record no
    // incarnation, so the first use of each waits one TTL; the mark then records it.
    fresh: async (prefix, lease) => {
      const marks = JSON.parse(await client.get(`${prefix}/6/0/marks`).string())
      const cluster = (await client.get(`${prefix}/incarnation`).exec()).header.cluster_id
      assert.equal(
        marks.incarnation,
        `${cluster}:${await client.get(`${prefix}/incarnation`).string()}`,
        'with the incarnation',
      )
      const held = await client.get(`${prefix}/6/0/lease`).exec()
      assert.notEqual(String(held.kvs[0].lease), '0', 'the lease key is bound to an etcd lease')
      assert.equal(lease.workerId, 0)
    },
  })

  test('renewals extend the deadline; a slot whose marks were deleted by hand is held one TTL', async () => {
    const opts = { client, datacenterId: 5, ttlMs: 3000, keyPrefix: 'hand', snowflake: { workerBits: 0 } }
    const lease = await acquireWorkerId(opts)
    const [{ deadline }] = await once(lease, 'renewed')
    assert.equal(deadline, lease.deadline)
    await lease.release()
    await client.delete().key('hand/5/0/marks')
    const started = Date.now()
    const again = await acquireWorkerId(opts)
    assert.ok(Date.now() - started >= 3000, `held ${Date.now() - started} ms before use`)
    await again.release()
  })

  test('a marks key with garbage in it is ERR_SNOWID_LEASE_CORRUPT, and is left as found', async () => {
    const opts = { client, datacenterId: 7, ttlMs: 3000, keyPrefix: 'bad', snowflake: { workerBits: 0 } }
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
    // A fresh datacenter: every slot is held one TTL before use, renewed meanwhile. 12 s leaves each take 12 s and
    // each renewal 4 s: with ten busy loops on two cores, 6 s failed 1 run in 3 (takes timed out).
    const opts = { client, ttlMs: 12_000, waitMs: 0, keyPrefix: 'crowd5' }
    await acquireAtOnce(t, acquireWorkerId, opts, 32)
  })

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
        await new Promise(r => setTimeout(r, 2 * 2000))
        await member.start()
        while (!etcd.leader()) await new Promise(r => setTimeout(r, 20))
        return Date.now()
      },
      // A TTL of 2 s: the holders' first slots are held one TTL before use, renewed meanwhile, on a busy machine.
      { withinMs: RECOVERY_MARGIN_MS, settings: { ttlMs: 2000 } },
    ))

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
configureWorkerId({ client, datacenterId: 3, ttlMs: 3000, keyPrefix: 'configured' }).then(async lease => {
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
