'use strict'

// snowid/mysql: worker ids leased from MySQL 8 or MariaDB 10.6+ (InnoDB), through mysql2, for services on more than
// one host that already run one.
//
// Each (datacenterId, workerId) slot is a row of one table (`snowid_workers` by default). A holder's random token and
// the lease's expiry (`expires_ms`, Unix ms by the database's clock) say who holds the slot; `mark_ms` is the slot's
// high-water mark (Unix ms) and `clock_back` the clockBack in use. Every primitive is single statements, each atomic
// on its own, so it works through a Pool or a Connection and never opens a transaction on the caller's connection:
// - take: one UPDATE claims a free row (ORDER BY ... LIMIT 1: InnoDB locks the rows it reads, so two takes never
//   claim the same row), then a SELECT by the token reads the mark of the row claimed;
// - renew: if the token still holds the row and it has not expired, raises the mark and extends the expiry;
// - release: if the token still holds the row, lowers the mark to the last id issued and frees the row.
//
// MySQL cannot make a table and its rows in one transaction (DDL commits), but CREATE TABLE ... SELECT makes both in
// one statement that no other session sees half done. Rows made so are never held (mark_ms 0) and in no incarnation;
// rows made later (a hand deletion, a datacenter or slot the table did not have) have no mark (NULL).
//
// Incarnation. Every write that raises a mark records in `written_on` the store's incarnation, a 60-bit hash of the
// server's identity (@@server_id, distinct for every server of a replication topology, and MySQL's @@server_uuid,
// made with its data directory) and the table's (its CREATE_TIME, and InnoDB's table id where information_schema
// shows it). A row that records another incarnation (a promoted replica, which may lack the old primary's last
// commits; another server at the address; a table dropped and made again, or rebuilt) or none (every row of a table
// just made) may have lost its history, and is held one TTL before use, whatever its mark says (lib/store-lease.js
// compares them). The row-based binary log (the default, and what MIXED uses for a statement with a value the
// primary chose) carries the value the primary wrote.
//
// Stuck statements. Every statement runs under the server's own timeouts, a little under the time the lease waits for
// it: lock_wait_timeout and innodb_lock_wait_timeout (a LOCK TABLES, a long ALTER TABLE, a row lock) and MariaDB's
// max_statement_time, set for that statement alone (SET STATEMENT ... FOR on MariaDB, a SET_VAR hint on MySQL):
// ERR_SNOWID_STORE_TIMEOUT. A table dropped under the lease is ERR_SNOWID_STORE_TABLE_MISSING, and the next take
// makes it again.
//
// The lease itself (take, hold, renew, lose, take again, release) is lib/store-lease.js's, shared with snowid/redis and
// snowid/postgres.

const { createHash } = require('node:crypto')
const {
  StoreLease,
  startLease,
  listHolders: listStoreHolders,
  codedError,
  tableMissing,
  timedOut,
} = require('./store-lease.js')

const DEFAULT_TABLE = 'snowid_workers'
const MAX_MARK = Number.MAX_SAFE_INTEGER
const MAX_CLOCK_BACK = 1023
// More slots than this are made with the table only for the datacenter of the lease that makes it.
const MAX_FRESH_ROWS = 65536

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
const SYSTEM_SCHEMAS = ['mysql', 'information_schema', 'performance_schema', 'sys']

// Unix ms by the database's clock, whatever the session's time zone: UTC_TIMESTAMP is UTC, and TIMESTAMPDIFF
// between two DATETIMEs is plain arithmetic.
const NOW_MS = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"

/**
 * The table's name as SQL: each part of `name` (`table` or `database.table`) checked and quoted with backticks, so
 * that reserved words (`user`, `order`) name a table like any other. The server's own databases are refused.
 */
function quoteTable(name) {
  const parts = typeof name === 'string' ? name.split('.') : []
  const found = typeof name === 'string' ? JSON.stringify(name).slice(0, 80) : typeof name
  if (parts.length < 1 || parts.length > 2 || !parts.every(p => IDENTIFIER.test(p))) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `table: expected a table name, or database.table, each of letters, digits and _ (at most 64, not starting with a digit), found ${found}`,
    )
  }
  if (parts.length === 2 && SYSTEM_SCHEMAS.includes(parts[0].toLowerCase())) {
    throw codedError(
      RangeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `table: expected a table outside the server's own databases (${SYSTEM_SCHEMAS.join(', ')}), found ${found}`,
    )
  }
  return parts.map(p => `\`${p}\``).join('.')
}

