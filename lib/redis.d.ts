// Typings of `snowid/redis`, written by hand.
import { EventEmitter } from 'node:events'
import type { Snowflake, SnowflakeOptions } from './index'

/**
 * A connected Redis client: ioredis (`new Redis(...)`), or node-redis (`createClient(...)`, after `connect()`).
 * snowid runs its Lua scripts through `client.call` (ioredis) or `client.sendCommand` (node-redis).
 */
export type RedisClient =
  | { call(command: string, ...args: Array<string | number>): Promise<unknown> }
  | { isOpen: boolean; sendCommand(args: string[]): Promise<unknown> }

export interface AcquireOptions {
  /** The client to use. snowid does not connect or close it. */
  client: RedisClient
  /** The datacenter id to lease a worker id in. Env `SNOWID_DATACENTER_ID`, else 0. */
  datacenterId?: number
  /** Keys are `{keyPrefix}:<datacenterId>:<workerId>:lease` and `...:marks`. No braces.
   * @default 'snowid' */
  keyPrefix?: string
  /** How long a lease lasts without renewal, 100 to 3600000 ms. It is renewed every third of it.
   * @default 10000 */
  ttlMs?: number
  /** How long to keep trying when every slot is leased, 0 to 3600000 ms.
   * @default 0 */
  waitMs?: number
  /** The generator stops this long before the lease's confirmed expiry; more than the generator's `maxLeadMs`.
   * @default max(ttlMs / 5, 50) + maxLeadMs */
  marginMs?: number
  /** Options of the generator, except `datacenterId`, `workerId`, `lease` and `leaseDir`, which the lease decides. */
  snowflake?: Omit<SnowflakeOptions, 'datacenterId' | 'workerId' | 'lease' | 'leaseDir'>
  /** Whether a lost lease takes a slot again in the background (emitting `reacquired`).
   * @default true */
  reacquire?: boolean
}

/** A coded error of snowid/redis. */
export interface SnowidRedisError extends Error {
  code:
    | 'ERR_SNOWID_LEASE_LOST'
    | 'ERR_SNOWID_REDIS_UNAVAILABLE'
    | 'ERR_SNOWID_NO_FREE_WORKER_ID'
    | 'ERR_SNOWID_LEASE_CORRUPT'
    | 'ERR_SNOWID_CLOCK_BACKWARDS'
    | 'ERR_SNOWID_INVALID_ARGUMENT'
    | 'ERR_SNOWID_INVALID_CONFIG'
}

/** A (datacenterId, workerId) slot leased from Redis, renewed in the background. */
export declare class RedisLease extends EventEmitter {
  readonly datacenterId: number
  /** The worker id in use. It changes only when the lease is lost and another slot is taken, and then together
   * with `snowflake`, at `reacquired`. */
  readonly workerId: number
  /** A generator bound to the slot. Past the lease's deadline it throws `ERR_SNOWID_LEASE_LOST`, and goes on doing
   * so after a loss until the slot is taken again. After a loss that ends in another slot, this is a new generator. */
  readonly snowflake: Snowflake
  /** Unix ms until which ids may be issued: the last confirmed expiry less `marginMs`. 0 once lost or released. */
  readonly deadline: number
  /** Stops the generator, then deletes the lease key (if still held). The slot's mark stays for the next holder. */
  release(): Promise<void>

  on(event: 'renewed', listener: (info: { deadline: number }) => void): this
  /** 'renewFailed': a renewal Redis did not answer (the lease keeps trying until its deadline), or, after a loss,
   * a failed attempt to take a slot again (`ERR_SNOWID_CLOCK_BACKWARDS` for a slot whose mark is further ahead than
   * a TTL; the attempts go on, except after `ERR_SNOWID_LEASE_CORRUPT`). */
  on(event: 'renewFailed', listener: (err: SnowidRedisError) => void): this
  on(event: 'lost', listener: (err: SnowidRedisError) => void): this
  on(event: 'reacquired', listener: (lease: RedisLease) => void): this
  once(event: 'renewed', listener: (info: { deadline: number }) => void): this
  once(event: 'renewFailed', listener: (err: SnowidRedisError) => void): this
  once(event: 'lost', listener: (err: SnowidRedisError) => void): this
  once(event: 'reacquired', listener: (lease: RedisLease) => void): this
}

/**
 * Leases a free worker id from Redis and returns the started lease. A slot with no recorded history is held for
 * one TTL before it is used; a slot with a mark is used once the clock is past it.
 * @throws `ERR_SNOWID_NO_FREE_WORKER_ID` when every slot is leased for `waitMs`.
 * @throws `ERR_SNOWID_REDIS_UNAVAILABLE` when Redis does not answer; `ERR_SNOWID_LEASE_CORRUPT` for a key that
 * holds something else than snowid wrote.
 */
export declare function acquireWorkerId(options: AcquireOptions): Promise<RedisLease>

/**
 * As `acquireWorkerId`, and configures the process's default generator (`require('snowid').nextId()`) with the
 * slot. Call it before the default generator's first id. After a loss it takes back only the same slot.
 */
export declare function configureWorkerId(options: AcquireOptions): Promise<RedisLease>
