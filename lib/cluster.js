'use strict'

// snowid/cluster: forks cluster workers and follows the slots they hold. Each fork first resolves the configuration
// as its worker will (workerSlots): where the worker's first id would be refused an identity no one chose
// (ERR_SNOWID_IDENTITY_REQUIRED, replicas in Kubernetes and the like), fork refuses before forking; where it would be
// warned of one (a plain container), the primary warns once. Then:
//
// - Automatic: with the host lease on and no worker id configured for the workers (none in fork's env or in this
//   process's environment, no SNOWID_WORKER_ID_FROM), fork(env) is cluster.fork(env). Each worker takes its slot from
//   the automatic lease as any process does: every datacenter id's slots, unless one is configured. workers() finds
//   each worker's slot in the lease files, by its pid.
// - Assigned: with a worker id configured in the environment the workers inherit, or with leases off, fork gives each
//   worker the lowest free SNOWID_WORKER_ID of its datacenter id, and takes the slot back when the worker exits, so a
//   replacement reuses it (cluster.worker.id grows with every fork and is never used). Another primary on the host
//   may pick the same free slot at the same moment: such workers are started with SNOWID_WORKER_ID_IF_TAKEN=next, so
//   a worker whose slot another process took first moves on to the next free slot of its datacenter id, and its lease
//   file names it there; fork() and workers() read those files, so this primary's list follows its workers.

const cluster = require('node:cluster')
const { workerSlots } = require('../index.js')

/**
 * This primary's live workers, each with the env it was forked with, the datacenter ids its slot is among
 * ([from, to]), and its slot ({ datacenterId, workerId }): the one fork assigned, or the one its lease file was last
 * found naming it in (null until then).
 */
const tracked = new Map()
/** Whether this primary has warned of an identity no one chose. */
let warned = false

function isAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

function fail(ErrorClass, code, message) {
  return Object.assign(new ErrorClass(message), { code })
}

function fork(env = {}) {
  if (!cluster.isPrimary) {
    throw fail(Error, 'ERR_SNOWID_NOT_PRIMARY', 'fork: expected to run in the cluster primary, found a worker')
  }
  if (env === null || typeof env !== 'object') {
    throw fail(
      TypeError,
      'ERR_SNOWID_INVALID_CONFIG',
      `env: expected an object, found ${env === null ? 'null' : typeof env}`,
    )
  }
  const slots = workerSlots(env)
  if (slots.warning !== null && !warned) {
    warned = true
    process.emitWarning(slots.warning, { type: 'SnowidWarning', code: 'SNOWID_IDENTITY_UNCHOSEN' })
  }
  if (slots.workerIdSource === 'statefulset' && !['env', 'option'].includes(slots.datacenterIdSource)) {
    throw fail(
      Error,
      'ERR_SNOWID_IDENTITY_REQUIRED',
      "fork: expected the workers' identity to differ from every other pod's, found SNOWID_WORKER_ID_FROM=statefulset " +
        'and no datacenter id: the ordinal names the pod, and fork gives its workers worker ids 0, 1, ... the same in ' +
        'every pod. Give each pod a datacenter id of its own (SNOWID_DATACENTER_ID, from the ordinal), or take worker ' +
        'ids from a store (snowid/redis, snowid/postgres or snowid/mysql)',
    )
  }
  follow(slots.recorded)
  const worker = slots.automatic ? forkAutomatic(env, slots) : forkAssigned(env, slots)
  worker.once('exit', () => tracked.delete(worker))
  return worker
}

/** The datacenter ids the workers of `slots` take their slots among: [from, to]. */
function datacenters(slots) {
  return slots.datacenterIdSource === 'lease'
    ? [0, 2 ** slots.datacenterBits - 1]
    : [slots.datacenterId, slots.datacenterId]
}

/**
 * A worker that takes its slot from the automatic lease, once one is free for it: among the slots of its datacenter
 * ids, those a live process holds and those this primary's workers forked a moment ago will take (the ones forked
 * among no other datacenter ids, that hold no slot yet) must leave one.
 */
