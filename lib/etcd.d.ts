// Typings of `snowid/etcd`, written by hand. The lease object and its events are lib/store-lease.d.ts's.
import type { LeaseOptions, SnowidLeaseError, StoreHolder, StoreLease } from './store-lease'

/**
 * An etcd3 client (`new Etcd3({ hosts })` from the `etcd3` package), or a namespace of one (`client.namespace(...)`).
 * snowid reads and writes its keys, grants one etcd lease per slot it takes, and keeps it alive itself.
 */
export type EtcdClient = {
  if(...args: any[]): unknown
  lease(ttl: number, options?: { autoKeepAlive?: boolean }): unknown
  getAll(): unknown
  get(key: string): unknown
  put(key: string): unknown
  delete(): unknown
}

export interface EtcdAcquireOptions extends LeaseOptions {
  /** The client to use. snowid does not close it. */
  client: EtcdClient
  /** Keys are `<keyPrefix>/<datacenterId>/<workerId>/lease` and `.../marks`, and `<keyPrefix>/<datacenterId>/init`.
   * @default 'snowid' */
  keyPrefix?: string
}

/** A coded error of snowid/etcd. */
export type SnowidEtcdError = SnowidLeaseError

/** A (datacenterId, workerId) slot leased from etcd, renewed in the background. */
export declare class EtcdLease extends StoreLease {}

/**
 * Leases a free worker id from etcd and returns the started lease. A slot whose marks record the store's incarnation
 * (the cluster id and the key `<prefix>/incarnation`) is used once the clock is past its mark; one whose marks record
 * none (a slot never held, marks deleted, etcd wiped) or another (another cluster at the address) is held for one TTL
 * before it is used.
 * @throws `ERR_SNOWID_NO_FREE_WORKER_ID` when every slot is leased for `waitMs`.
 * @throws `ERR_SNOWID_ETCD_UNAVAILABLE` when etcd does not answer; `ERR_SNOWID_LEASE_CORRUPT` for a marks key that
 * holds something else than snowid wrote; `ERR_SNOWID_STORE_PERMISSION_DENIED` when etcd's auth refuses the keys.
 */
export declare function acquireWorkerId(options: EtcdAcquireOptions): Promise<EtcdLease>

/** As `acquireWorkerId`, and configures the process's default generator with the slot, before its first id. */
export declare function configureWorkerId(options: EtcdAcquireOptions): Promise<EtcdLease>

export type { StoreHolder } from './store-lease'

/**
 * Who holds the slots: of `options.datacenterId`, or of every datacenter of the layout when it is left out; with the
 * same client and `keyPrefix` as the leases. Each slot held, with its holder's host, pid, start time and command line (null
 * when unknown), the Unix ms its TTL ends, and `live`. A holder that stopped without releasing is listed as not live
 * once its TTL has passed; one that released is not listed. It reads only the lease keys.
 * @throws the store's `..._UNAVAILABLE` code when it does not answer; `ERR_SNOWID_INVALID_ARGUMENT` for bad options.
 */
export declare function listHolders(options: EtcdAcquireOptions): Promise<StoreHolder[]>