// The lease table's columns, as information_schema's COLUMN_TYPE names them, and whether each may be NULL.
/** @type {Array<[string, string, boolean, string?]>} */
const COLUMNS = [
  ['datacenter_id', 'int', false],
  ['worker_id', 'int', false],
  ['token', 'varchar(64)', true],
  ['expires_ms', 'bigint', true],
  ['mark_ms', 'bigint', true],
  ['clock_back', 'int', true],
  ['written_on', 'bigint', true],
  // Who holds the row (lib/store-lease.js's holder record), for listHolders only; a table without it still works.
  ['holder', 'text', true, 'optional'],
]
const KEY = 'datacenter_id, worker_id'

/** The numbers 0..count-1 as a derived table `n(i)`, from cross joins of 0..15. */
function series(count) {
  const digits = `(SELECT 0 AS i${Array.from({ length: 15 }, (_, k) => ` UNION ALL SELECT ${k + 1}`).join('')})`
  const joins = []
  for (let span = 1; joins.length === 0 || span < count; span *= 16) joins.push([`${digits} AS d${joins.length}`, span])
  const sum = joins.map(([, span], k) => (span === 1 ? `d${k}.i` : `${span} * d${k}.i`)).join(' + ')
  return `(SELECT ${sum} AS i FROM ${joins.map(([d]) => d).join(' CROSS JOIN ')}) AS n`
}

/**
 * CREATE TABLE ... SELECT of the lease table named `t` (quoted) with a row, never held (mark_ms 0), for every slot
 * of datacenters `dcLo..dcHi`, `2 ** workerBits` each.
 */
function createTable(t, dcLo, dcHi, workerBits) {
  const count = (dcHi - dcLo + 1) * 2 ** workerBits
  const mask = 2 ** workerBits - 1
  return `CREATE TABLE ${t} (
  datacenter_id int NOT NULL,
  worker_id int NOT NULL,
  token varchar(64) NULL,
  expires_ms bigint NULL,
  mark_ms bigint NULL,
  clock_back int NULL,
  written_on bigint NULL,
  holder text NULL,
  PRIMARY KEY (${KEY})
) ENGINE=InnoDB
SELECT ${dcLo} + (n.i >> ${workerBits}) AS datacenter_id, n.i & ${mask} AS worker_id, 0 AS mark_ms
FROM ${series(count)}
WHERE n.i < ${count}`
}

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
 * The DDL of the lease table, as `snowid sql mysql` prints it: one statement that makes the table with a row for
 * every slot of the layout (`datacenterBits` and `workerBits`, by default 3 and 5), never held (mark_ms 0), so that a
 * lease takes a slot at once. It fails on a table that already exists.
 */
function tableSql(table = DEFAULT_TABLE, layout = {}) {
  const t = quoteTable(table)
  const dcBits = layoutNumber(layout, 'datacenterBits', 3)
  const workerBits = layoutNumber(layout, 'workerBits', 5)
  return `-- snowid/mysql: one row per (datacenterId, workerId) slot. A row is held while token is set and expires_ms
-- (Unix ms, the database's clock) is in the future. mark_ms is the slot's high-water mark in Unix ms: no id of the
-- slot was stamped after it, so the next holder starts past it. clock_back is the clockBack in use at the mark.
-- written_on is the incarnation (a hash of the server's identity and the table's) the mark was last raised in: a row
-- written in another (before a replica's promotion, another server, a table made again) or in none (every row made
-- here, a row made again after a hand deletion) is held one TTL before use.
${createTable(t, 0, 2 ** dcBits - 1, workerBits)};
`
}

/** Runs one statement with `?` parameters on a mysql2 Pool or Connection (either API), and resolves to its result. */
function queryRunner(client) {
  if (client && typeof client === 'object' && typeof client.query === 'function') {
    // The callback API's objects have promise(), which gives the promise API's; those have none.
    const promised = typeof client.promise === 'function' ? client.promise() : client
    return async (text, params) => {
      const [result] = await promised.query(text, params)
      return result
    }
  }
  throw codedError(
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    `client: expected a mysql2 Pool or Connection, found ${client === null ? 'null' : typeof client}`,
  )
}

