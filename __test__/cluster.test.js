'use strict'

// snowid/cluster and cluster workers: worker ids per worker, the automatic lease under churn, a full host.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const snowid = require('..')
const { cleanEnv, countDuplicates } = require('./helpers.js')

test('a cluster of 4 workers, each with its own SNOWID_WORKER_ID: 0 duplicates, each id decodes to its worker', () => {
  const app = path.join(__dirname, 'fixtures', 'cluster-app.js')
  const r = spawnSync(process.execPath, [app, '4', '50000'], {
    env: cleanEnv(),
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 << 20,
  })
  assert.equal(r.status, 0, r.stderr)
  const results = JSON.parse(r.stdout)
  assert.deepEqual(Object.keys(results).sort(), ['0', '1', '2', '3'])
  for (const [worker, ids] of Object.entries(results)) {
    assert.equal(ids.length, 50_000)
    for (const id of ids) {
      const d = snowid.decode(id)
      assert.equal(d.workerId, Number(worker))
      assert.equal(d.datacenterId, 1)
    }
  }
  const { dups, total } = countDuplicates(Object.values(results))
  assert.deepEqual([dups, total], [0, 200_000], `${dups} duplicates in ${total} ids`)
})

test('a cluster of 8 under snowid/cluster, 24 workers SIGKILLed and 23 respawned: 0 duplicates, at most 8 slots', t => {
  const app = path.join(__dirname, 'fixtures', 'cluster-churn.js')
  // 31 forks: under Wine, beside CI's other lanes, they took over 120 s.
  const r = spawnSync(process.execPath, [app, '24'], {
    env: cleanEnv(),
    encoding: 'utf8',
    timeout: 300_000,
    maxBuffer: 256 << 20,
  })
  assert.equal(r.status, 0, r.stderr)
  const { kills, forks, ids, listed } = JSON.parse(r.stdout)
  assert.equal(kills, 24)
  // workers() gives each worker the slot its ids carry: every worker killed, at least, had sent ids.
  assert.ok(listed.length >= kills, `${listed.length} workers listed`)
  for (const w of listed)
    assert.equal(w.slot && `${w.slot.datacenterId}:${w.slot.workerId}`, w.decoded, JSON.stringify(w))
  // Every kill but the last (whose exit comes once stopping has begun) is followed by a replacement.
  assert.equal(forks, 8 + 23)
  const { dups } = countDuplicates([ids])
  const slots = new Set(ids.map(id => `${snowid.decode(id).datacenterId}:${snowid.decode(id).workerId}`))
  t.diagnostic(`churn: ${ids.length} ids, ${kills} kills, ${forks} forks, ${slots.size} slots`)
  assert.equal(dups, 0, `${dups} duplicates in ${ids.length} ids`)
  // Each worker takes the lowest free slot, a replacement the one a killed worker freed: 31 workers on at most 8
  // slots (fewer when one started late, once a lower slot was free again).
  assert.ok(
    [...slots].every(s => /^0:[0-7]$/.test(s)),
    [...slots].join(' '),
  )
})

test('snowid/cluster refuses a fork when every slot is taken', () => {
  const app = path.join(__dirname, 'fixtures', 'cluster-full.js')
  for (const env of [{}, { SNOWID_LEASE: 'off' }]) {
    const r = spawnSync(process.execPath, [app], {
      env: cleanEnv({ SNOWID_WORKER_BITS: '1', SNOWID_DATACENTER_BITS: '0', SNOWID_SINGLE_INSTANCE: 'true', ...env }),
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.deepEqual(out.slots.sort(), ['0:0', '0:1'], JSON.stringify(env))
    assert.deepEqual(out.listed.sort(), ['0:0', '0:1'], JSON.stringify(env))
    assert.equal(out.error.code, 'ERR_SNOWID_NO_FREE_WORKER_ID')
    assert.match(out.error.message, /among the 2 of workerBits 1 for datacenterId 0/)
  }
})
