// Typings of `snowid/postgres`, written by hand. The lease object and its events are lib/store-lease.d.ts's.
import type { LeaseOptions, SnowidLeaseError, StoreHolder, StoreLease } from './store-lease'

/**
 * A PostgreSQL client: a `pg` Pool or Client (connected), or a postgres.js `sql`. snowid runs one parameterized
 * statement at a time through `client.query(text, values)` (pg) or `sql.unsafe(text, values)` (postgres.js).
 */
export type PostgresClient =
  | { query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> }
  | { unsafe(text: string, values?: unknown[]): PromiseLike<unknown> }

export interface PostgresAcquireOptions extends LeaseOptions {
  /** The client to use. snowid does not connect or close it. */
  client: PostgresClient
  /** The lease table, `table` or `schema.table` (letters, digits and `_`; quoted, so reserved words work; no `pg_*`
   * schema such as `pg_temp`). Created on first use if missing, with a row per slot.
   * @default 'snowid_workers' */
  table?: string
}

/** A coded error of snowid/postgres. */
export type SnowidPostgresError = SnowidLeaseError

/** A (datacenterId, workerId) slot leased from a PostgreSQL table, renewed in the background. */
export declare class PostgresLease extends StoreLease {}

/**
 * Leases a free worker id from PostgreSQL and returns the started lease. A slot whose row records the store's
 * incarnation (its system identifier, WAL timeline and table oid) is used once the clock is past its mark, in one round
 * trip when it already is; one whose row records none (every row of a table just made, a row made again) or another
 * (a fresh initdb, a table made again, a promoted standby) is held for one TTL before it is used.
 * @throws `ERR_SNOWID_NO_FREE_WORKER_ID` when every slot is leased for `waitMs`.
 * @throws `ERR_SNOWID_STORE_NOT_REPLICATED` when the synchronous standby did not confirm the take's commit.
 * @throws `ERR_SNOWID_STORE_TIMEOUT` when PostgreSQL cancelled a statement stuck behind a lock (lock_timeout,
 * statement_timeout) for `waitMs`.
 * @throws `ERR_SNOWID_POSTGRES_UNAVAILABLE` when the database does not answer; `ERR_SNOWID_STORE_TABLE_INVALID` for a
 * table that is not the lease's (temporary, unlogged, other columns or key); `ERR_SNOWID_LEASE_CORRUPT` for a row
 * that holds something else than snowid wrote; `ERR_SNOWID_STORE_PERMISSION_DENIED` for a missing privilege.
 */
export declare function acquireWorkerId(options: PostgresAcquireOptions): Promise<PostgresLease>

/** As `acquireWorkerId`, and configures the process's default generator with the slot, before its first id. */
export declare function configureWorkerId(options: PostgresAcquireOptions): Promise<PostgresLease>

/** The DDL of the lease table with a row per slot of the layout, in one statement, as `snowid sql postgres` prints it. */
export declare function tableSql(table?: string, layout?: { datacenterBits?: number; workerBits?: number }): string

export type { StoreHolder } from './store-lease'

/**
 * Who holds the slots: of `options.datacenterId`, or of every datacenter of the layout when it is left out; with the
 * same client and `table` as the leases. Each slot held, with its holder's host, pid, start time and command line (null
 * when unknown), the Unix ms its TTL ends, and `live`. A holder that stopped without releasing is listed as not live
 * once its TTL has passed; one that released is not listed. It makes no table; a table of an earlier version lists its holders as unknown until a lease of this version takes a row.
 * @throws the store's `..._UNAVAILABLE` code when it does not answer; `ERR_SNOWID_INVALID_ARGUMENT` for bad options.
 */
export declare function listHolders(options: PostgresAcquireOptions): Promise<StoreHolder[]>