/**
 * A MySQL error as the coded error it means, else null: the lease table gone (ER_NO_SUCH_TABLE) as
 * ERR_SNOWID_STORE_TABLE_MISSING; a lock wait or a statement stopped by the server's timeout as
 * ERR_SNOWID_STORE_TIMEOUT; a permission error (ER_TABLEACCESS_DENIED_ERROR and its kin) as
 * ERR_SNOWID_STORE_PERMISSION_DENIED.
 */
function classify(err, table) {
  if (err && err.code === 'ER_NO_SUCH_TABLE') return tableMissing('mysql', table, err)
  if (err && (TIMED_OUT.includes(err.code) || TIMED_OUT_ERRNO.includes(err.errno)))
    return timedOut('mysql', table, err, 'SHOW PROCESSLIST')
  if (
    !err ||
    ![
      'ER_TABLEACCESS_DENIED_ERROR',
      'ER_COLUMNACCESS_DENIED_ERROR',
      'ER_DBACCESS_DENIED_ERROR',
      'ER_SPECIFIC_ACCESS_DENIED_ERROR',
    ].includes(err.code)
  )
    return null
  return codedError(
    Error,
    'ERR_SNOWID_STORE_PERMISSION_DENIED',
    `mysql: expected the user to have the privileges the lease needs, found: ${String(err.message).slice(0, 160)}. The lease needs SELECT, INSERT and UPDATE on the table (and CREATE on the database, unless the table is made beforehand with snowid sql mysql)`,
    err,
  )
}

/** Whether a mysql2 Pool or Connection was ended by its owner; `err` is the error of its last call. */
function closed(client, err) {
  const inner = client && client.pool ? client.pool : client
  if (inner && (inner._closed === true || inner._closing === true)) return true
  return /Pool is closed|Can't add new command when connection is in closed state/.test(String(err && err.message))
}

// Deadlocks between takes are tried again: each statement is atomic, so a retry is safe. A lock wait that timed out
// is not: the server's timeout is the lease's (ERR_SNOWID_STORE_TIMEOUT).
const RETRIED = ['ER_LOCK_DEADLOCK']
// A lock wait past the timeout; MariaDB's max_statement_time (ER_STATEMENT_TIMEOUT) and MySQL's max_execution_time.
const TIMED_OUT = ['ER_LOCK_WAIT_TIMEOUT', 'ER_STATEMENT_TIMEOUT', 'ER_QUERY_TIMEOUT']
// The same by number, for a client that has no name for MariaDB's own (1969).
const TIMED_OUT_ERRNO = [1205, 1969, 3024]

/**
 * `text` (one statement, starting with its verb) under the server's lock and statement timeouts of `ms`: MariaDB's
 * SET STATEMENT ... FOR, or MySQL 8's SET_VAR optimizer hint (lock waits in whole seconds, at least 1).
 */
function bounded(text, ms, mariadb) {
  // A lock wait gives up first, so that the error says it was one.
  const seconds = Math.max(Math.floor((ms * 0.8) / 1000), 1)
  if (mariadb) {
    return `SET STATEMENT lock_wait_timeout = ${seconds}, innodb_lock_wait_timeout = ${seconds}, max_statement_time = ${ms / 1000} FOR ${text}`
  }
  const verb = /^\s*(\w+)/.exec(text)
  return text.replace(
    verb[0],
    `${verb[0]} /*+ SET_VAR(lock_wait_timeout = ${seconds}) SET_VAR(innodb_lock_wait_timeout = ${seconds}) */`,
  )
}

/**
 * The MySQL store of a lease: its primitives for lib/store-lease.js.
 * @returns {import('./store-lease').Store}
 */
