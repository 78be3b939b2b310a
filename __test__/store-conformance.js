'use strict'

// The lease's conformance suite: what every store (Redis, PostgreSQL, MySQL, etcd) must do, run once per store with
// one client by that store's test file (redis.test.js, postgres-lease.test.js, mysql-lease.test.js,
// etcd-lease.test.js); and the short smoke test that each other client's adapter runs instead of every scenario.
// The scenarios with processes are holders.js's.
//
// A store is described by:
//   name       'Redis', 'PostgreSQL', 'MySQL' or 'etcd', for the test names
//   base       the store, the client and the server of holders.js's holder processes
//   acquire    (client, options) => the store module's acquireWorkerId({ client, ...options })
//   Lease      the store module's lease class, which acquire's leases are
//   client     the client the suite's in-process leases use
//   at(name)   the options that put a lease's slots in a namespace of their own ({ keyPrefix } or { table })
//   slot(name, datacenterId, workerId)   resolves to { held, mark }: whether the slot is leased, and its mark (Unix ms)
//   fresh(name, lease)   optional: the store's own checks of a namespace's first lease
//   stepBack   optional: holder settings added for releaseAfterAStepBack

const assert = require('node:assert/strict')
const { once } = require('node:events')

const { endedClientExits, moreContendersThanSlots, releaseAfterAStepBack, stalledHolder } = require('./holders.js')

/** A fresh slot's lease, start to end, in this process: held one TTL, ids under its slot, renewed, released. */
async function lifecycle(store) {
  const ns = 'conform'
  const started = Date.now()
  // ttlMs 3000: a renewal may take 1 s, as on a machine whose two cores are busy with other work (CI's lanes).
  const lease = await store.acquire(store.client, { datacenterId: 6, ttlMs: 3000, ...store.at(ns) })
  const waited = Date.now() - started
  // A slot with no history may be one whose history the store lost: it is held one TTL before use.
  assert.ok(waited >= 3000, `a slot with no history is held one TTL before use (waited ${waited} ms)`)
  assert.ok(lease instanceof store.Lease, `a ${store.Lease.name}`)
  assert.deepEqual([lease.datacenterId, lease.workerId], [6, 0])
  const d = lease.snowflake.decode(lease.snowflake.nextId())
  assert.deepEqual([d.datacenterId, d.workerId], [6, 0])
  if (store.fresh) await store.fresh(ns, lease)
  const [renewed] = await once(lease, 'renewed')
  assert.ok(renewed.deadline > Date.now())
  assert.equal(renewed.deadline, lease.deadline)
  const held = await store.slot(ns, 6, 0)
  assert.ok(held.held, 'the slot is leased')
  // The renewal's deadline, not lease.deadline read now: a later renewal may have moved that while the read was out.
  assert.ok(held.mark >= renewed.deadline, 'the mark covers the deadline')
  const last = lease.snowflake.nextId()
  await lease.release()
  assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
  const after = await store.slot(ns, 6, 0)
  assert.equal(after.held, false, 'release frees the slot')
  assert.equal(after.mark, lease.snowflake.timestampOf(last), 'release lowers the mark to the last id')
  // The next holder finds the mark, in the same incarnation: it starts at once, past every id the first one made.
  const t0 = Date.now()
  const again = await store.acquire(store.client, { datacenterId: 6, ttlMs: 10_000, ...store.at(ns) })
  assert.ok(Date.now() - t0 < 10_000, `started past the mark without a TTL's wait (${Date.now() - t0} ms)`)
  assert.equal(again.workerId, 0)
  assert.ok(again.snowflake.nextId() > last)
  await again.release()
}

/** Registers the conformance suite of `store` with `test` (node:test's). */
function storeConformance(test, store) {
  const { name, base } = store
  test(`${name} conformance: a fresh slot is held one TTL, issues ids under its slot, renews, and release frees it with the mark lowered to its last id`, () =>
    lifecycle(store))

  test(`${name} conformance: more contenders than slots: the extras get ERR_SNOWID_NO_FREE_WORKER_ID after waitMs`, tt =>
    moreContendersThanSlots(tt, base))

  test(`${name} conformance: a holder stopped past its TTL throws ERR_SNOWID_LEASE_LOST on resuming, with 0 duplicates`, tt =>
    stalledHolder(tt, base))

  test(`${name} conformance: a holder released after a 2 s clock step back: the next on the host starts past its every id, 0 duplicates`, tt =>
    releaseAfterAStepBack(tt, { ...base, ...store.stepBack }))

  test(`${name} conformance: a lost lease whose ${base.client} client is then ended stops taking slots, and its process exits`, tt =>
    endedClientExits(tt, base))
}

/**
 * The smoke test of a client's adapter, `kind`, registered with `test`: through a client from `open()`, a lease is
 * acquired, issues ids under its slot, renews and releases; through one from `unreachable()` (of a closed port),
 * acquire fails with the store's `code`. Both resolve to `{ client, close }`. `more(t)`, when given, runs that
 * client's own checks as a subtest.
 */
function clientSmoke(test, store, kind, { open, unreachable, code, more }) {
  test(`${store.name} with ${kind}: acquire, ids, renew, release, and a failed call's error (the adapter's smoke test)`, async t => {
    const ns = `smoke_${kind.replace(/\W/g, '_')}`
    const { client, close } = await open()
    t.after(() => close())
    const lease = await store.acquire(client, { datacenterId: 3, ttlMs: 3000, ...store.at(ns) })
    assert.deepEqual([lease.datacenterId, lease.workerId], [3, 0])
    const first = lease.snowflake.nextId()
    const d = lease.snowflake.decode(first)
    assert.deepEqual([d.datacenterId, d.workerId], [3, 0])
    assert.ok(lease.snowflake.nextId() > first)
    const [renewed] = await once(lease, 'renewed')
    assert.equal(renewed.deadline, lease.deadline)
    assert.ok((await store.slot(ns, 3, 0)).held, 'the slot is leased')
    await lease.release()
    assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
    assert.equal((await store.slot(ns, 3, 0)).held, false, 'release frees the slot')
    const dead = await unreachable()
    try {
      await assert.rejects(store.acquire(dead.client, { ttlMs: 500 }), err => {
        assert.equal(err.code, code, `${kind}: ${err.message}`)
        return true
      })
    } finally {
      await dead.close()
    }
    if (more) await t.test(`${kind}'s own checks`, more)
  })
}

module.exports = { clientSmoke, storeConformance }