function forkAutomatic(env, slots) {
  const [from, to] = datacenters(slots)
  const within = ([a, b]) => from <= a && b <= to
  const held = slots.recorded.filter(r => r.datacenterId >= from && r.datacenterId <= to && isAlive(r.pid)).length
  const coming = [...tracked.values()].filter(t => t.slot === null && within(t.datacenters)).length
  const total = (to - from + 1) * 2 ** slots.workerBits
  if (held + coming >= total) {
    const which =
      from === to
        ? `among the ${total} of workerBits ${slots.workerBits} for datacenterId ${from}`
        : `among the ${total} of datacenterBits ${slots.datacenterBits} and workerBits ${slots.workerBits} (datacenterIds ${from} to ${to})`
    const elsewhere = from === to ? "give the workers another datacenter id (SNOWID_DATACENTER_ID in fork's env), " : ''
    throw fail(
      Error,
      'ERR_SNOWID_NO_FREE_WORKER_ID',
      `fork: expected a free slot ${which}, found ${held} held by live processes and ${coming} about to be taken by ` +
        `workers this primary has just forked. Fork fewer workers, stop other snowid processes on this host, ` +
        `${elsewhere}or widen workerBits alike on every process (SNOWID_WORKER_BITS)`,
    )
  }
  const worker = cluster.fork(env)
  tracked.set(worker, { env, datacenters: [from, to], slot: null })
  return worker
}

/** A worker given the lowest worker id of its datacenter id that no live worker of this primary or other process holds. */
function forkAssigned(env, slots) {
  const dc = slots.datacenterId
  const total = 2 ** slots.workerBits
  const mine = new Set()
  for (const t of tracked.values()) if (t.slot !== null && t.slot.datacenterId === dc) mine.add(t.slot.workerId)
  const pids = new Set([...tracked.keys()].map(w => w.process.pid))
  // Slots a live process outside this primary's workers holds (the primary itself, or another service).
  const elsewhere = new Set(
    slots.recorded.filter(r => r.datacenterId === dc && !pids.has(r.pid) && isAlive(r.pid)).map(r => r.workerId),
  )
  for (let workerId = 0; workerId < total; workerId++) {
    if (mine.has(workerId) || elsewhere.has(workerId)) continue
    const worker = cluster.fork({ ...env, SNOWID_WORKER_ID: String(workerId), SNOWID_WORKER_ID_IF_TAKEN: 'next' })
    tracked.set(worker, { env, datacenters: [dc, dc], slot: { datacenterId: dc, workerId } })
    return worker
  }
  throw fail(
    Error,
    'ERR_SNOWID_NO_FREE_WORKER_ID',
    `fork: expected a free worker id among the ${total} of workerBits ${slots.workerBits} for datacenterId ` +
      `${dc}, found ${mine.size} held by this primary's workers and ${elsewhere.size} by other processes. Fork fewer ` +
      'workers, stop other snowid processes on this host, give the workers another datacenter id (SNOWID_DATACENTER_ID ' +
      "in fork's env), or widen workerBits alike on every process (SNOWID_WORKER_BITS)",
  )
}

/** Moves each of this primary's workers to the slot whose lease file names its pid, where there is one. */
function follow(recorded) {
  if (recorded.length === 0) return
  const slotOf = new Map(recorded.map(r => [r.pid, r]))
  for (const [worker, t] of tracked) {
    const r = slotOf.get(worker.process.pid)
    if (r !== undefined && r.datacenterId >= t.datacenters[0] && r.datacenterId <= t.datacenters[1]) {
      t.slot = { datacenterId: r.datacenterId, workerId: r.workerId }
    }
  }
}

/** The slot each of this primary's live workers holds, by worker: those that hold none yet are left out. */
function workers() {
  // The lease files of each env the workers were forked with, read once.
  const read = new Set()
  for (const t of tracked.values()) {
    const key = JSON.stringify(Object.entries(t.env).sort(([a], [b]) => (a < b ? -1 : 1)))
    if (read.has(key)) continue
    read.add(key)
    let slots
    try {
      slots = workerSlots(t.env)
    } catch {
      // The environment changed since (a variable now bad): the slots found so far stand.
      continue
    }
    follow(slots.recorded)
  }
  const out = new Map()
  for (const [worker, t] of tracked) if (t.slot !== null) out.set(worker, { ...t.slot })
  return out
}

module.exports = { fork, workers }
