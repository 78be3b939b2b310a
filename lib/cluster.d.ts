/**
 * The `cluster.Worker` that `fork` returns, with the members most used; it is Node's own object. Declared here rather
 * than imported from `node:cluster`, so that the typings need no @types/node: with @types/node, pass it on as a
 * `cluster.Worker` with `worker as unknown as import('node:cluster').Worker` when a function wants that type.
 */
export interface Worker {
  /** Node's id of this worker (it grows with every fork; not the snowid worker id). */
  readonly id: number
  /** The worker's child process. */
  readonly process: { readonly pid?: number | undefined }
  send(message: unknown, ...rest: unknown[]): boolean
  kill(signal?: string): void
  disconnect(): this
  isConnected(): boolean
  isDead(): boolean
  on(event: string, listener: (...args: any[]) => void): this
  once(event: string, listener: (...args: any[]) => void): this
  off(event: string, listener: (...args: any[]) => void): this
}

/**
 * Forks a cluster worker (in the primary), first resolving the configuration as the worker will (`workerSlots`):
 * where the worker's first id would be refused an identity no one chose (`ERR_SNOWID_IDENTITY_REQUIRED`: replicas in
 * Kubernetes and the like), no worker is forked; where it would be warned of one (a plain container), the primary
 * warns once (`SNOWID_IDENTITY_UNCHOSEN`). Then:
 *
 * - with the host lease on and no worker id configured for the workers (none in `env` or this process's
 *   environment, no `SNOWID_WORKER_ID_FROM`), it is `cluster.fork(env)`: the worker takes its slot from the automatic
 *   lease as any process does, among every datacenter id's worker ids unless one is configured;
 * - with a worker id configured in the environment the workers inherit, or with leases off, it gives the worker the
 *   lowest free `SNOWID_WORKER_ID` of its datacenter id (slots another live process holds, per the lease directory,
 *   are skipped), and takes the slot back when the worker exits, so that a replacement reuses it.
 *
 * `cluster.worker.id`, which grows with every fork, is never used.
 *
 * @param env - environment for the worker, as for `cluster.fork(env)`.
 * @throws {Error} `ERR_SNOWID_IDENTITY_REQUIRED` where the worker would be refused an identity no one chose.
 * @throws {Error} `ERR_SNOWID_NO_FREE_WORKER_ID` when no slot is left for the worker: those of its datacenter ids
 *   held by live processes, or about to be taken by workers just forked.
 * @throws {Error} `ERR_SNOWID_NOT_PRIMARY` when called in a worker.
 * @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when `env` and the environment configure snowid badly.
 */
export declare function fork(env?: Record<string, string | undefined>): Worker

/** A slot: a (datacenterId, workerId) pair. */
export interface Slot {
  datacenterId: number
  workerId: number
}

/**
 * The slot each of this primary's live workers holds, by worker: the one `fork` assigned, or the one the worker's
 * lease file names it in (followed there when it moved on, or found there once the automatic lease gave it one). A
 * worker that holds none yet (before its first id, with the automatic lease) is left out.
 */
export declare function workers(): Map<Worker, Slot>
