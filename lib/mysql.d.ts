// Typings of `snowid/mysql`, written by hand. The lease object and its events are lib/store-lease.d.ts's.
import type { LeaseOptions, SnowidLeaseError, StoreHolder, StoreLease } from './store-lease'

/**
 * A mysql2 client: a Pool or a Connection, from `mysql2` or `mysql2/promise`. snowid runs one statement at a time
 * through `client.query(text, values)`, and never opens a transaction on it.
 */
export type MysqlClient = { query(text: string, values?: unknown[], ...rest: unknown[]): unknown }

export interface MysqlAcquireOptions extends LeaseOptions {
  /** The client to use. snowid does not connect or close it. */
  client: MysqlClient
  /** The lease table, `table` or `database.table` (letters, digits and `_`; quoted, so reserved words work). Created
   * on first use if missing, with a row per slot.
   * @default 'snowid_workers' */
  table?: string
}

/** A coded error of snowid/mysql. */
export type SnowidMysqlError = SnowidLeaseError

/** A (datacenterId, workerId) slot leased from a MySQL or MariaDB table, renewed in the background. */
export declare class MysqlLease extends StoreLease {}

/**
 * Leases a free worker id from MySQL 8 or MariaDB 10.6+ and returns the started lease. A slot whose row records the
 * store's incarnation (the server's identity and the table's) is used once the clock is past its mark; one whose row
 * records none (every row of a table just made, a row made again) or another (another server at the address, a table
 * made again, a promoted replica) is held for one TTL before it is used.
 * @throws `ERR_SNOWID_NO_FREE_WORKER_ID` when every slot is leased for `waitMs`.
 * @throws `ERR_SNOWID_STORE_TIMEOUT` when the server cancelled a statement stuck behind a lock for `waitMs`.
 * @throws `ERR_SNOWID_MYSQL_UNAVAILABLE` when the database does not answer; `ERR_SNOWID_STORE_TABLE_INVALID` for a
 * table that is not the lease's; `ERR_SNOWID_LEASE_CORRUPT` for a row that holds something else than snowid wrote;
 * `ERR_SNOWID_STORE_PERMISSION_DENIED` for a missing privilege.
 */
export declare function acquireWorkerId(options: MysqlAcquireOptions): Promise<MysqlLease>

/** As `acquireWorkerId`, and configures the process's default generator with the slot, before its first id. */
export declare function configureWorkerId(options: MysqlAcquireOptions): Promise<MysqlLease>

/** The DDL of the lease table with a row per slot of the layout, as `snowid sql mysql` prints it. */
export declare function tableSql(table?: string, layout?: { datacenterBits?: number; workerBits?: number }): string

export type { StoreHolder } from './store-lease'

/**
 * Who holds the slots: of `options.datacenterId`, or of every datacenter of the layout when it is left out; with the
 * same client and `table` as the leases. Each slot held, with its holder's host, pid, start time and command line (null
 * when unknown), the Unix ms its TTL ends, and `live`. A holder that stopped without releasing is listed as not live
 * once its TTL has passed; one that released is not listed. It makes no table; a table of an earlier version lists its holders as unknown until a lease of this version takes a row.
 * @throws the store's `..._UNAVAILABLE` code when it does not answer; `ERR_SNOWID_INVALID_ARGUMENT` for bad options.
 */
export declare function listHolders(options: MysqlAcquireOptions): Promise<StoreHolder[]>
