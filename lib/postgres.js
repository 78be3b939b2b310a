'use strict'

// snowid/postgres: worker ids leased from PostgreSQL, for services on more than one host that already run it.
//
// Each (datacenterId, workerId) slot is a row of one table (`snowid_workers` by default). A holder's random token and
// the lease's expiry (`expires_at`, by the database's clock) say who holds the slot; `mark_ms` is the slot's
// high-water mark (Unix ms) and `clock_back` the clockBack in use. Every primitive is one SQL statement, so it is
// atomic without a transaction and works through a pool:
// - take: locks the first free row (`FOR UPDATE SKIP LOCKED`) and sets the token and the expiry;
// - renew: if the token still holds the row and it has not expired, raises the mark and extends the expiry;
// - release: if the token still holds the row, lowers the mark to the last id issued and frees the row.
//
// The lease itself (take, hold, renew, lose, take again, release) is lib/lease.js's, shared with snowid/redis.

const { StoreLease, acquire, configureDefault, codedError, readOptions } = require('./lease.js')

const DEFAULT_TABLE = 'snowid_workers'
// The mark is Unix ms, exact as a JS number; clockBack has at most 10 bits.
const MAX_MARK = Number.MAX_SAFE_INTEGER
const MAX_CLOCK_BACK = 1023

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** The table's name as SQL: each part of `name` (`table` or `schema.table`) checked, and quoted if it has capitals. */
function quoteTable(name) {
  const parts = typeof name === 'string' ? name.split('.') : []
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `table: expected a table name, or schema.table, each of letters, digits and _ (at most 63, not starting with a digit), found ${typeof name === 'string' ? JSON.stringify(name).slice(0, 80) : typeof name}`,
    )
  }
  return parts.map((p) => (/[A-Z]/.test(p) ? `"${p}"` : p)).join('.')
}

/** The DDL of the lease table, as the lease runs it on first use and `snowid sql postgres` prints it. */
function tableSql(table = DEFAULT_TABLE) {
  const t = quoteTable(table)
  return `-- snowid/postgres: one row per (datacenterId, workerId) slot. A row is held while token is set and expires_at
-- (the database's clock) is in the future. mark_ms is the slot's high-water mark in Unix ms: no id of the slot was
-- stamped after it, so the next holder starts past it. clock_back is the clockBack in use at the mark.
CREATE TABLE IF NOT EXISTS ${t} (
  datacenter_id integer NOT NULL,
  worker_id integer NOT NULL,
  token text,
  expires_at timestamptz,
  mark_ms bigint,
  clock_back integer,
  PRIMARY KEY (datacenter_id, worker_id)
);
`
}

/** Runs one parameterized statement on a `pg` Pool or Client, or a postgres.js `sql`, and resolves to its rows. */
function queryRunner(client) {
  if (typeof client === 'function' && typeof client.unsafe === 'function') {
    // postgres.js
    return async (text, params) => Array.from(await client.unsafe(text, params))
  }
  if (client && typeof client === 'object' && typeof client.query === 'function') {
    // pg: a Pool or a Client
    return async (text, params) => (await client.query(text, params)).rows
  }
  throw codedError(
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    `client: expected a pg Pool or Client, or a postgres.js sql, found ${client === null ? 'null' : typeof client}`,
  )
}

/** A PostgreSQL permission error (SQLSTATE 42501) as ERR_SNOWID_STORE_PERMISSION_DENIED; else null. */
function classify(err) {
  if (!err || err.code !== '42501') return null
  return codedError(
    Error,
    'ERR_SNOWID_STORE_PERMISSION_DENIED',
    `postgres: expected the role to have the privileges the lease needs, found: ${String(err.message).slice(0, 160)}. The lease needs USAGE on the table's schema, and SELECT, INSERT and UPDATE on the table (and CREATE on the schema, unless the table is made beforehand with snowid sql postgres)`,
    err,
  )
}