function mysqlStore(options, o) {
  const run = queryRunner(options.client)
  const query = async (text, params) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run(text, params)
      } catch (err) {
        if (!RETRIED.includes(err && err.code) || attempt >= 5) throw err
      }
    }
  }
  const table = options.table ?? DEFAULT_TABLE
  const t = quoteTable(table)
  const [schema, name] = table.includes('.') ? table.split('.') : [null, table]
  // The database of the table, and whether the server is MariaDB: both as the last prepare() or incarnation() found.
  let db = schema
  let mariadb = null
  // Whether the table has the holder column, as the last prepare() found.
  let holderColumn = false
  // How long the server lets a statement wait and run: a little under the time the lease waits for its answer.
  const takeMs = Math.floor(o.takeTimeoutMs * 0.8)
  const renewMs = Math.max(Math.floor(o.renewTimeoutMs * 0.8), 10)
  const giveBackMs = 4000
  const timed = (ms, text, params) => query(mariadb === null ? text : bounded(text, ms, mariadb), params)
  const dc = o.datacenterId
  const workerBits = Math.log2(o.slotCount)
  const valid = `(mark_ms IS NULL OR mark_ms BETWEEN 0 AND ${MAX_MARK}) AND (clock_back IS NULL OR (mark_ms IS NOT NULL AND clock_back BETWEEN 0 AND ${MAX_CLOCK_BACK}))`
  const free = `datacenter_id = ? AND worker_id < ? AND (token IS NULL OR expires_ms IS NULL OR expires_ms <= ${NOW_MS})`

  /** Makes the table when missing (with its fresh rows), checks it, and adds rows (with no mark) for slots it lacks. */
  async function prepare() {
    // The schema and table as constants, so that the server reads only that table's entries of information_schema.
    const [server] = await query('SELECT DATABASE() AS db, VERSION() AS version', [])
    db = schema ?? server.db
    mariadb = /mariadb/i.test(String(server.version))
    const [exists] = await query(
      'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = ? AND table_name = ?',
      [db, name],
    )
    if (Number(exists.n) === 0) {
      const everyDc = 2 ** o.datacenterBits * o.slotCount <= MAX_FRESH_ROWS
      try {
        await query(
          everyDc ? createTable(t, 0, 2 ** o.datacenterBits - 1, workerBits) : createTable(t, dc, dc, workerBits),
          [],
        )
      } catch (err) {
        // Two processes making the table at once: it is there either way.
        if (!(err && err.code === 'ER_TABLE_EXISTS_ERROR')) throw err
      }
    }
    holderColumn = await verify(db)
    if (!holderColumn && mariadb) {
      // A table made by an earlier version: MariaDB adds the holder column when the user may (ALTER on the table),
      // waiting at most a second for the table's lock, since the statements of other holders queue behind it; else
      // the lease goes on without recording its holders. MySQL 8 has no per-statement lock timeout for ALTER TABLE
      // (nor ADD COLUMN IF NOT EXISTS): there the column is left to the operator (docs/across-hosts.md).
      try {
        await query(bounded(`ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS holder text NULL`, 1000, true), [])
        holderColumn = true
      } catch {
        holderColumn = false
      }
    }
    await timed(
      takeMs,
      `INSERT IGNORE INTO ${t} (datacenter_id, worker_id) SELECT ?, n.i FROM ${series(o.slotCount)} WHERE n.i < ?`,
      [dc, o.slotCount],
    )
  }

  /** Checks that the table (in the database `db`) is an InnoDB table with the lease's columns and primary key. */
  async function verify(db) {
    const where = 'WHERE table_schema = ? AND table_name = ?'
    const [found] = await query(`SELECT engine FROM information_schema.tables ${where} AND table_type = 'BASE TABLE'`, [
      db,
      name,
    ])
    if (found) {
      const columns = await query(
        `SELECT column_name AS name, column_type AS type, is_nullable AS nullable FROM information_schema.columns ${where}`,
        [db, name],
      )
      const key = await query(
        `SELECT column_name AS name FROM information_schema.key_column_usage ${where} AND constraint_name = 'PRIMARY' ORDER BY ordinal_position`,
        [db, name],
      )
      found.columns = columns.map(c => `${c.name} ${c.type}${c.nullable === 'YES' ? ' null' : ''}`).join(', ')
      found.primary_key = key.map(k => k.name).join(', ')
    }
    const problem = tableProblem(found)
    if (problem) {
      // A table made by an earlier version lacks only written_on, which can be added to it.
      const hint =
        problem === 'columns with no written_on'
          ? `; add it with ALTER TABLE ${t} ADD COLUMN written_on bigint NULL`
          : ''
      throw codedError(
        Error,
        'ERR_SNOWID_STORE_TABLE_INVALID',
        `mysql: expected ${table} to be an InnoDB table with the columns and primary key (${KEY}) that snowid sql mysql prints, found ${problem}`.slice(
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
  const expiry = `${NOW_MS} + ${o.ttlMs}`

  return {
    name: 'MySQL',
    unavailableCode: 'ERR_SNOWID_MYSQL_UNAVAILABLE',
    slotName: rowName,
    classify: err => classify(err, table),
    closed: err => closed(options.client, err),
    prepare,
    /**
     * A hash of the server's identity (`@@server_id`; MySQL's `@@server_uuid`) and the table's (its CREATE_TIME), as a
     * decimal below 2^60, so that written_on holds it; null when the table is not there.
     */
    async incarnation() {
      const [row] = await timed(
        takeMs,
        `SELECT @@server_id AS id, VERSION() AS version, CAST(create_time AS CHAR) AS created
         FROM information_schema.tables WHERE table_schema = ? AND table_name = ?`,
        [db, name],
      )
      if (!row) return null
      mariadb = /mariadb/i.test(String(row.version))
      const uuid = mariadb ? '' : (await timed(takeMs, 'SELECT @@server_uuid AS uuid', []))[0].uuid
      const identity = `${row.id}:${uuid}:${db}.${name}:${row.created}`
      return BigInt(`0x${createHash('sha256').update(identity).digest('hex').slice(0, 15)}`).toString()
    },
    async take(token, preferred, only, { now, limit, holder }) {
      const record = holderColumn && holder ? [holder] : []
      // Only rows snowid wrote are taken, and none whose mark is at or past `limit`. The mark is raised by the
      // renewal that follows, so `confirmed` is false.
      const filter = `${free} AND (? < 0 OR NOT ? OR worker_id = ?)`
      const args = [dc, o.slotCount, preferred, only, preferred]
      const claimed = await timed(
        takeMs,
        `UPDATE ${t} SET token = ?, expires_ms = ${expiry}${record.length ? ', holder = ?' : ''}
         WHERE ${filter} AND ${valid} AND (mark_ms IS NULL OR mark_ms < ?)
         ORDER BY (worker_id = ?) DESC, (mark_ms IS NOT NULL AND mark_ms < ?) DESC, worker_id
         LIMIT 1`,
        [token, ...record, ...args, limit, preferred, now],
      )
      if (claimed.affectedRows === 1) {
        const [row] = await timed(
          takeMs,
          `SELECT worker_id, CAST(mark_ms AS CHAR) AS mark, CAST(written_on AS CHAR) AS seen FROM ${t} WHERE datacenter_id = ? AND token = ?`,
          [dc, token],
        )
        return {
          workerId: Number(row.worker_id),
          mark: row.mark === null ? undefined : Number(row.mark),
          confirmed: false,
          seen: row.seen ?? undefined,
        }
      }
      // None taken: a free row snowid did not write is reported, untouched; else the earliest mark skipped, if any.
      const [bad] = await timed(
        takeMs,
        `SELECT worker_id, CAST(mark_ms AS CHAR) AS mark, CAST(clock_back AS CHAR) AS clock_back FROM ${t} WHERE ${filter} AND NOT (${valid}) LIMIT 1`,
        args,
      )
      if (bad) throw corrupt(Number(bad.worker_id), `mark_ms ${bad.mark} and clock_back ${bad.clock_back}`)
      const [ahead] = await timed(
        takeMs,
        `SELECT CAST(MIN(mark_ms) AS CHAR) AS mark FROM ${t} WHERE ${filter} AND mark_ms >= ?`,
        [...args, limit],
      )
      return ahead && ahead.mark !== null ? { ahead: Number(ahead.mark) } : null
    },
    async renew(workerId, token, until, clockBack, incarnation) {
      // MySQL assigns left to right, each assignment seeing the ones before: clock_back reads the old mark_ms.
      const held = `datacenter_id = ? AND worker_id = ? AND token = ? AND expires_ms > ${NOW_MS}`
      const renewed = await timed(
        renewMs,
        `UPDATE ${t} SET
           clock_back = IF(? > COALESCE(mark_ms, -1), ?, clock_back),
           written_on = IF(? IS NULL, written_on, ?),
           mark_ms = IF(? IS NULL, mark_ms, GREATEST(COALESCE(mark_ms, 0), ?)),
           expires_ms = ${expiry}
         WHERE ${held} AND ${valid}`,
        [until, clockBack, until, incarnation, until, until, dc, workerId, token],
      )
      if (renewed.affectedRows === 1) return true
      const [row] = await timed(
        renewMs,
        `SELECT CAST(mark_ms AS CHAR) AS mark, CAST(clock_back AS CHAR) AS clock_back FROM ${t} WHERE ${held}`,
        [dc, workerId, token],
      )
      if (row) throw corrupt(workerId, `mark_ms ${row.mark} and clock_back ${row.clock_back}`)
      return false
    },
    async release(workerId, token, last) {
      await timed(
        giveBackMs,
        `UPDATE ${t} SET
           mark_ms = IF(? IS NOT NULL AND mark_ms BETWEEN 0 AND ${MAX_MARK} AND ? < mark_ms, ?, mark_ms),
           token = NULL, expires_ms = NULL
         WHERE datacenter_id = ? AND worker_id = ? AND token = ?`,
        [last, last, last, dc, workerId, token],
      )
    },
    /** Every row of the datacenter that has a token: held while its expiry is ahead by the database's clock. */
    async list() {
      const select = holder => `SELECT worker_id, token, ${holder} AS holder, expires_ms > ${NOW_MS} AS held,
           CAST(expires_ms - ${NOW_MS} AS CHAR) AS remaining
         FROM ${t} WHERE datacenter_id = ? AND token IS NOT NULL ORDER BY worker_id`
      let rows
      try {
        rows = await query(select('holder'), [dc])
      } catch (err) {
        // A table made by an earlier version, which no lease of this one has taken from yet.
        if (!(err && err.code === 'ER_BAD_FIELD_ERROR')) throw err
        rows = await query(select('NULL'), [dc])
      }
      return rows.map(r => ({
        workerId: Number(r.worker_id),
        token: String(r.token),
        holder: r.holder === null ? null : String(r.holder),
        held: Number(r.held) === 1,
        remainingMs: r.remaining === null ? null : Number(r.remaining),
      }))
    },
    async abandon(token) {
      await timed(giveBackMs, `UPDATE ${t} SET token = NULL, expires_ms = NULL WHERE datacenter_id = ? AND token = ?`, [
        dc,
        token,
      ])
    },
  }
}

/** What is wrong with the table `verify` found (a row of information_schema.tables, or none), or null. */
function tableProblem(found) {
  if (!found) return 'no base table by that name after making it'
  if (String(found.engine).toLowerCase() !== 'innodb')
    return `the engine ${found.engine} (the lease needs InnoDB's row locks and durability)`
  const have = new Map(
    String(found.columns || '')
      .split(', ')
      .filter(Boolean)
      // MariaDB and MySQL before 8.0.19 show a display width: int(11), bigint(20).
      .map(c => [c.slice(0, c.indexOf(' ')), c.slice(c.indexOf(' ') + 1).replace(/^(int|bigint)\(\d+\)/, '$1')]),
  )
  const want = new Map(COLUMNS.map(([n, type, nullable]) => [n, nullable ? `${type} null` : type]))
  const optional = COLUMNS.filter(c => c[3] === 'optional').map(([n]) => n)
  const wrong = [
    ...[...want.keys()].filter(n => !have.has(n) && !optional.includes(n)).map(n => `no ${n}`),
    ...[...want].filter(([n, type]) => have.has(n) && have.get(n) !== type).map(([n]) => `${n} ${have.get(n)}`),
    ...[...have.keys()].filter(n => !want.has(n)).map(n => `an extra ${n}`),
  ]
  if (wrong.length) return `columns with ${wrong.join(', ')}`
  if (found.primary_key !== KEY) return found.primary_key ? `the primary key (${found.primary_key})` : 'no primary key'
  return null
}

/**
 * A worker-id slot leased from MySQL. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal the database
 * did not answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a slot
 * again), 'lost' (error) and 'reacquired' (lease).
 */
class MysqlLease extends StoreLease {}

/**
 * Leases a free (datacenterId, workerId) slot from MySQL or MariaDB and returns a started lease with its `snowflake`.
 * The table is created on first use, with its rows; a slot whose row was made later is held for one TTL before use.
 */
function acquireWorkerId(options) {
  return startLease(options, ['table'], mysqlStore, MysqlLease, false)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return startLease(options, ['table'], mysqlStore, MysqlLease, true)
}

/**
 * The holders of the slots in MySQL or MariaDB (of `options.datacenterId`, else of every datacenter): see
 * lib/mysql.d.ts. Makes no table. A holder that stopped without releasing stays listed, not live, until a take of
 * its row.
 */
function listHolders(options) {
  return listStoreHolders(options, ['table'], mysqlStore)
}

module.exports = { acquireWorkerId, configureWorkerId, listHolders, MysqlLease, tableSql }
// For snowid/sql's generator, which names the same table: not part of the public exports.
module.exports[Symbol.for('snowid.mysql.quoteTable')] = quoteTable
