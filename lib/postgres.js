'use strict'

// snowid/postgres: worker ids leased from PostgreSQL, for services on more than one host that already run it.
//
// Each (datacenterId, workerId) slot is a row of one table (`snowid_workers` by default). A holder's random token and
// the lease's expiry (`expires_at`, by the database's clock) say who holds the slot; `mark_ms` is the slot's
// high-water mark (Unix ms) and `clock_back` the clockBack in use. Every primitive is one SQL statement, so it is
// atomic without a transaction and works through a pool:
// - take: locks a free row (`FOR UPDATE SKIP LOCKED`), sets the token and the expiry, and raises the mark as a
//   renewal does, so that a slot whose mark is behind the clock is used after this one round trip;
// - renew: if the token still holds the row and it has not expired, raises the mark and extends the expiry;
// - release: if the token still holds the row, lowers the mark to the last id issued and frees the row.
//
// The lease itself (take, hold, renew, lose, take again, release) is lib/store-lease.js's, shared with snowid/redis.
//
// Incarnation. Every take and every renewal that raises a mark records in `written_on` the store's incarnation: the
// server's system identifier (a fresh initdb has a new one), its WAL timeline (a promoted standby runs on a new one,
// and an asynchronous one may lack the old primary's last commits) and the table's oid (a table dropped and made
// again has a new one). A row that records another incarnation, or none, may have lost its history, and is held one
// TTL before use, whatever its mark says, so that every holder of the data it replaced has passed its deadline
// (lib/store-lease.js compares them). The table is made with a row for every slot (mark_ms 0, written_on NULL), so a
// table made again, even while held, holds every slot one TTL; so does a row made again after a hand deletion.
//
// Stuck statements. Every statement of a take, a renewal or a release runs under SET LOCAL lock_timeout and
// statement_timeout, a little under the time the lease waits for it, so that PostgreSQL cancels a statement stuck
// behind a lock (LOCK TABLE, a long ALTER TABLE) rather than running it after the lease gave up:
// ERR_SNOWID_STORE_TIMEOUT. A table dropped under the lease is ERR_SNOWID_STORE_TABLE_MISSING, and the next take
// makes it again.
//
// Failover. With synchronous replication a commit waits for the standby; a wait cancelled by an operator commits
// locally only, and PostgreSQL says so in a warning: that renewal or take does not count
// (ERR_SNOWID_STORE_NOT_REPLICATED), as pg reports warnings (postgres.js gives them only to its own onnotice).

const {
  StoreLease,
  startLease,
  listHolders: listStoreHolders,
  codedError,
  tableMissing,
  timedOut,
} = require('./store-lease.js')

const DEFAULT_TABLE = 'snowid_workers'
// The mark is Unix ms, exact as a JS number; clockBack has at most 10 bits.
const MAX_MARK = Number.MAX_SAFE_INTEGER
const MAX_CLOCK_BACK = 1023

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * The table's name as SQL: each part of `name` (`table` or `schema.table`) checked and double-quoted, so that
 * reserved words (`user`, `order`) name a table like any other. Names are case-sensitive, as quoted names are.
 * PostgreSQL's own names (`pg_*`, `information_schema`) are refused: `pg_temp` would give every connection a table
 * of its own, and a name that the system catalog shadows would not be this table.
 */
function quoteTable(name) {
  const parts = typeof name === 'string' ? name.split('.') : []
  const found = typeof name === 'string' ? JSON.stringify(name).slice(0, 80) : typeof name
  if (parts.length < 1 || parts.length > 2 || !parts.every(p => IDENTIFIER.test(p))) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `table: expected a table name, or schema.table, each of letters, digits and _ (at most 63, not starting with a digit), found ${found}`,
    )
  }
  if (parts.some(p => /^pg_/i.test(p) || p.toLowerCase() === 'information_schema')) {
    throw codedError(
      RangeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `table: expected a permanent table outside PostgreSQL's own schemas (no part starting with pg_, such as pg_temp, nor information_schema), found ${found}`,
    )
  }
  return parts.map(p => `"${p}"`).join('.')
}

