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

/** The times a take works with, all Unix ms (see `Store.take`). */
export interface StoreTakeTimes {
  /** When the take was sent: a slot whose mark is before it may be used at once. */
  now: number
  /** The mark the take raises a slot's to, as a renewal sent at `now` would. */
  until: number
  /** A slot whose mark is at or past it is skipped: the generator could not start past it. */
  limit: number
  /** The store's incarnation (`Store.incarnation`), recorded with the mark the take raises; null when unknown. */
  incarnation: string | null
  /** The holder record (JSON of the token, host, pid, since and command), written beside the token for `list`, where
   * the store has room for it. It never decides who holds: a store that cannot write it takes the slot all the same. */
  holder?: string
}

/** A slot as a store's `list` reads it (see `Store.list`). */
export interface StoreListed {
  workerId: number
  /** The token that holds the slot; null when none does (a holder record its last holder left is listed). */
  token: string | null
  /** The holder record as stored (`StoreTakeTimes.holder`); null when there is none. */
  holder: string | null
  /** Whether `token` holds the slot now, by the store's clock: its TTL has not run out. */
  held: boolean
  /** Milliseconds left of the slot's TTL, by the store's clock (negative once passed); null when it has none or the
   * store no longer keeps it. */
  remainingMs: number | null
}

/** A holder of a store's slot, as `listHolders` of snowid/redis, snowid/postgres, snowid/mysql and snowid/etcd gives it. */
export interface StoreHolder {
  datacenterId: number
  workerId: number
  /** The holder's host name (`os.hostname()`); null when unknown: a slot taken by a version that records none, or by
   * the database's own generator (`snowid sql ... --generator`). */
  host: string | null
  /** The holder's process id; null when unknown. */
  pid: number | null
  /** When the holder's process started, Unix ms; null when unknown. */
  since: number | null
  /** The holder's command line (`process.argv`, joined by spaces), at most 256 characters; null when unknown. */
  command: string | null
  /** Unix ms when the slot's TTL ends (by the store's clock, as of the listing); null when the store does not keep it
   * (a slot held for good, or a Redis key or etcd lease already gone). */
  deadline: number | null
  /** Whether the slot is held now: its TTL has not run out. A holder that stopped without releasing is listed with
   * `live: false` once its TTL has passed, until its slot is taken again; a holder that released is not listed. */
  live: boolean
}

/** A slot a take got (see `Store.take`). */
export interface StoreTaken {
  workerId: number
  /** The slot's high-water mark (Unix ms) as found; `undefined` when the slot has no history. */
  mark: number | undefined
  /** The same step raised the mark to `until`, as a renewal does (and, for a store with replicas, they acknowledged it). */
  confirmed?: boolean
  /** The slot's history may have been lost (written before a failover the store can tell of): it waits one TTL. */
  forgotten?: boolean
  /** The incarnation the slot records as found; undefined when it records none (it then waits one TTL). */
  seen?: string
}

/**
 * What a store gives lib/store-lease.js, the one lease state machine (take, hold, renew, lose, take again, release)
 * that every store module runs: snowid/redis, snowid/postgres, snowid/mysql and snowid/etcd each make one of these
 * over their client. Every call that reaches the store may reject with the client's own error; the lease turns it
 * into a coded error (`classify`, else the store's `unavailableCode`, with the client's error as its cause).
 */
