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

/** Slots handed to this primary's live workers: workerId -> cluster Worker. */
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
  // Slots a live process outside this primary's workers holds (the primary itself, or another service).
  const elsewhere = new Set(
    slots.recorded.filter(r => !assigned.has(r.workerId) && isAlive(r.pid)).map(r => r.workerId),
  )
  for (let workerId = 0; workerId < total; workerId++) {
    if (assigned.has(workerId) || elsewhere.has(workerId)) continue
    const worker = cluster.fork({ ...env, SNOWID_WORKER_ID: String(workerId), SNOWID_WORKER_ID_IF_TAKEN: 'next' })
    assigned.set(workerId, worker)
    worker.once('exit', () => {
      for (const [w, which] of assigned) if (which === worker) assigned.delete(w)
    })
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

/** Moves each of this primary's workers to the slot whose lease file names its pid, where that differs. */
function follow(recorded) {
  const slotOf = new Map(recorded.map(r => [r.pid, r.workerId]))
  const moved = [...assigned].map(([w, worker]) => [slotOf.get(worker.process.pid) ?? w, worker])
  assigned.clear()
  for (const [w, worker] of moved) assigned.set(w, worker)
}

/** The worker ids this primary's live workers hold, and their workers. */
function workers() {
  if (assigned.size > 0) follow(workerSlots(lastEnv).recorded)
  return new Map(assigned)
}

module.exports = { fork, workers }
