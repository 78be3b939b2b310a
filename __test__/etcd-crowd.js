'use strict'

// What etcd-lease.test.js and slow/etcd-contention.test.js share: an etcd member with a client, and `count` acquires
// at once with one etcd3 client.

const assert = require('node:assert/strict')
const { reportMissing, startEtcd } = require('./servers.js')

/**
 * A 1-member etcd and an etcd3 client of it, both stopped after the file's tests (`test`, node:test); or undefined,
 * with the missing packages reported, where etcd is not installed.
 */
async function etcdWithClient(test) {
  const etcd = await startEtcd(1)
  if (!etcd) {
    reportMissing(test, 'etcd', "apt-get install etcd-server etcd-client (Debian's packages)")
    return undefined
  }
  test.after(() => etcd.stop())
  const { Etcd3 } = require('etcd3')
  const client = new Etcd3({ hosts: etcd.endpoints() })
  test.after(() => client.close())
  return { etcd, client }
}

/**
 * Every one of `count` acquires at once gets a distinct slot with `opts` (waitMs 0 among them), and one more is
 * ERR_SNOWID_NO_FREE_WORKER_ID. The leases are released after test `t`.
 */
async function acquireAtOnce(t, acquireWorkerId, opts, count) {
  const settled = await Promise.allSettled(Array.from({ length: count }, () => acquireWorkerId(opts)))
  const leases = settled.filter(s => s.status === 'fulfilled').map(s => s.value)
  t.after(() => Promise.all(leases.map(l => l.release())))
  const failed = settled.filter(s => s.status === 'rejected').map(s => s.reason)
  assert.deepEqual(
    failed.map(e => `${e.code}: ${e.message}`).slice(0, 3),
    [],
    `${failed.length} of ${count} acquires failed`,
  )
  assert.equal(new Set(leases.map(l => l.workerId)).size, count, 'every slot distinct')
  await assert.rejects(acquireWorkerId(opts), { code: 'ERR_SNOWID_NO_FREE_WORKER_ID' })
  t.diagnostic(`${leases.length} of ${count} acquires at once got distinct slots; the next one: no free worker id`)
}

module.exports = { acquireAtOnce, etcdWithClient }