export interface Store {
  /** The store's name for messages ('Redis', 'PostgreSQL', 'MySQL', 'etcd'). */
  readonly name: string
  /** The code of "the store did not answer" (`ERR_SNOWID_REDIS_UNAVAILABLE`, ...). */
  readonly unavailableCode: string
  /** How messages name a slot (a key, a row). */
  slotName(workerId: number): string
  /**
   * Takes a free slot for `token`, with a TTL, in one atomic step: `preferred` first when >= 0 (and only it when
   * `only`); then one whose mark is before `at.now`; then any other, skipping slots whose mark is at or past
   * `at.limit`. Resolves to the slot taken; else to null when none is free, or to `{ ahead }` (the earliest mark
   * skipped) when free slots were skipped. Rejects with `ERR_SNOWID_LEASE_CORRUPT` (having given the slot back) for a
   * slot whose record it cannot read.
   */
  take(
    token: string,
    preferred: number,
    only: boolean,
    at: StoreTakeTimes,
  ): Promise<StoreTaken | { ahead: number } | null>
  /**
   * If `token` still holds the slot: raises its mark to `until` (when not null) with `clockBack`, then extends the
   * TTL, in one atomic step. Resolves true, or false when the slot is no longer `token`'s. Rejects with
   * `ERR_SNOWID_LEASE_CORRUPT` for a mark it cannot read (left as found), and `ERR_SNOWID_STORE_NOT_REPLICATED` when the
   * replicas a failover could promote did not confirm the write (such a renewal never moves the deadline).
   */
  renew(
    workerId: number,
    token: string,
    until: number | null,
    clockBack: number,
    incarnation: string | null,
  ): Promise<boolean>
  /** If `token` still holds the slot: lowers its mark to `last` (when not null), then frees the slot. */
  release(workerId: number, token: string, last: number | null): Promise<unknown>
  /** Frees any slot `token` holds: sent after a take whose answer did not come in time. */
  abandon(token: string): Promise<unknown>
  /**
   * An error from the store (`err`, the client's error, of any shape) as a coded error: a permission error as
   * `ERR_SNOWID_STORE_PERMISSION_DENIED`, naming what is missing; the lease table gone as
   * `ERR_SNOWID_STORE_TABLE_MISSING` (`tableMissing`), which runs `prepare()` again before the next take; a statement
   * the server cancelled by its own lock or statement timeout as `ERR_SNOWID_STORE_TIMEOUT` (`timedOut`); else null.
   */
  classify(err: any): Error | null
  /** Whether the client was ended or closed by its owner (from the client, and `err`, its last call's error). */
  closed(err: any): boolean
  /**
   * The store's incarnation: a string that names the data the slots live in (a server's system identifier and the
   * table's, a key written once that goes only with the data), or null when it cannot be told. A store without it
   * holds every slot one TTL before use.
   */
  incarnation?(): Promise<string | null>
  /** The store's one-time setup (such as making its table), called before the first take, and again if it failed. */
  prepare?(): Promise<unknown>
  /** Why a call made for `what` got no answer in time (`err`), as a coded error, when the store can tell; else null. */
  explain?(what: string, err: any): Promise<Error | null>
  /**
   * The slots of the datacenter that are held, or that keep a holder record of a holder that did not release, for
   * `listHolders`. Makes nothing (no table, no key); a table of an earlier version, with no holder column, lists its
   * holders as unknown.
   */
  list?(): Promise<StoreListed[]>
}

/** A lease's settings, read from its options by lib/store-lease.js, as a store module's `makeStore` gets them. */
export interface LeaseSettings {
  ttlMs: number
  waitMs: number
  marginMs: number
  maxLeadMs: number
  snowflake: Record<string, unknown>
  datacenterId: number
  datacenterBits: number
  /** How many worker ids (slots) a datacenter has. */
  slotCount: number
  reacquire: boolean
  renewTimeoutMs: number
  /** How far apart renewals go, counted from the send of the last one confirmed. */
  renewEveryMs: number
  /** How soon a renewal that failed is tried again. */
  renewRetryMs: number
  takeTimeoutMs: number
}

// What the store modules take from lib/store-lease.js. It is reached from no entry of the package: a store module is
// typed against it (`npm run test:types` checks lib/redis.js, etcd.js, postgres.js and mysql.js with it).

/**
 * Reads a lease's options (the store's own named in `storeOptions`), makes its store with `makeStore`, and acquires
 * a slot; with `configure`, the default generator is configured with it.
 */
export declare function startLease<O extends LeaseOptions, L extends StoreLease>(
  options: O,
  storeOptions: string[],
  makeStore: (options: O, o: LeaseSettings) => Store,
  Lease: new (...args: any[]) => L,
  configure: boolean,
): Promise<L>

/**
 * The holders of a store's slots: of `options.datacenterId`, or of every datacenter of the layout when it is left out;
 * `makeStore` is called once per datacenter, and its store's `list` gives the records read into `StoreHolder`s.
 */
export declare function listHolders<O extends LeaseOptions>(
  options: O,
  storeOptions: string[],
  makeStore: (options: O, o: LeaseSettings) => Store,
): Promise<StoreHolder[]>

/** An error of class `Class` with a `code` (and a `cause`, when given). */
export declare function codedError<E extends Error>(
  Class: new (message?: string) => E,
  code: string,
  message: string,
  cause?: unknown,
): E & { code: string }

/** `ERR_SNOWID_STORE_TABLE_MISSING`: the lease table `table` of the store `name` is gone (`err`, the client's error). */
export declare function tableMissing(name: string, table: string, err: unknown): Error & { code: string }

/**
 * `ERR_SNOWID_STORE_TIMEOUT`: the store `name` cancelled a statement on `table` by its own lock or statement timeout
 * (`err`); `where` says how to see who holds the lock.
 */
export declare function timedOut(name: string, table: string, err: unknown, where: string): Error & { code: string }