// The lease table's columns; `verify` checks a table against them, as format_type names the types.
const COLUMNS = [
  ['datacenter_id', 'integer NOT NULL', 'integer not null'],
  ['worker_id', 'integer NOT NULL', 'integer not null'],
  ['token', 'text', 'text'],
  ['expires_at', 'timestamptz', 'timestamp with time zone'],
  ['mark_ms', 'bigint', 'bigint'],
  ['clock_back', 'integer', 'integer'],
  ['written_on', 'text', 'text'],
  // Who holds the row (lib/store-lease.js's holder record), for listHolders only; a table without it still works.
  ['holder', 'text', 'text', 'optional'],
]
// The server history a write is made on: the system identifier and the WAL timeline being written (a promoted
// standby's is new). pg_control_system() and pg_walfile_name() need no privilege. The table's oid follows it in the
// incarnation.
const ORIGIN = `((SELECT system_identifier::text FROM pg_control_system()) || ':' || ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int)`
// What PostgreSQL warns when a commit's wait for its synchronous standby is cancelled (pg_cancel_backend, a
// statement timeout, a terminated backend): the transaction committed here, and may not have reached the standby.
const SYNC_CANCELLED = /canceling (the )?wait for synchronous replication/i
const KEY = 'datacenter_id, worker_id'

/** `CREATE TABLE` of the lease table named `t` (quoted), indented by `pad`. */
const createTable = (t, pad = '') =>
  [`CREATE TABLE ${t} (`, ...COLUMNS.map(([name, type]) => `  ${name} ${type},`), `  PRIMARY KEY (${KEY})`, ');']
    .map(line => pad + line)
    .join('\n')

/**
 * `INSERT` of a row with mark_ms 0 (never held) for every slot of datacenters `dcLo..dcHi`, `slots` each, in no
 * incarnation (written_on NULL): a table made again under live holders looks like a new one, so every row of a new
 * table is held one TTL before its first use.
 */
const insertFresh = (t, dcLo, dcHi, slots) =>
  `INSERT INTO ${t} (datacenter_id, worker_id, mark_ms) SELECT d, w, 0 FROM generate_series(${dcLo}, ${dcHi}) AS d, generate_series(0, ${slots - 1}) AS w;`

const layoutNumber = (layout, key, fallback) => {
  const v = layout && layout[key] !== undefined ? layout[key] : fallback
  if (!Number.isInteger(v) || v < 0 || v > 16) {
    throw codedError(
      RangeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `layout.${key}: expected an integer from 0 to 16, found ${typeof v === 'number' ? v : typeof v}`,
    )
  }
  return v
}

/**
 * The DDL of the lease table, as `snowid sql postgres` prints it: one statement (a DO block, so that no transaction
 * is left open when it fails) that makes the table and a row for every slot of the layout (`datacenterBits` and
 * `workerBits`, by default 3 and 5), never held (mark_ms 0) and in no incarnation, so that each slot is held one TTL
 * before its first use. It fails on a table that already exists, making nothing.
 */
function tableSql(table = DEFAULT_TABLE, layout = {}) {
  const t = quoteTable(table)
  const dcs = 2 ** layoutNumber(layout, 'datacenterBits', 3)
  const slots = 2 ** layoutNumber(layout, 'workerBits', 5)
  return `-- snowid/postgres: one row per (datacenterId, workerId) slot. A row is held while token is set and expires_at
-- (the database's clock) is in the future. mark_ms is the slot's high-water mark in Unix ms: no id of the slot was
-- stamped after it, so the next holder starts past it. clock_back is the clockBack in use at the mark. written_on is
-- the incarnation the mark was written in (the server's system identifier, its WAL timeline and the table's oid): a
-- row written in another (before a standby's promotion, a fresh initdb, a table made again) or in none (every row of
-- a new table, a row made again after a hand deletion) is held one TTL before use. One statement: the rows come with
-- the table or not at all, and it fails on a table that already exists.
DO $snowid$ BEGIN
${createTable(t, '  ')}
  ${insertFresh(t, 0, dcs - 1, slots)}
END $snowid$;
`
}

