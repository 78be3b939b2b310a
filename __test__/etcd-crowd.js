'use strict'

// `count` acquires at once with one etcd3 client (etcd-lease.test.js, slow/etcd-contention.test.js): every one gets a
// distinct slot with `opts` (waitMs 0 among them), and one more is ERR_SNOWID_NO_FREE_WORKER_ID. The leases are
// released after test `t`.

const assert = require('node:assert/strict')

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

module.exports = { acquireAtOnce }
