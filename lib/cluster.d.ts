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
