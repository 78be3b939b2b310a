/** The layout and epoch `postgresFunctions` reads: what `config()` or `snowflake.config()` returns has them. */
export interface SqlLayout {
  epoch: number
  timestampBits: number
  datacenterBits: number
  workerBits: number
  clockBackBits: number
  sequenceBits: number
}

/**
 * `CREATE OR REPLACE FUNCTION` statements for PostgreSQL 14 or later that read ids of `layout`'s layout and epoch:
 * `snowid_timestamp(bigint) → timestamptz`, `snowid_datacenter_id`, `snowid_worker_id`, `snowid_clock_back` and
 * `snowid_sequence` (`bigint → integer`), and `snowid_min_id_at` / `snowid_max_id_at` (`timestamptz → bigint`), all
 * `IMMUTABLE STRICT PARALLEL SAFE`. `snowid sql postgres --functions` prints them for the configured layout.
 * @param layout - for example `require('snowid').config()`.
 * @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` when `layout` is not a whole layout.
 */
export declare function postgresFunctions(layout: SqlLayout): string

/**
 * `CREATE FUNCTION` statements for MySQL 8 or MariaDB 10.6 or later, with the names and results of
 * `postgresFunctions`' (times are `DATETIME(3)` in UTC; `snowid_min_id_at`/`snowid_max_id_at` take a `DATETIME(6)`),
 * all `DETERMINISTIC NO SQL`, for the `mysql` or `mariadb` client (they use `DELIMITER`).
 * `snowid sql mysql --functions` prints them for the configured layout.
 * @param layout - for example `require('snowid').config()`.
 * @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` when `layout` is not a whole layout.
 */
export declare function mysqlFunctions(layout: SqlLayout): string

/** Where and how `snowid_next_id()` makes ids. */
export interface GeneratorOptions {
  /** The lease table (snowid/postgres's or snowid/mysql's), schema-qualified if you like. Default `snowid_workers`. */
  table?: string
  /** The datacenter of the slot the database holds. Default: the config's `datacenterId`, else 0. */
  datacenterId?: number
  /** The worker id of the slot the database holds. Default: the layout's highest. */
  workerId?: number
  /** How far ahead of the database's clock its ids may be stamped (a clock stepped back, a full ms). Default 1000. */
  maxLeadMs?: number
  /** The app leases' TTL: how long a slot whose history may be lost is held before use. Default 10000. */
  ttlMs?: number
}

/**
 * The SQL that installs `snowid_next_id()` (and `snowid_next_id_skip(timestamptz)`, its owner's only) in PostgreSQL
 * 14 or later, for `id bigint PRIMARY KEY DEFAULT snowid_next_id()`: ids of `layout`'s layout and epoch, made on a
 * slot of snowid/postgres's lease table that the database claims for good (token `snowid-database:…`, expiry
 * `infinity`). One statement: it refuses (SQLSTATE SN004, or 42723 when installed already) or makes everything.
 * The function raises SQLSTATE SN001 when the clock is behind its last id by more than `maxLeadMs`, SN002 past
 * `expiresAt`, SN003 when its slot's row no longer says the database holds it.
 * `snowid sql postgres --generator` prints it for the configured layout.
 * @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for a layout or options that are not valid.
 */
export declare function postgresGenerator(
  layout: SqlLayout & { datacenterId?: number },
  options?: GeneratorOptions,
): string

/**
 * As `postgresGenerator`, for MariaDB 10.6 or later (MySQL 8 has no Aria engine nor `BEGIN NOT ATOMIC`), on
 * snowid/mysql's lease table, for the `mariadb` client. MariaDB allows no stored function in a `DEFAULT`: a
 * `BEFORE INSERT` trigger sets the id.
 * @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for a layout or options that are not valid.
 */
export declare function mysqlGenerator(
  layout: SqlLayout & { datacenterId?: number },
  options?: GeneratorOptions,
): string

/** A backfill: ids for past times on a slot reserved for it. */
export interface Backfill {
  /** Unix ms: the time of the backfill's start. Its ids are for times before it. */
  readonly start: number
  readonly datacenterId: number
  readonly workerId: number
  /**
   * The next id stamped with `time`: its ms, this backfill's slot, and a count of the ids made for that ms (in the
   * clockBack and sequence fields). Times must come in order (equal ones are fine).
   * @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for a time that is not a Date, whole Unix ms or
   * ISO-8601 date, before the epoch, past `expiresAt`, or before the previous one.
   * @throws {RangeError} `ERR_SNOWID_TIME_IN_FUTURE` for a time at or after `start`.
   * @throws {RangeError} `ERR_SNOWID_SEQUENCE_EXHAUSTED` past the ids one ms holds.
   */
  idAt(time: Date | number | string): bigint
}

/**
 * Ids for past times, on a slot that no live generator uses, reserved by configuration: `options` are a
 * `Snowflake`'s, with an explicit `workerId` (and `datacenterId`). The slot's host lease is taken at once.
 * @throws {TypeError} `ERR_SNOWID_INVALID_ARGUMENT` without a `workerId`.
 * @throws {Error} as `new Snowflake(options).nextId()` does (`ERR_SNOWID_WORKER_ID_IN_USE`, ...).
 */
export declare function backfill(options: import('../index').SnowflakeOptions & { workerId: number }): Backfill
