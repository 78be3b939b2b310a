'use strict'

// snowid/cluster where replicas run, and past one datacenter id's worker ids. Its `fork` gives each worker a
// SNOWID_WORKER_ID numbered from 0, the same in every replica, so the identity rule for replicas (src/core/replicas.rs)
// must see through it; and it must fork as many workers as the host lease gives plain processes. Each case runs
// fixtures/cluster-forks.js in a child process, with a lease directory and namespace of its own.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const { cleanEnv, runNode, wasiSkip } = require('./helpers.js')

const FIXTURE = path.join(__dirname, 'fixtures', 'cluster-forks.js')
const HOST_LEASE = wasiSkip('no host lease')

/** Runs the fixture with one fork per env of `envs`, the primary's environment being cleanEnv(`env`). */
function forks(envs, env = {}) {
  const r = spawnSync(process.execPath, [FIXTURE, JSON.stringify(envs)], {
    env: cleanEnv(env),
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

const K8S = { KUBERNETES_SERVICE_HOST: '10.96.0.1' }

test(
  'in Kubernetes, snowid/cluster workers of a replica with a datacenter id of its own, or declared the only instance, issue ids on distinct slots',
  HOST_LEASE,
  () => {
    for (const env of [{ SNOWID_DATACENTER_ID: '3' }, { SNOWID_SINGLE_INSTANCE: 'true' }]) {
      const out = forks([{}, {}], { ...K8S, ...env })
      assert.deepEqual(
        out.forks.map(f => f.error ?? f.forkError ?? null),
        [null, null],
        JSON.stringify(out),
      )
      assert.equal(new Set(out.forks.map(f => f.slot)).size, 2, JSON.stringify(out))
      if (env.SNOWID_DATACENTER_ID)
        assert.ok(
          out.forks.every(f => f.slot.startsWith('3:')),
          JSON.stringify(out),
        )
    }
  },
)

test(
  'in Kubernetes, snowid/cluster workers with no identity chosen for the replica are refused, as plain processes are',
  HOST_LEASE,
  () => {
    const out = forks([{}, {}], K8S)
    for (const f of out.forks) {
      const code = f.forkError ?? f.error
      assert.equal(code, 'ERR_SNOWID_IDENTITY_REQUIRED', `a worker issued ids: ${JSON.stringify(out)}`)
    }
  },
)

test(
  'in a plain container, snowid/cluster workers with no identity chosen for the replica are warned of',
  HOST_LEASE,
  () => {
    const out = forks([{}, {}], { container: 'docker' })
    const all = [...out.primaryWarnings, ...out.forks.flatMap(f => f.warnings ?? [])]
    assert.ok(all.includes('SNOWID_IDENTITY_UNCHOSEN'), `no warning: ${JSON.stringify(out)}`)
    for (const f of out.forks) assert.equal(f.forkError ?? f.error ?? null, null, JSON.stringify(out))
  },
)

test(
  'with no datacenter id configured, snowid/cluster forks as many workers as the lease gives plain processes',
  HOST_LEASE,
  () => {
    // 1 worker bit: 2 worker ids for each of the 8 datacenter ids.
    const out = forks([{}, {}, {}], { SNOWID_WORKER_BITS: '1' })
    assert.deepEqual(
      out.forks.map(f => f.forkError ?? f.error ?? null),
      [null, null, null],
      JSON.stringify(out),
    )
    assert.equal(new Set(out.forks.map(f => f.slot)).size, 3, JSON.stringify(out))
  },
)

test(
  "a fork given another SNOWID_DATACENTER_ID, as fork's ERR_SNOWID_NO_FREE_WORKER_ID advises, gets a slot there",
  HOST_LEASE,
  () => {
    const dc0 = { SNOWID_DATACENTER_ID: '0' }
    const out = forks([dc0, dc0, dc0, { SNOWID_DATACENTER_ID: '1' }], { SNOWID_WORKER_BITS: '1' })
    const [, , full, other] = out.forks
    // Refused by fork() itself, or by the worker's first id.
    assert.equal(full.forkError ?? full.error, 'ERR_SNOWID_NO_FREE_WORKER_ID', JSON.stringify(out))
    assert.match(full.message, /another datacenter id \(SNOWID_DATACENTER_ID/)
    assert.deepEqual([other.forkError ?? other.error ?? null, other.slot], [null, '1:0'], JSON.stringify(out))
  },
)

test(
  'in a StatefulSet, snowid/cluster refuses workers whose worker ids would be the same in every pod',
  HOST_LEASE,
  () => {
    const pod = { ...K8S, SNOWID_WORKER_ID_FROM: 'statefulset', HOSTNAME: 'web-2' }
    const out = forks([{}], pod)
    assert.equal(out.forks[0].forkError, 'ERR_SNOWID_IDENTITY_REQUIRED', JSON.stringify(out))
    assert.match(out.forks[0].message, /SNOWID_WORKER_ID_FROM=statefulset and no datacenter id/)
    // With a datacenter id of the pod's own, fork hands out that datacenter id's worker ids.
    const own = forks([{}, {}], { ...pod, SNOWID_DATACENTER_ID: '2' })
    assert.deepEqual(
      own.forks.map(f => f.slot),
      ['2:0', '2:1'],
      JSON.stringify(own),
    )
  },
)

test('with leases off, snowid/cluster hands out worker ids, and refuses where the workers would be refused', () => {
  const out = forks([{}, {}], { SNOWID_LEASE: 'off', SNOWID_SINGLE_INSTANCE: 'true' })
  assert.deepEqual(
    out.forks.map(f => f.slot),
    ['0:0', '0:1'],
    JSON.stringify(out),
  )
  const refused = forks([{}], { ...K8S, SNOWID_LEASE: 'off' })
  assert.equal(refused.forks[0].forkError, 'ERR_SNOWID_IDENTITY_REQUIRED', JSON.stringify(refused))
  assert.match(refused.forks[0].message, /workerId is 0 and datacenterId 0 with leases off/)
})

test('workerSlots resolves the configuration as processes started with env would', HOST_LEASE, () => {
  // This process has SNOWID_WORKER_ID=3 in its environment: processes started with env inherit it, unless env gives
  // it as undefined (unset in the child, as cluster.fork does).
  const r = runNode(
    `const snowid = require('.')
    const slotOf = ({ datacenterId, workerId, pid }) => ({ datacenterId, workerId, pid })
    const pick = s => ({ automatic: s.automatic, workerIdSource: s.workerIdSource, datacenterIdSource: s.datacenterIdSource, warning: s.warning && s.warning.slice(0, 19) })
    const none = { SNOWID_WORKER_ID: undefined }
    const out = {
      inherited: pick(snowid.workerSlots()),
      none: pick(snowid.workerSlots(none)),
      dc: pick(snowid.workerSlots({ ...none, SNOWID_DATACENTER_ID: '2' })),
      off: pick(snowid.workerSlots({ ...none, SNOWID_LEASE: 'off', SNOWID_SINGLE_INSTANCE: 'true' })),
      container: pick(snowid.workerSlots({ ...none, container: 'docker' })),
    }
    try { snowid.workerSlots({ ...none, KUBERNETES_SERVICE_HOST: '10.96.0.1' }) } catch (e) { out.k8s = e.code }
    // The slot this process holds, found among every datacenter id's.
    const d = snowid.decode(snowid.nextId())
    out.recorded = snowid.workerSlots(none).recorded.filter(r => r.pid === process.pid).map(slotOf)
    out.held = { datacenterId: d.datacenterId, workerId: d.workerId, pid: process.pid }
    console.log(JSON.stringify(out))`,
    { SNOWID_WORKER_ID: '3', SNOWID_DATACENTER_ID: '5' },
  )
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.deepEqual(out.inherited, { automatic: false, workerIdSource: 'env', datacenterIdSource: 'env', warning: null })
  // Unset, with the datacenter id still inherited: the automatic lease, within datacenterId 5.
  const auto = { automatic: true, workerIdSource: 'lease', datacenterIdSource: 'env', warning: null }
  assert.deepEqual(out.none, auto)
  assert.deepEqual(out.dc, auto)
  assert.deepEqual(out.off, { automatic: false, workerIdSource: 'default', datacenterIdSource: 'env', warning: null })
  // A datacenter id is chosen: neither refused nor warned of.
  assert.deepEqual(out.container, auto)
  assert.equal(out.k8s, undefined)
  assert.deepEqual(out.held, { datacenterId: 5, workerId: 3, pid: out.held.pid })
  // Its own slot, configured, is among datacenterId 5's that the others would search.
  assert.deepEqual(out.recorded, [out.held])

  const unchosen = runNode(
    `const snowid = require('.')
    const slotOf = ({ datacenterId, workerId, pid }) => ({ datacenterId, workerId, pid })
    const pick = s => ({ automatic: s.automatic, datacenterIdSource: s.datacenterIdSource, warning: s.warning && s.warning.slice(0, 19) })
    const out = { none: pick(snowid.workerSlots()), container: pick(snowid.workerSlots({ container: 'docker' })) }
    try { snowid.workerSlots({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }) } catch (e) { out.k8s = e.code }
    const d = snowid.decode(snowid.nextId())
    out.recorded = snowid.workerSlots().recorded.filter(r => r.pid === process.pid).map(slotOf)
    out.held = { datacenterId: d.datacenterId, workerId: d.workerId, pid: process.pid }
    console.log(JSON.stringify(out))`,
  )
  assert.equal(unchosen.status, 0, unchosen.stderr)
  const u = JSON.parse(unchosen.stdout)
  // This machine may itself be a container (/.dockerenv): then every unchosen identity is warned of.
  assert.deepEqual(u.none, { automatic: true, datacenterIdSource: 'lease', warning: u.none.warning })
  assert.deepEqual(u.container, { automatic: true, datacenterIdSource: 'lease', warning: 'no identity chosen ' })
  assert.equal(u.k8s, 'ERR_SNOWID_IDENTITY_REQUIRED')
  assert.deepEqual(u.recorded, [u.held])
})
