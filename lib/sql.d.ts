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
