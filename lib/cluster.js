'use strict'

// snowid/cluster: forks cluster workers, each with the lowest free SNOWID_WORKER_ID, and takes the slot back when
// the worker exits, so a replacement reuses it. cluster.worker.id grows with every fork and is never used.
//
// Another primary on the host may pick the same free slot at the same moment. The workers are started with
// SNOWID_WORKER_ID_IF_TAKEN=next: a worker whose slot another process took first moves on to the next free slot
// instead of dying, and its lease file then names it there. fork() and workers() read those files, so this
// primary's list follows its workers to the slots they hold.

const cluster = require('node:cluster')
const { workerSlots } = require('../index.js')

/**
 * This primary's live workers, each with its slot: the worker id it was handed, until its lease file names it at
 * another (keyed by worker, so that a worker moved to a slot another was handed never takes that one's place).
 */
const assigned = new Map()
/** The env of the last fork: where workers() looks for its workers' lease files. */
let lastEnv = {}

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
  lastEnv = env
  follow(slots.recorded)
  const total = 2 ** slots.workerBits
  const mine = new Set(assigned.values())
  // Slots a live process outside this primary's workers holds (the primary itself, or another service).
  const elsewhere = new Set(slots.recorded.filter(r => !mine.has(r.workerId) && isAlive(r.pid)).map(r => r.workerId))
  for (let workerId = 0; workerId < total; workerId++) {
    if (mine.has(workerId) || elsewhere.has(workerId)) continue
    const worker = cluster.fork({ ...env, SNOWID_WORKER_ID: String(workerId), SNOWID_WORKER_ID_IF_TAKEN: 'next' })
    assigned.set(worker, workerId)
    worker.once('exit', () => assigned.delete(worker))
    return worker
  }
  throw fail(
    Error,
    'ERR_SNOWID_NO_FREE_WORKER_ID',
    `fork: expected a free worker id among the ${total} of workerBits ${slots.workerBits} for datacenterId ` +
      `${slots.datacenterId}, found ${assigned.size} held by this primary's workers and ${elsewhere.size} by other processes. Fork fewer ` +
      'workers, stop other snowid processes on this host, give the workers another datacenter id (SNOWID_DATACENTER_ID ' +
      "in fork's env), or widen workerBits alike on every process (SNOWID_WORKER_BITS)",
  )
}

/**
 * Moves each of this primary's workers to the slot whose lease file names its pid, where that differs; returns the
 * workers whose files name them.
 */
function follow(recorded) {
  const slotOf = new Map(recorded.map(r => [r.pid, r.workerId]))
  const named = new Set()
  for (const worker of assigned.keys()) {
    const slot = slotOf.get(worker.process.pid)
    if (slot === undefined) continue
    assigned.set(worker, slot)
    named.add(worker)
  }
  return named
}

/**
 * The worker ids this primary's live workers hold, and their workers. A worker whose lease file does not name it
 * yet is listed at the worker id it was handed, unless a worker whose file names it holds that one.
 */
function workers() {
  const named = assigned.size > 0 ? follow(workerSlots(lastEnv).recorded) : new Set()
  const out = new Map()
  for (const [worker, slot] of assigned) if (!named.has(worker)) out.set(slot, worker)
  for (const [worker, slot] of assigned) if (named.has(worker)) out.set(slot, worker)
  return out
}

module.exports = { fork, workers }
