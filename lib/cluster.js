'use strict'

// snowid/cluster: forks cluster workers, each with the lowest free SNOWID_WORKER_ID, and takes the slot back when
// the worker exits, so a replacement reuses it. cluster.worker.id grows with every fork and is never used.

const cluster = require('node:cluster')
const { workerSlots } = require('./index.js')

/** Slots handed to this primary's live workers: workerId -> cluster Worker. */
const assigned = new Map()

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
    throw fail(TypeError, 'ERR_SNOWID_INVALID_CONFIG', `env: expected an object, found ${env === null ? 'null' : typeof env}`)
  }
  const slots = workerSlots(env)
  const total = 2 ** slots.workerBits
  // Slots a live process outside this primary's workers holds (the primary itself, or another service).
  const elsewhere = new Set(
    slots.recorded.filter((r) => !assigned.has(r.workerId) && isAlive(r.pid)).map((r) => r.workerId),
  )
  for (let workerId = 0; workerId < total; workerId++) {
    if (assigned.has(workerId) || elsewhere.has(workerId)) continue
    const worker = cluster.fork({ ...env, SNOWID_WORKER_ID: String(workerId) })
    assigned.set(workerId, worker)
    worker.once('exit', () => {
      if (assigned.get(workerId) === worker) assigned.delete(workerId)
    })
    return worker
  }
  throw fail(
    Error,
    'ERR_SNOWID_NO_FREE_WORKER_ID',
    `fork: expected a free worker id among the ${total} of workerBits ${slots.workerBits} for datacenterId ` +
      `${slots.datacenterId}, found ${assigned.size} held by this primary's workers and ${elsewhere.size} by other processes`,
  )
}

/** The worker ids this primary's live workers hold, and their workers. */
function workers() {
  return new Map(assigned)
}

module.exports = { fork, workers }
