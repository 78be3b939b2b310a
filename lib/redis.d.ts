// Typings of `snowid/redis`, written by hand. The lease object and its events are lib/store-lease.d.ts's.
import type { LeaseOptions, SnowidLeaseError, StoreHolder, StoreLease } from './store-lease'

/**
 * A connected Redis client: ioredis (`new Redis(...)`, through Sentinel or not, or `new Redis.Cluster(...)`), or
 * node-redis (`createClient(...)` or `createCluster(...)`, after `connect()`). snowid runs its Lua scripts through
 * `client.call` (ioredis) or `client.sendCommand` (node-redis).
 */
export type RedisClient =
  | { call(command: string, ...args: Array<string | number>): Promise<unknown> }
  | { isOpen: boolean; sendCommand(args: string[]): Promise<unknown> }
  | {
      isOpen: boolean
      getSlotMaster(slot: number): unknown
      sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>
    }

export interface RedisAcquireOptions extends LeaseOptions {
  /** The client to use. snowid does not connect or close it. */
  client: RedisClient
  /** Keys are `{keyPrefix}:<datacenterId>:<workerId>:lease` and `...:marks`. No braces.
   * @default 'snowid' */
  keyPrefix?: string
  /** How many replicas must acknowledge each take and renewal (`WAIT`) before it counts, 0 to 100. By default as many
   * as the master has had connected under its replication id (0 for a Redis with no replica). A smaller number
   * survives the loss of replicas, but not a split brain that leaves one with the old master.
   * @default the master's replicas */
  replicas?: number
}

/** A coded error of snowid/redis. */
export type SnowidRedisError = SnowidLeaseError

/** A (datacenterId, workerId) slot leased from Redis, renewed in the background. */
export declare class RedisLease extends StoreLease {}

/**
 * Leases a free worker id from Redis and returns the started lease. A slot with no recorded history, whose mark was
 * written before a failover (under another replication id), or in another dataset (its marks record an incarnation
 * other than the key `{prefix}:incarnation` holds), is held for one TTL before it is used; a slot with a mark is used
 * once the clock is past it.
 * @throws `ERR_SNOWID_NO_FREE_WORKER_ID` when every slot is leased for `waitMs`.
 * @throws `ERR_SNOWID_REDIS_UNAVAILABLE` when Redis does not answer; `ERR_SNOWID_LEASE_CORRUPT` for a key that
 * holds something else than snowid wrote; `ERR_SNOWID_STORE_PERMISSION_DENIED` when an ACL refuses a command or key;
 * `ERR_SNOWID_STORE_NOT_REPLICATED` when fewer replicas than `replicas` acknowledged the lease for `waitMs`.
 */
export declare function acquireWorkerId(options: RedisAcquireOptions): Promise<RedisLease>

/**
 * As `acquireWorkerId`, and configures the process's default generator (`require('snowid').nextId()`) with the
 * slot. Call it before the default generator's first id. After a loss it takes back only the same slot.
 */
export declare function configureWorkerId(options: RedisAcquireOptions): Promise<RedisLease>

export type { StoreHolder } from './store-lease'

/**
 * Who holds the slots: of `options.datacenterId`, or of every datacenter of the layout when it is left out; with the
 * same client and `keyPrefix` as the leases. Each slot held, with its holder's host, pid, start time and command line (null
 * when unknown), the Unix ms its TTL ends, and `live`. A holder that stopped without releasing is listed as not live
 * once its TTL has passed; one that released is not listed. It reads only the lease keys.
 * @throws the store's `..._UNAVAILABLE` code when it does not answer; `ERR_SNOWID_INVALID_ARGUMENT` for bad options.
 */
export declare function listHolders(options: RedisAcquireOptions): Promise<StoreHolder[]>