/** The rows of the last statement of what a pg or postgres.js query gave (several statements give one result each). */
const lastRows = (result, pg) => {
  const last = Array.isArray(result) && (pg || Array.isArray(result[0])) ? result.at(-1) : result
  return Array.from(pg ? last.rows : last)
}

/**
 * Runs one parameterized statement on a `pg` Pool or Client, or a postgres.js `sql`, and resolves to its rows (of the
 * last statement, when `text` has several and no parameters). With `watch`, a pg client's warnings during the
 * statement are read: a cancelled wait for the synchronous standby throws ERR_SNOWID_STORE_NOT_REPLICATED once the
 * statement is done (`watch` names what for).
 */
function queryRunner(client) {
  if (typeof client === 'function' && typeof client.unsafe === 'function') {
    // postgres.js
    return async (text, params) => lastRows(await client.unsafe(text, params), false)
  }
  if (client && typeof client === 'object' && typeof client.query === 'function') {
    // pg: a Pool (a connection of its own for the statement, so that its warnings are this statement's) or a Client
    const pool = 'totalCount' in client && typeof client.connect === 'function'
    return async (text, params, watch) => {
      if (!watch || (!pool && typeof client.on !== 'function')) return lastRows(await client.query(text, params), true)
      const c = pool ? await client.connect() : client
      const warnings = []
      const onNotice = n => {
        if (SYNC_CANCELLED.test(String(n && n.message))) warnings.push(n)
      }
      // A connection that breaks while checked out emits 'error' on its client (the statement fails too): the
      // client is then given back broken, so that the pool drops it.
      let broken
      const onError = err => {
        broken = err
      }
      c.on('notice', onNotice)
      if (pool) c.on('error', onError)
      try {
        const rows = lastRows(await c.query(text, params), true)
        if (warnings.length) {
          throw codedError(
            Error,
            'ERR_SNOWID_STORE_NOT_REPLICATED',
            `${watch}: expected the synchronous standby to confirm the commit, found that the synchronous standby did not confirm: its wait was cancelled, and PostgreSQL warned "${String(warnings[0].message).slice(0, 160)}" (committed on the primary only, which a failover can forget, so it does not count)`,
          )
        }
        return rows
      } finally {
        c.off('notice', onNotice)
        if (pool) {
          c.off('error', onError)
          c.release(broken)
        }
      }
    }
  }
  throw codedError(
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    `client: expected a pg Pool or Client, or a postgres.js sql, found ${client === null ? 'null' : typeof client}`,
  )
}

