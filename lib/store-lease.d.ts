// Typings of what every store's lease shares (lib/store-lease.js): its options, errors and lease object. Written by hand.
import type { Snowflake, SnowflakeOptions } from '../index'

/** The options every store takes; each store adds its `client` and its own. */
export interface LeaseOptions {
  /** The datacenter id to lease a worker id in. Env `SNOWID_DATACENTER_ID`, else 0. */
  datacenterId?: number
  /** How long a lease lasts without renewal, 100 to 3600000 ms. It is renewed every third of it.
   * @default 10000 */
  ttlMs?: number
  /** How long to keep trying when every slot is leased, every free one has a mark a TTL or more ahead of this host's
   * clock, or the store did not answer a take in time, 0 to 3600000 ms.
   * @default 0 */
  waitMs?: number
  /** The generator stops this long before the lease's confirmed expiry; more than the generator's `maxLeadMs`.
   * @default max(ttlMs / 5, 50) + maxLeadMs */
  marginMs?: number
  /** Options of the generator, except `datacenterId`, `workerId`, `lease`, `leaseDir` and `leaseNamespace`, which the
   * lease decides. */
  snowflake?: Omit<SnowflakeOptions, 'datacenterId' | 'workerId' | 'lease' | 'leaseDir' | 'leaseNamespace'>
  /** Whether a lost lease takes a slot again in the background (emitting `reacquired`).
   * @default true */
  reacquire?: boolean
}

/** A coded error of a store lease. */
export interface SnowidLeaseError extends Error {
  code:
    | 'ERR_SNOWID_LEASE_LOST'
    | 'ERR_SNOWID_REDIS_UNAVAILABLE'
    | 'ERR_SNOWID_POSTGRES_UNAVAILABLE'
    | 'ERR_SNOWID_MYSQL_UNAVAILABLE'
    | 'ERR_SNOWID_ETCD_UNAVAILABLE'
    | 'ERR_SNOWID_STORE_NOT_REPLICATED'
    | 'ERR_SNOWID_STORE_TABLE_INVALID'
    | 'ERR_SNOWID_STORE_TABLE_MISSING'
    | 'ERR_SNOWID_STORE_TIMEOUT'
    | 'ERR_SNOWID_STORE_PERMISSION_DENIED'
    | 'ERR_SNOWID_NO_FREE_WORKER_ID'
    | 'ERR_SNOWID_LEASE_CORRUPT'
    | 'ERR_SNOWID_CLOCK_BACKWARDS'
    | 'ERR_SNOWID_INVALID_ARGUMENT'
    | 'ERR_SNOWID_INVALID_CONFIG'
}

/** A (datacenterId, workerId) slot leased from a store, renewed in the background. */
// An EventEmitter at runtime. Its methods are declared here rather than inherited from `node:events`, so that the
// typings need no @types/node.
export declare class StoreLease {
  readonly datacenterId: number
  /** The worker id in use. It changes only when the lease is lost and another slot is taken, and then together
   * with `snowflake`, at `reacquired`. */
  readonly workerId: number
  /** A generator bound to the slot. Past the lease's deadline it throws `ERR_SNOWID_LEASE_LOST`, and goes on doing
   * so after a loss until the slot is taken again. After a loss that ends in another slot, this is a new generator. */
  readonly snowflake: Snowflake
  /** Unix ms until which ids may be issued: the last confirmed expiry less `marginMs`. 0 once lost or released. */
  readonly deadline: number
  /** Stops the generator, then frees the slot (if still held). The slot's mark stays for the next holder. Rejects
   * with `ERR_SNOWID_STORE_PERMISSION_DENIED` when the store refuses; a store that does not answer frees the slot
   * when the lease's TTL runs out. */
  release(): Promise<void>

  on(event: 'renewed', listener: (info: { deadline: number }) => void): this
  /** 'renewFailed': a renewal the store did not answer, or that its replicas did not confirm
   * (`ERR_SNOWID_STORE_NOT_REPLICATED`; the lease keeps trying until its deadline), or, after a
   * loss, a failed attempt to take a slot again (`ERR_SNOWID_CLOCK_BACKWARDS` when the free slots' marks are further
   * ahead than a TTL; the attempts go on, except after `ERR_SNOWID_LEASE_CORRUPT`, `ERR_SNOWID_STORE_PERMISSION_DENIED`
   * or `ERR_SNOWID_STORE_TABLE_INVALID`, or once the client was ended or closed). */
  on(event: 'renewFailed', listener: (err: SnowidLeaseError) => void): this
  /** 'lost': the generator stopped issuing (at its deadline, with no renewal confirmed; or the slot is no longer
   * this lease's). */
  on(event: 'lost', listener: (err: SnowidLeaseError) => void): this
  on(event: 'reacquired', listener: (lease: this) => void): this
  once(event: 'renewed', listener: (info: { deadline: number }) => void): this
  once(event: 'renewFailed', listener: (err: SnowidLeaseError) => void): this
  once(event: 'lost', listener: (err: SnowidLeaseError) => void): this
  once(event: 'reacquired', listener: (lease: this) => void): this
  off(event: StoreLeaseEvent, listener: (...args: any[]) => void): this
  addListener(event: StoreLeaseEvent, listener: (...args: any[]) => void): this
  removeListener(event: StoreLeaseEvent, listener: (...args: any[]) => void): this
  removeAllListeners(event?: StoreLeaseEvent): this
  listenerCount(event: StoreLeaseEvent): number
}

/** The events a `StoreLease` emits. */
export type StoreLeaseEvent = 'renewed' | 'renewFailed' | 'lost' | 'reacquired'
