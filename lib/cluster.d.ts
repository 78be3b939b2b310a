import type { Worker } from 'node:cluster'

/**
 * Forks a cluster worker (in the primary) with the lowest free `SNOWID_WORKER_ID`, and takes the slot back when
 * the worker exits, so that a replacement reuses it. `cluster.worker.id`, which grows with every fork, is never
 * used. Slots that another live process on this host holds (per the lease directory) are skipped.
 *
 * @param env - environment for the worker, as for `cluster.fork(env)`. Its `SNOWID_WORKER_ID` is set by `fork`.
 * @throws {Error} `ERR_SNOWID_NO_FREE_WORKER_ID` when every one of the `2^workerBits` slots is taken.
 * @throws {Error} `ERR_SNOWID_NOT_PRIMARY` when called in a worker.
 * @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when `env` and the environment configure snowid badly.
 */
export declare function fork(env?: Record<string, string | undefined>): Worker

/** The worker ids that this primary's live workers hold, each with its worker. */
export declare function workers(): Map<number, Worker>