/** `value` as an SQL literal, for the statements `bounded` inlines: only what the lease passes (numbers, tokens, names). */
function literal(value) {
  if (value === null || value === undefined) return 'NULL'
  if (typeof value === 'boolean') return String(value)
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value)
  if (typeof value === 'string' && /^[A-Za-z0-9_:."-]*$/.test(value)) return `'${value}'`
  throw codedError(
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    `postgres: expected a value the lease makes, found ${typeof value}`,
  )
}

/**
 * One statement (`text`, with `$n` parameters) that PostgreSQL cancels once it has waited most of `ms` for a lock, or
 * run `ms`:
 * SET LOCAL bounds the implicit transaction of a multi-statement simple query, so the settings end with it and never
 * reach the caller's connection, and the whole is one message, so nothing of the caller's runs between its parts.
 */
function bounded(text, params, ms) {
  const sql = text.replace(/\$(\d+)/g, (_, n) => literal(params[Number(n) - 1]))
  return `SET LOCAL lock_timeout = ${Math.max(Math.floor(ms * 0.8), 1)}; SET LOCAL statement_timeout = ${ms}; ${sql}`
}

/** What is wrong with the table `verify` found (a row of pg_class, or none), or null when it is the lease's. */
function tableProblem(found) {
  if (!found) return 'no table by that name after making it'
  if (found.kind !== 'r') return `a relation of kind ${JSON.stringify(found.kind)} (a view, a partitioned table, ...)`
  if (found.persistence === 't') return 'a temporary table (each connection would have its own)'
  if (found.persistence !== 'p') return 'an unlogged table (a crash empties it, marks and all)'
  const have = new Map(
    String(found.columns || '')
      .split(', ')
      .filter(Boolean)
      .map(c => [c.slice(0, c.indexOf(' ')), c.slice(c.indexOf(' ') + 1)]),
  )
  const wrong = [
    ...COLUMNS.filter(([n, , , optional]) => !have.has(n) && !optional).map(([n]) => `no ${n}`),
    ...COLUMNS.filter(([n, , type]) => have.has(n) && have.get(n) !== type).map(([n]) => `${n} ${have.get(n)}`),
    ...[...have.keys()].filter(n => !COLUMNS.some(([c]) => c === n)).map(n => `an extra ${n}`),
  ]
  if (wrong.length) return `columns with ${wrong.join(', ')}`
  if (found.primary_key !== KEY) return found.primary_key ? `the primary key (${found.primary_key})` : 'no primary key'
  return null
}

/**
 * A PostgreSQL error as the coded error it means, else null: a permission error (SQLSTATE 42501) as
 * ERR_SNOWID_STORE_PERMISSION_DENIED; the lease table gone (42P01) as ERR_SNOWID_STORE_TABLE_MISSING; a statement
 * cancelled by lock_timeout (55P03) or statement_timeout (57014) as ERR_SNOWID_STORE_TIMEOUT.
 */
function classify(err, table) {
  if (err && err.code === '42P01') return tableMissing('postgres', table, err)
  if (err && (err.code === '55P03' || (err.code === '57014' && /statement timeout/i.test(String(err.message)))))
    return timedOut('postgres', table, err, 'pg_locks')
  if (!err || err.code !== '42501') return null
  return codedError(
    Error,
    'ERR_SNOWID_STORE_PERMISSION_DENIED',
    `postgres: expected the role to have the privileges the lease needs, found: ${String(err.message).slice(0, 160)}. The lease needs USAGE on the table's schema, and SELECT, INSERT and UPDATE on the table (and CREATE on the schema, unless the table is made beforehand with snowid sql postgres)`,
    err,
  )
}

/** Whether a pg Pool or Client, or a postgres.js sql, was ended by its owner; `err` is the error of its last call. */
function closed(client, err) {
  if (client && (client.ending === true || client.ended === true || client._ending === true)) return true
  const code = err && err.code
  if (code === 'CONNECTION_ENDED' || code === 'CONNECTION_DESTROYED') return true
  return /Cannot use a pool after calling end|Client was closed and is not queryable/.test(String(err && err.message))
}

// More slots than this are made with the table only for the datacenter of the lease that makes it.
const MAX_FRESH_ROWS = 65536

/**
 * The PostgreSQL store of a lease: its primitives for lib/store-lease.js.
 * @returns {import('./store-lease').Store}
 */
function postgresStore(options, o) {
  const query = queryRunner(options.client)
  const table = options.table ?? DEFAULT_TABLE
  const t = quoteTable(table)
  const dc = o.datacenterId
  const expiry = `clock_timestamp() + $ttl * interval '1 millisecond'`.replace('$ttl', String(o.ttlMs))
  // How long PostgreSQL lets a statement wait and run: a little under the time the lease waits for its answer.
  const takeMs = Math.floor(o.takeTimeoutMs * 0.8)
  const renewMs = Math.max(Math.floor(o.renewTimeoutMs * 0.8), 10)
  const giveBackMs = 4000
  const timed = (ms, text, params, watch) => query(bounded(text, params, ms), [], watch)
  // Whether the table has the holder column, as the last prepare() found.
  let holderColumn = false

  /**
   * Makes the table when missing, with a fresh row for every slot (of every datacenter, when they are not too many),
   * in one statement; then checks the table, and adds rows (with no mark) for slots it lacks. Once per lease.
   */
  async function prepare() {
    const everyDc = 2 ** o.datacenterBits * o.slotCount <= MAX_FRESH_ROWS
    const [lo, hi] = everyDc ? [0, 2 ** o.datacenterBits - 1] : [dc, dc]
    try {
      await query(
        `DO $snowid$ BEGIN
  IF to_regclass('${t}') IS NULL THEN
${createTable(t, '    ')}
    ${insertFresh(t, lo, hi, o.slotCount)}
  END IF;
END $snowid$`,
        [],
      )
    } catch (err) {
      // Two processes making the table at once collide on the catalog (23505, 42P07, or 42710 for its row type); it
      // is there either way.
      if (!['23505', '42P07', '42710'].includes(err && err.code)) throw err
    }
    holderColumn = await verify()
    if (!holderColumn) {
      // A table made by an earlier version: the holder column is added when the role may (it owns the table), waiting
      // at most 400 ms for the table's lock, since the statements of other holders queue behind it; else the lease
      // goes on without recording its holders.
      try {
        await timed(500, `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS holder text`, [])
        holderColumn = true
      } catch {
        holderColumn = false
      }
    }
    await timed(
      takeMs,
      `INSERT INTO ${t} (datacenter_id, worker_id) SELECT $1, g FROM generate_series(0, $2 - 1) AS g ON CONFLICT DO NOTHING`,
      [dc, o.slotCount],
    )
  }

  /**
   * Checks that the table the name leads to is a permanent table with the lease's columns and primary key; resolves
   * to whether it has the holder column.
   */
  async function verify() {
    const [found] = await query(
      `SELECT c.relkind::text AS kind, c.relpersistence::text AS persistence,
         (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY a.attnum)
            FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
         (SELECT string_agg(a.attname, ', ' ORDER BY k.i)
            FROM pg_index x CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, i)
            JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
            WHERE x.indrelid = c.oid AND x.indisprimary) AS primary_key
       FROM pg_class c WHERE c.oid = to_regclass($1)`,
      [t],
    )
    const problem = tableProblem(found)
    if (problem) {
      // A table made by an earlier version lacks only written_on, which can be added to it.
      const hint =
        problem === 'columns with no written_on' ? `; add it with ALTER TABLE ${t} ADD COLUMN written_on text` : ''
      throw codedError(
        Error,
        'ERR_SNOWID_STORE_TABLE_INVALID',
        `postgres: expected ${table} to be a permanent table with the columns and primary key (${KEY}) that snowid sql postgres prints, found ${problem}`.slice(
          0,
          400,
        ) + hint,
      )
    }
    return /(^|, )holder /.test(String(found.columns))
  }

  const rowName = workerId => `the row (${dc}, ${workerId}) of ${table}`
  const corrupt = (workerId, found) =>
    codedError(
      Error,
      'ERR_SNOWID_LEASE_CORRUPT',
      `lease: expected ${rowName(workerId)} to hold a mark_ms of Unix ms and a clock_back snowid wrote, found ${found}; the row is left as found`,
    )

  return {
    name: 'PostgreSQL',
    unavailableCode: 'ERR_SNOWID_POSTGRES_UNAVAILABLE',
    slotName: rowName,
    classify: err => classify(err, table),
    closed: err => closed(options.client, err),
    /**
     * Why a statement got no answer in time, when PostgreSQL can tell: sessions of this role waiting for the
     * synchronous standby (wait event SyncRep) mean that the primary is up and its standby does not confirm.
     */
    async explain(what, err) {
      const [row] = await query(
        `SELECT count(*)::int AS waiting, current_setting('synchronous_standby_names') AS names
         FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND usename = current_user`,
        [],
      )
      if (!row || Number(row.waiting) === 0) return null
      return codedError(
        Error,
        'ERR_SNOWID_STORE_NOT_REPLICATED',
        `${what}: expected the synchronous standby to confirm the commit, found that the synchronous standby did not confirm it (${String(err && err.message)}; ${row.waiting} session${Number(row.waiting) === 1 ? '' : 's'} of this role wait in SyncRep, synchronous_standby_names is ${JSON.stringify(String(row.names)).slice(0, 80)}). PostgreSQL is up: check the standby and its link`,
        err,
      )
    },
    prepare,
    /** The system identifier, the WAL timeline and the table's oid, as `sysid:timeline:oid`; null when there is no table. */
    async incarnation() {
      const [row] = await timed(takeMs, `SELECT ${ORIGIN} || ':' || to_regclass($1)::oid::text AS incarnation`, [t])
      return row ? row.incarnation : null
    },
    async take(token, preferred, only, { now, until, limit, incarnation, holder }) {
      // The holder record goes in hex, as the statement inlines its parameters (see `bounded`).
      const record = holderColumn && holder ? Buffer.from(holder, 'utf8').toString('hex') : null
      const setHolder = record === null ? '' : `, holder = convert_from(decode($10::text, 'hex'), 'UTF8')`
      // A free row is taken only when its mark and clockBack are ones snowid wrote; else it is reported, untouched.
      // Rows whose mark is at or past `limit` are skipped: the earliest such mark is returned when none is taken.
      const free = `datacenter_id = $1 AND worker_id < $2
             AND (token IS NULL OR expires_at IS NULL OR expires_at <= clock_timestamp())
             AND ($4::int < 0 OR NOT $5::boolean OR worker_id = $4::int)`
      const rows = await timed(
        takeMs,
        `WITH pick AS (
           SELECT worker_id, mark_ms, clock_back, written_on FROM ${t}
           WHERE ${free} AND (mark_ms IS NULL OR mark_ms < $7::bigint OR mark_ms NOT BETWEEN 0 AND ${MAX_MARK})
           ORDER BY (worker_id = $4::int) DESC, (mark_ms IS NOT NULL AND mark_ms BETWEEN 0 AND $6::bigint) DESC, worker_id
           LIMIT 1
           FOR UPDATE SKIP LOCKED
         ), took AS (
           UPDATE ${t} AS s SET token = $3, expires_at = ${expiry},
             mark_ms = GREATEST(COALESCE(s.mark_ms, 0), $8::bigint),
             clock_back = CASE WHEN $8::bigint > COALESCE(s.mark_ms, -1) THEN 0 ELSE s.clock_back END,
             written_on = $9::text${setHolder}
           FROM pick
           WHERE s.datacenter_id = $1 AND s.worker_id = pick.worker_id
             AND (pick.mark_ms IS NULL OR pick.mark_ms BETWEEN 0 AND ${MAX_MARK})
             AND (pick.clock_back IS NULL OR (pick.mark_ms IS NOT NULL AND pick.clock_back BETWEEN 0 AND ${MAX_CLOCK_BACK}))
           RETURNING s.worker_id
         )
         SELECT pick.worker_id, pick.mark_ms::text AS mark, pick.clock_back::text AS clock_back,
                (SELECT count(*) FROM took)::int AS taken, pick.written_on AS seen,
                CASE WHEN pick.worker_id IS NULL THEN (SELECT min(mark_ms)::text FROM ${t} WHERE ${free} AND mark_ms >= $7::bigint) END AS ahead
         FROM (SELECT 1) AS one LEFT JOIN pick ON true`,
        [dc, o.slotCount, token, preferred, only, now, limit, until, incarnation, record],
        'acquire',
      )
      const [row] = rows
      if (!row || row.worker_id === null) return row && row.ahead !== null ? { ahead: Number(row.ahead) } : null
      const workerId = Number(row.worker_id)
      if (Number(row.taken) !== 1) throw corrupt(workerId, `mark_ms ${row.mark} and clock_back ${row.clock_back}`)
      const mark = row.mark === null ? undefined : Number(row.mark)
      return { workerId, mark, confirmed: true, seen: row.seen ?? undefined }
    },
    async renew(workerId, token, until, clockBack, incarnation) {
      const [row] = await timed(
        renewMs,
        `WITH cur AS (
           SELECT mark_ms, clock_back FROM ${t}
           WHERE datacenter_id = $1 AND worker_id = $2 AND token = $3 AND expires_at > clock_timestamp()
           FOR UPDATE
         ), upd AS (
           UPDATE ${t} AS s SET
             expires_at = ${expiry},
             mark_ms = CASE WHEN $4::bigint IS NULL THEN s.mark_ms ELSE GREATEST(COALESCE(s.mark_ms, 0), $4::bigint) END,
             clock_back = CASE WHEN $4::bigint > COALESCE(s.mark_ms, -1) THEN $5::int ELSE s.clock_back END,
             written_on = CASE WHEN $4::bigint IS NULL THEN s.written_on ELSE $6::text END
           FROM cur
           WHERE s.datacenter_id = $1 AND s.worker_id = $2
             AND (cur.mark_ms IS NULL OR cur.mark_ms BETWEEN 0 AND ${MAX_MARK})
             AND (cur.clock_back IS NULL OR cur.clock_back BETWEEN 0 AND ${MAX_CLOCK_BACK})
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM cur)::int AS held, (SELECT count(*) FROM upd)::int AS renewed,
                (SELECT mark_ms::text FROM cur) AS mark, (SELECT clock_back::text FROM cur) AS clock_back`,
        [dc, workerId, token, until, clockBack, incarnation],
        'renew',
      )
      if (Number(row.held) === 1 && Number(row.renewed) !== 1)
        throw corrupt(workerId, `mark_ms ${row.mark} and clock_back ${row.clock_back}`)
      return Number(row.renewed) === 1
    },
    async release(workerId, token, last) {
      await timed(
        giveBackMs,
        `UPDATE ${t} SET token = NULL, expires_at = NULL,
           mark_ms = CASE WHEN $4::bigint IS NOT NULL AND mark_ms BETWEEN 0 AND ${MAX_MARK} AND $4::bigint < mark_ms
                          THEN $4::bigint ELSE mark_ms END
         WHERE datacenter_id = $1 AND worker_id = $2 AND token = $3`,
        [dc, workerId, token, last],
      )
    },
    /** Every row of the datacenter that has a token: held while its expiry is ahead by the database's clock. */
    async list() {
      const select = holder => `SELECT worker_id, token, ${holder} AS holder,
           COALESCE(expires_at > clock_timestamp(), false) AS held,
           CASE WHEN isfinite(expires_at) THEN round(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint::text END AS remaining
         FROM ${t} WHERE datacenter_id = $1 AND token IS NOT NULL ORDER BY worker_id`
      let rows
      try {
        rows = await timed(giveBackMs, select('holder'), [dc])
      } catch (err) {
        // A table made by an earlier version, which no lease of this one has taken from yet.
        if (!(err && err.code === '42703')) throw err
        rows = await timed(giveBackMs, select('NULL::text'), [dc])
      }
      return rows.map(r => ({
        workerId: Number(r.worker_id),
        token: r.token,
        holder: r.holder,
        held: r.held === true,
        remainingMs: r.remaining === null ? null : Number(r.remaining),
      }))
    },
    async abandon(token) {
      await timed(
        giveBackMs,
        `UPDATE ${t} SET token = NULL, expires_at = NULL WHERE datacenter_id = $1 AND token = $2`,
        [dc, token],
      )
    },
  }
}

/**
 * A worker-id slot leased from PostgreSQL. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal the
 * database did not answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a
 * slot again), 'lost' (error) and 'reacquired' (lease).
 */
class PostgresLease extends StoreLease {}

/**
 * Leases a free (datacenterId, workerId) slot from PostgreSQL and returns a started lease with its `snowflake`.
 * The table is created on first use. A slot with no mark is held for one TTL before it is used.
 */
function acquireWorkerId(options) {
  return startLease(options, ['table'], postgresStore, PostgresLease, false)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return startLease(options, ['table'], postgresStore, PostgresLease, true)
}

/**
 * The holders of the slots in PostgreSQL (of `options.datacenterId`, else of every datacenter): see
 * lib/postgres.d.ts. Makes no table. A holder that stopped without releasing stays listed, not live, until a take of
 * its row.
 */
function listHolders(options) {
  return listStoreHolders(options, ['table'], postgresStore)
}

module.exports = { acquireWorkerId, configureWorkerId, listHolders, PostgresLease, tableSql }
// For snowid/sql's generator, which names the same table: not part of the public exports.
module.exports[Symbol.for('snowid.postgres.quoteTable')] = quoteTable