/** The PostgreSQL store of a lease: its primitives for lib/lease.js. */
function postgresStore(options, o) {
  const query = queryRunner(options.client)
  const table = options.table ?? DEFAULT_TABLE
  const t = quoteTable(table)
  const dc = o.datacenterId
  const expiry = `clock_timestamp() + $ttl * interval '1 millisecond'`.replace('$ttl', String(o.ttlMs))
  let prepared = null

  /** Creates the table when missing, and a row for every slot of the datacenter; once per lease. */
  async function prepare() {
    try {
      await query(tableSql(table), [])
    } catch (err) {
      // A role without CREATE on the schema may still use a table made beforehand; two processes creating it at
      // once may collide on the catalog (23505, 42P07), and the table is there either way.
      if (!['42501', '23505', '42P07'].includes(err && err.code)) throw err
      const [found] = await query('SELECT to_regclass($1) IS NOT NULL AS found', [t])
      if (!found || !found.found) throw err
    }
    await query(
      `INSERT INTO ${t} (datacenter_id, worker_id) SELECT $1, g FROM generate_series(0, $2 - 1) AS g ON CONFLICT DO NOTHING`,
      [dc, o.slotCount],
    )
  }

  const rowName = (workerId) => `the row (${dc}, ${workerId}) of ${table}`
  const corrupt = (workerId, found) =>
    codedError(Error, 'ERR_SNOWID_LEASE_CORRUPT', `lease: expected ${rowName(workerId)} to hold a mark_ms of Unix ms and a clock_back snowid wrote, found ${found}; the row is left as found`)

  return {
    name: 'PostgreSQL',
    unavailableCode: 'ERR_SNOWID_POSTGRES_UNAVAILABLE',
    slotName: rowName,
    classify,
    async take(token, preferred, only) {
      prepared = prepared ?? prepare().catch((err) => {
        prepared = null
        throw err
      })
      await prepared
      // The row is taken only when its mark and clockBack are ones snowid wrote; else it is reported, untouched.
      const rows = await query(
        `WITH pick AS (
           SELECT worker_id, mark_ms, clock_back FROM ${t}
           WHERE datacenter_id = $1 AND worker_id < $2
             AND (token IS NULL OR expires_at IS NULL OR expires_at <= clock_timestamp())
             AND ($4::int < 0 OR NOT $5::boolean OR worker_id = $4::int)
           ORDER BY (worker_id = $4::int) DESC, worker_id
           LIMIT 1
           FOR UPDATE SKIP LOCKED
         ), took AS (
           UPDATE ${t} AS s SET token = $3, expires_at = ${expiry}
           FROM pick
           WHERE s.datacenter_id = $1 AND s.worker_id = pick.worker_id
             AND (pick.mark_ms IS NULL OR pick.mark_ms BETWEEN 0 AND ${MAX_MARK})
             AND (pick.clock_back IS NULL OR (pick.mark_ms IS NOT NULL AND pick.clock_back BETWEEN 0 AND ${MAX_CLOCK_BACK}))
           RETURNING s.worker_id
         )
         SELECT pick.worker_id, pick.mark_ms::text AS mark, pick.clock_back::text AS clock_back,
                (SELECT count(*) FROM took)::int AS taken
         FROM pick`,
        [dc, o.slotCount, token, preferred, only],
      )
      if (rows.length === 0) return null
      const [row] = rows
      const workerId = Number(row.worker_id)
      if (Number(row.taken) !== 1) throw corrupt(workerId, `mark_ms ${row.mark} and clock_back ${row.clock_back}`)
      return { workerId, mark: row.mark === null ? undefined : Number(row.mark) }
    },
    async renew(workerId, token, until, clockBack) {
      const [row] = await query(
        `WITH cur AS (
           SELECT mark_ms, clock_back FROM ${t}
           WHERE datacenter_id = $1 AND worker_id = $2 AND token = $3 AND expires_at > clock_timestamp()
           FOR UPDATE
         ), upd AS (
           UPDATE ${t} AS s SET
             expires_at = ${expiry},
             mark_ms = CASE WHEN $4::bigint IS NULL THEN s.mark_ms ELSE GREATEST(COALESCE(s.mark_ms, 0), $4::bigint) END,
             clock_back = CASE WHEN $4::bigint > COALESCE(s.mark_ms, -1) THEN $5::int ELSE s.clock_back END
           FROM cur
           WHERE s.datacenter_id = $1 AND s.worker_id = $2
             AND (cur.mark_ms IS NULL OR cur.mark_ms BETWEEN 0 AND ${MAX_MARK})
             AND (cur.clock_back IS NULL OR cur.clock_back BETWEEN 0 AND ${MAX_CLOCK_BACK})
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM cur)::int AS held, (SELECT count(*) FROM upd)::int AS renewed,
                (SELECT mark_ms::text FROM cur) AS mark, (SELECT clock_back::text FROM cur) AS clock_back`,
        [dc, workerId, token, until, clockBack],
      )
      if (Number(row.held) === 1 && Number(row.renewed) !== 1) throw corrupt(workerId, `mark_ms ${row.mark} and clock_back ${row.clock_back}`)
      return Number(row.renewed) === 1
    },
    async release(workerId, token, last) {
      await query(
        `UPDATE ${t} SET token = NULL, expires_at = NULL,
           mark_ms = CASE WHEN $4::bigint IS NOT NULL AND mark_ms BETWEEN 0 AND ${MAX_MARK} AND $4::bigint < mark_ms
                          THEN $4::bigint ELSE mark_ms END
         WHERE datacenter_id = $1 AND worker_id = $2 AND token = $3`,
        [dc, workerId, token, last],
      )
    },
    async abandon(token) {
      await query(`UPDATE ${t} SET token = NULL, expires_at = NULL WHERE datacenter_id = $1 AND token = $2`, [dc, token])
    },
  }
}

/**
 * A worker-id slot leased from PostgreSQL. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal the
 * database did not answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a
 * slot again), 'lost' (error) and 'reacquired' (lease).
 */
class PostgresLease extends StoreLease {}

function start(options, onDefault) {
  return (async () => {
    const o = readOptions(options, ['table'])
    return acquire(postgresStore(options, o), o, PostgresLease, onDefault)
  })()
}

/**
 * Leases a free (datacenterId, workerId) slot from PostgreSQL and returns a started lease with its `snowflake`.
 * The table is created on first use. A slot with no mark is held for one TTL before it is used.
 */
function acquireWorkerId(options) {
  return start(options, null)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return start(options, configureDefault(options))
}

module.exports = { acquireWorkerId, configureWorkerId, PostgresLease, tableSql }
