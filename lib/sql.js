'use strict'

// snowid/sql: SQL functions that read ids inside the database, written for one layout and epoch. Each field's shift
// and mask are constants of the layout, so the functions compute the same fields as decode(), minIdAt() and
// maxIdAt(), and depend on nothing but their argument.

const FIELDS = ['datacenterBits', 'workerBits', 'clockBackBits', 'sequenceBits']

const { codedError } = require('./codes.js')

/** A coded error for a bad argument, as the binding throws them. */
function invalid(Class, what, expected, found) {
  return codedError(Class, 'ERR_SNOWID_INVALID_ARGUMENT', `${what}: expected ${expected}, found ${found}`)
}

/** The widths and epoch of `config` (as `config()` returns it: its own properties), checked to be a whole layout. */
function readLayout(config) {
  if (config === null || typeof config !== 'object') {
    throw invalid(TypeError, 'config', 'an object such as config() returns', config === null ? 'null' : typeof config)
  }
  const layout = {}
  for (const key of ['epoch', 'timestampBits', ...FIELDS]) {
    let v
    try {
      // Its own properties only: one that `Object.prototype` or another prototype holds is not the config's.
      v = Object.hasOwn(config, key) ? config[key] : undefined
    } catch (err) {
      // A getter or a Proxy that throws.
      throw Object.assign(
        invalid(
          TypeError,
          `config.${key}`,
          'a readable value',
          `one that threw: ${String((err && err.message) || err).slice(0, 160)}`,
        ),
        { cause: err },
      )
    }
    if (!Number.isSafeInteger(v) || v < 0) {
      throw invalid(RangeError, `config.${key}`, 'a non-negative integer', typeof v === 'number' ? String(v) : typeof v)
    }
    layout[key] = v
  }
  // Ids are read for an epoch in the past, as decode() reads them (a later one has no ids yet).
  if (layout.epoch > Date.now()) {
    throw invalid(RangeError, 'config.epoch', `Unix ms in the past (at most ${Date.now()})`, String(layout.epoch))
  }
  const sum = layout.timestampBits + FIELDS.reduce((n, key) => n + layout[key], 0)
  if (sum !== 63 || layout.timestampBits > 52) {
    throw invalid(RangeError, 'config', 'widths of 63 bits in all, with at most 52 timestamp bits', `${sum} bits`)
  }
  return layout
}

/** The shift and mask of each field, lowest first, as BigInts. */
function fieldsOf(layout) {
  let shift = 0n
  const out = {}
  for (const key of [...FIELDS].reverse()) {
    const bits = BigInt(layout[key])
    out[key] = { shift, mask: (1n << bits) - 1n }
    shift += bits
  }
  out.timestampBits = { shift, mask: (1n << BigInt(layout.timestampBits)) - 1n }
  return out
}

const iso = ms => new Date(ms).toISOString()

/**
 * What both stores' reading functions write into their SQL: the layout, its fields, the epoch and the last ms as
 * BigInts, the mask of the bits below the timestamp, and two comment lines that describe the layout.
 */
function readerParts(config) {
  const layout = readLayout(config)
  const f = fieldsOf(layout)
  const epoch = BigInt(layout.epoch)
  const expiresAt = epoch + f.timestampBits.mask
  return {
    layout,
    f,
    epoch,
    expiresAt,
    lowMask: (1n << f.timestampBits.shift) - 1n,
    about: `--   epoch ${layout.epoch} (${iso(layout.epoch)}), timestamp ${layout.timestampBits} bits (until ${iso(Number(expiresAt))}),
--   datacenterId ${layout.datacenterBits} bits, workerId ${layout.workerBits} bits, clockBack ${layout.clockBackBits} bits, sequence ${layout.sequenceBits} bits.`,
  }
}

/**
 * `CREATE OR REPLACE FUNCTION` statements for PostgreSQL 14 or later that read ids of the layout and epoch of
 * `config` (what `config()` or `snowflake.config()` returns): `snowid_timestamp`, `snowid_datacenter_id`,
 * `snowid_worker_id`, `snowid_clock_back`, `snowid_sequence`, `snowid_min_id_at` and `snowid_max_id_at`.
 */
function postgresFunctions(config) {
  const { layout, f, epoch, expiresAt, lowMask, about } = readerParts(config)
  const idCheck = name => `  IF id < 0 THEN
    RAISE EXCEPTION '${name}: expected an id from 0 to 9223372036854775807, found %', id USING ERRCODE = '22003';
  END IF;`
  const decoder = (name, key, comment) => `-- ${comment}
CREATE OR REPLACE FUNCTION ${name}(id bigint) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
${idCheck(name)}
  RETURN ((id >> ${f[key].shift}) & ${f[key].mask})::integer;
END
$$;`
  // Times are read as exact numeric Unix ms (extract of a timestamp is numeric from PostgreSQL 14 on), so no
  // rounding can move a boundary by a ms.
  const bound = (name, round, low, comment) => `-- ${comment}
CREATE OR REPLACE FUNCTION ${name}(t timestamptz) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  ms numeric := extract(epoch FROM t AT TIME ZONE 'UTC') * 1000;
BEGIN
  IF NOT (ms >= ${epoch} AND ms <= ${expiresAt}) THEN
    RAISE EXCEPTION '${name}: expected a time from ${iso(layout.epoch)} (the epoch) to ${iso(Number(expiresAt))}, found %', t
      USING ERRCODE = '22008';
  END IF;
  RETURN ((${round}(ms)::bigint - ${epoch}) << ${f.timestampBits.shift})${low ? ` | ${lowMask}` : ''};
END
$$;`
  return `-- snowid SQL functions for PostgreSQL 14 or later, for ids of this layout and epoch:
${about}
-- They are IMMUTABLE: the layout is written into them as constants, and they read no setting (the time zone
-- and DateStyle included). Ids never change layout, so neither should these functions.

-- The id's time: its timestamp field plus the epoch, to the ms.
CREATE OR REPLACE FUNCTION snowid_timestamp(id bigint) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  ms bigint;
BEGIN
${idCheck('snowid_timestamp')}
  ms := (id >> ${f.timestampBits.shift}) + ${epoch};
  RETURN (timestamp '1970-01-01 00:00:00'
    + make_interval(days => (ms / 86400000)::integer, secs => (ms % 86400000)::float8 / 1000)) AT TIME ZONE 'UTC';
END
$$;

${decoder('snowid_datacenter_id', 'datacenterBits', "The id's datacenterId.")}

${decoder('snowid_worker_id', 'workerBits', "The id's workerId.")}

${decoder('snowid_clock_back', 'clockBackBits', "The id's clockBack.")}

${decoder('snowid_sequence', 'sequenceBits', "The id's sequence within its ms.")}

${bound('snowid_min_id_at', 'ceil', false, 'The smallest id whose time is at or after t: WHERE id BETWEEN snowid_min_id_at(a) AND snowid_max_id_at(b).')}

${bound('snowid_max_id_at', 'floor', true, 'The largest id whose time is at or before t.')}
`
}

const DEFAULT_TABLE = 'snowid_workers'
// What the generator writes in the token of the slot it holds: a lease table row with this token and an expiry of
// 'infinity' is the database's, for good. App holders' tokens are random hex, so they never start with it.
const DATABASE_TOKEN = 'snowid-database:'
// The advisory lock class of snowid_next_id(): 'snow' in ASCII. The second key is the slot's number.
const LOCK_CLASS = 0x736e6f77

/** An integer option from `min` to `max`, or `fallback` when absent; else ERR_SNOWID_INVALID_ARGUMENT. */
function intOption(options, key, min, max, fallback) {
  const v = options[key] === undefined ? fallback : options[key]
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw invalid(
      RangeError,
      `options.${key}`,
      `an integer from ${min} to ${max}`,
      typeof v === 'number' ? String(v) : typeof v,
    )
  }
  return v
}

/**
 * The slot, lead and names of `postgresGenerator` and `mysqlGenerator`: the datacenter of `config` (its own
 * `datacenterId`, else 0) unless `options.datacenterId` says, the layout's highest worker id unless
 * `options.workerId` says.
 */
function generatorOptions(config, options) {
  const layout = readLayout(config)
  if (options === null || typeof options !== 'object') {
    throw invalid(TypeError, 'options', 'an object', options === null ? 'null' : typeof options)
  }
  const known = ['table', 'datacenterId', 'workerId', 'maxLeadMs', 'ttlMs']
  const unknown = Object.keys(options).find(k => !known.includes(k))
  if (unknown !== undefined) throw invalid(TypeError, 'options', `only ${known.join(', ')}`, JSON.stringify(unknown))
  const dcOfConfig = Object.hasOwn(config, 'datacenterId') ? config.datacenterId : 0
  return {
    layout,
    table: options.table ?? DEFAULT_TABLE,
    datacenterId: intOption(options, 'datacenterId', 0, 2 ** layout.datacenterBits - 1, dcOfConfig),
    workerId: intOption(options, 'workerId', 0, 2 ** layout.workerBits - 1, 2 ** layout.workerBits - 1),
    maxLeadMs: intOption(options, 'maxLeadMs', 0, 60_000, 1000),
    ttlMs: intOption(options, 'ttlMs', 100, 3_600_000, 10_000),
  }
}

/**
 * What both generators write into their SQL: the options read, the lease table quoted by `quoteTable` (the
 * store's), the layout's fields, and the slot's fixed bits.
 */
function generatorParts(config, options, quoteTable) {
  const o = generatorOptions(config, options)
  const { layout } = o
  const f = fieldsOf(layout)
  return {
    o,
    layout,
    t: quoteTable(o.table),
    f,
    S: layout.sequenceBits,
    fixed: (BigInt(o.datacenterId) << f.datacenterBits.shift) | (BigInt(o.workerId) << f.workerBits.shift),
    slot: `(${o.datacenterId}, ${o.workerId})`,
  }
}

/**
 * The SQL that installs `snowid_next_id()` in PostgreSQL 14 or later: ids of the layout and epoch of `config`, made
 * by the database on a slot of snowid/postgres's lease table that the database holds for good. One statement (a DO
 * block): it claims the slot and makes the state and the function, or it fails and makes nothing.
 */
function postgresGenerator(config, options = {}) {
  const { o, layout, t, f, S, fixed, slot } = generatorParts(
    config,
    options,
    require('./postgres.js')[Symbol.for('snowid.postgres.quoteTable')],
  )
  // The slot's number, within int4: two generators of one database share a lock only if their slots' numbers differ
  // by a multiple of 2^31, which costs them speed, never ids (each has its own state).
  const lockKey = (o.datacenterId * 2 ** layout.workerBits + o.workerId) % 2 ** 31
  const epoch = layout.epoch
  const tsMask = f.timestampBits.mask
  const nowMs = `(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - ${epoch})`
  const q = s => s.replaceAll("'", "''")
  // The function's body, as EXECUTE runs it in the DO block below: {SEQ} and {TABLE} are the names, schema-qualified
  // at install (the table's name is letters, digits and _, so it can stand in a string literal), and {TOKEN} the token
  // the slot was claimed with.
  const timeline = `('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int`
  // `statements` (indented 4) under the slot's advisory lock, released on any error (a cancel included) before the
  // error goes on, and after them.
  const locked = statements => `  PERFORM pg_advisory_lock(${LOCK_CLASS}, ${lockKey});
  BEGIN
${statements}
  EXCEPTION WHEN query_canceled OR OTHERS THEN
    PERFORM pg_advisory_unlock(${LOCK_CLASS}, ${lockKey});
    RAISE;
  END;
  PERFORM pg_advisory_unlock(${LOCK_CLASS}, ${lockKey});`
  const body = `
DECLARE
  v bigint;
  now_ms bigint;
  lo bigint;
  tl int;
BEGIN
  -- One caller at a time per slot: a session-level advisory lock, released before the function returns, so it is
  -- held for microseconds and not to the end of the caller's transaction. The block below releases it on any error
  -- (a cancel included) before the error goes on.
${locked(`    v := nextval('{SEQ}');
    now_ms := ${nowMs};
    -- No id before the clock, and none before this server's start plus the lead, nor (after a promotion) before
    -- one TTL past the first call on the new timeline: see the argument above.
    lo := greatest(now_ms, floor(extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint - ${epoch} + ${o.maxLeadMs + 2});
    tl := ${timeline};
    IF tl <> (SELECT last_value FROM {TIMELINE}) THEN
      lo := greatest(lo, now_ms + ${o.ttlMs});
      PERFORM setval('{TIMELINE}', tl, true);
    END IF;
    IF (v >> ${S}) < lo THEN
      -- Once per ms at most: check that the slot is still the database's, then move the state to (lo, 0).
      PERFORM 1 FROM {TABLE} WHERE datacenter_id = ${o.datacenterId} AND worker_id = ${o.workerId}
        AND token = '{TOKEN}' AND expires_at = 'infinity';
      IF NOT FOUND THEN
        RAISE EXCEPTION 'snowid_next_id: expected the row ${slot} of {TABLE} to be held by this database (token {TOKEN}), found it changed: no id is made on a slot the database does not hold'
          USING ERRCODE = 'SN003';
      END IF;
      v := lo << ${S};
      PERFORM setval('{SEQ}', v, true);
    END IF;
    -- Ahead of the clock by maxLeadMs at most, + 1 ms just after the server's start (the floor above).
    IF (v >> ${S}) - now_ms > ${o.maxLeadMs + 1} THEN
      RAISE EXCEPTION 'snowid_next_id: expected the clock within ${o.maxLeadMs + 1} ms (maxLeadMs + 1) of the next id, found it % ms behind: the clock stepped back, or the slot is held before use (after its install or a promotion) until then'
        , (v >> ${S}) - now_ms USING ERRCODE = 'SN001';
    END IF;
    IF (v >> ${S}) > ${tsMask} THEN
      RAISE EXCEPTION 'snowid_next_id: expected a time up to ${iso(Number(BigInt(epoch) + tsMask))} (the layout''s expiresAt), found a later one'
        USING ERRCODE = 'SN002';
    END IF;`)}
  RETURN ((v >> ${S}) << ${f.timestampBits.shift}) | ${fixed} | (v & ${f.sequenceBits.mask});
END`
  // snowid_next_id_skip(t): no id of the slot at or before t from now on (after a promoted standby, when the old
  // primary's last ids are known to be no later than t). Its owner's only.
  const skip = `
DECLARE
  v bigint;
  target bigint := floor(extract(epoch FROM past) * 1000)::bigint - ${epoch} + 1;
BEGIN
${locked(`    v := nextval('{SEQ}');
    IF (v >> ${S}) < target THEN
      PERFORM setval('{SEQ}', target << ${S}, false);
    END IF;`)}
END`
  const held = `r.token IS NOT NULL AND r.expires_at IS NOT NULL AND r.expires_at > clock_timestamp()`
  return `-- snowid_next_id() for PostgreSQL 14 or later: ids of this layout and epoch, made by the database.
--   epoch ${layout.epoch} (${iso(layout.epoch)}), timestamp ${layout.timestampBits} bits, datacenterId ${layout.datacenterBits} bits,
--   workerId ${layout.workerBits} bits, clockBack ${layout.clockBackBits} bits, sequence ${S} bits.
-- The slot (datacenterId ${o.datacenterId}, workerId ${o.workerId}) of ${o.table} is claimed for good: its row gets the token
-- '${DATABASE_TOKEN}...' and the expiry 'infinity', which no app holder sees expire, so no app lease ever takes it,
-- and this refuses a slot an app holds, or one the database holds already. Run it once per database; the lease
-- table must exist (snowid sql postgres makes it).
--
-- Why no id is ever made twice:
-- - The state is one sequence, snowid_next_id_state: its value v packs the last id's ms (since the epoch) above its
--   ${S}-bit sequence number, so v + 1 is the next id of the same ms, or the first of the next ms once the ms is
--   full. A sequence is not transactional: a value given out is never given again, whether the caller's
--   transaction commits or rolls back.
-- - Callers take turns on an advisory lock: under it, nextval() gives v; if v's ms is behind the clock, the state
--   is set (setval) to the clock's ms and sequence 0, which is past v and past every value given before. No one
--   calls nextval() or setval() on the state outside the lock (the function is SECURITY DEFINER; the sequence is
--   its owner's alone). So ids only grow: the clockBack field stays 0.
-- - A clock stepped back: the ids carry on from the last one, at most ${o.maxLeadMs + 1} ms ahead of the clock (maxLeadMs
--   + 1); past that the function refuses (SQLSTATE SN001) until the clock catches up.
-- - A crash: PostgreSQL writes a sequence's WAL record before it gives out the values it covers (nextval logs 32
--   ahead; setval logs its value), and replays a prefix of the WAL. A committed row that holds an id comes after
--   that record in the WAL, so if the row survives, so does a state at or past the id. Ids that no surviving commit
--   holds (a rolled-back or lost transaction) are stamped at most ${o.maxLeadMs + 1} ms past the clock before the crash;
--   after a restart of the server, no id is stamped before its start time plus ${o.maxLeadMs + 2} ms, so they are never made
--   again either (unless the clock was stepped back across the restart).
-- - A promoted standby replays a prefix of the primary's WAL too, so committed rows it has are covered as above. The
--   ids of transactions it did not receive were stamped before the promotion plus ${o.maxLeadMs + 1} ms: the function keeps the
--   WAL timeline it last ran on (snowid_next_id_timeline, replicated with the state), and on a new one it moves past
--   the clock plus one TTL (${o.ttlMs} ms) and refuses (SN001) until the clock gets there, as a lease holds a slot whose
--   history may be lost. snowid_next_id_skip(t) moves the state past a time t by hand (its owner's only).
DO $snowid$
DECLARE
  r record;
  tbl text;
  seq text := quote_ident(current_schema()) || '.snowid_next_id_state';
  tlseq text := quote_ident(current_schema()) || '.snowid_next_id_timeline';
  token text := '${DATABASE_TOKEN}' || gen_random_uuid()::text;
  origin text := ((SELECT system_identifier::text FROM pg_control_system()) || ':' || ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int);
  forgotten boolean;
  start_ms bigint;
BEGIN
  IF to_regclass('${q(t)}') IS NULL THEN
    RAISE EXCEPTION 'snowid_next_id: expected the lease table ${q(o.table)} (snowid sql postgres makes it), found none' USING ERRCODE = '42P01';
  END IF;
  SELECT format('%I.%I', n.nspname, c.relname) INTO tbl FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = to_regclass('${q(t)}');
  IF to_regprocedure('snowid_next_id()') IS NOT NULL OR to_regclass(seq) IS NOT NULL OR to_regclass(tlseq) IS NOT NULL THEN
    RAISE EXCEPTION 'snowid_next_id: expected no snowid_next_id() nor its sequences in schema %, found them: it is installed already (see docs/databases.md to remove it and release its slot)', current_schema()
      USING ERRCODE = '42723';
  END IF;
  EXECUTE format('SELECT token, expires_at, mark_ms, written_on FROM %s WHERE datacenter_id = ${o.datacenterId} AND worker_id = ${o.workerId} FOR UPDATE', tbl) INTO r;
  IF r IS NULL THEN
    RAISE EXCEPTION 'snowid_next_id: expected a row ${slot} in %, found none: make the lease table with the layout''s rows (snowid sql postgres), or choose a slot it has', tbl
      USING ERRCODE = 'SN004';
  END IF;
  IF r.token LIKE '${DATABASE_TOKEN}%' THEN
    RAISE EXCEPTION 'snowid_next_id: expected the slot ${slot} free, found it held by a database generator already (token %): install it once', r.token
      USING ERRCODE = 'SN004';
  END IF;
  IF ${held} THEN
    RAISE EXCEPTION 'snowid_next_id: expected the slot ${slot} free, found it held by an app until %: choose another slot (--worker-id)', r.expires_at
      USING ERRCODE = 'SN004';
  END IF;
  IF r.mark_ms IS NOT NULL AND r.mark_ms NOT BETWEEN 0 AND ${Number.MAX_SAFE_INTEGER} THEN
    RAISE EXCEPTION 'snowid_next_id: expected the row ${slot} to hold a mark_ms of Unix ms, found %; the row is left as found', r.mark_ms
      USING ERRCODE = 'SN004';
  END IF;
  -- As an app lease does: start past the mark an earlier holder left; and when the row's history may have been lost
  -- (no mark, or last written on another server or timeline), one TTL (${o.ttlMs} ms) from now, past the deadline of
  -- any holder the lost history had. The function refuses (SN001) until the clock reaches the start.
  forgotten := r.mark_ms IS NULL OR r.written_on IS DISTINCT FROM origin;
  start_ms := greatest(coalesce(r.mark_ms + 1, 0), floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
    + CASE WHEN forgotten THEN ${o.ttlMs} ELSE 0 END);
  IF start_ms < ${epoch} THEN
    RAISE EXCEPTION 'snowid_next_id: expected a clock past the epoch ${iso(epoch)}, found %', clock_timestamp() USING ERRCODE = '22008';
  END IF;
  EXECUTE format('UPDATE %s SET token = %L, expires_at = ''infinity'', mark_ms = %s, clock_back = 0, written_on = %L WHERE datacenter_id = ${o.datacenterId} AND worker_id = ${o.workerId}', tbl, token, start_ms, origin);
  EXECUTE format('CREATE SEQUENCE %s AS bigint MINVALUE 0 NO CYCLE', seq);
  EXECUTE format('CREATE SEQUENCE %s AS integer MINVALUE 0', tlseq);
  EXECUTE format('REVOKE ALL ON SEQUENCE %s, %s FROM PUBLIC', seq, tlseq);
  PERFORM setval(seq, (start_ms - ${epoch}) << ${S}, false);
  PERFORM setval(tlseq, ${timeline}, true);
  EXECUTE format($create$CREATE FUNCTION %I.snowid_next_id() RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS %L$create$,
    current_schema(), replace(replace(replace(replace($body$${body}$body$, '{SEQ}', seq), '{TIMELINE}', tlseq), '{TABLE}', tbl), '{TOKEN}', token));
  EXECUTE format($create$CREATE FUNCTION %I.snowid_next_id_skip(past timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS %L$create$,
    current_schema(), replace($body$${skip}$body$, '{SEQ}', seq));
  EXECUTE format('REVOKE EXECUTE ON FUNCTION %I.snowid_next_id_skip(timestamptz) FROM PUBLIC', current_schema());
  EXECUTE format('COMMENT ON FUNCTION %I.snowid_next_id() IS %L', current_schema(),
    'snowid: ids of slot ${slot}, layout ${layout.timestampBits}/${layout.datacenterBits}/${layout.workerBits}/${layout.clockBackBits}/${S}, epoch ${epoch}');
END $snowid$;
`
}

/** A MySQL stored program's text for the `mysql`/`mariadb` client: each CREATE between `DELIMITER //` lines. */
const delimited = statements => `DELIMITER //\n${statements.map(st => `${st}//`).join('\n\n')}\nDELIMITER ;\n`

/** SIGNAL of `state` with a message made of `parts` (SQL expressions), as MySQL wants a variable for it. */
const signal = (state, parts) => `BEGIN
    DECLARE msg VARCHAR(400) DEFAULT CONCAT(${parts.join(', ')});
    SIGNAL SQLSTATE '${state}' SET MESSAGE_TEXT = msg;
  END;`

/**
 * `CREATE FUNCTION` statements for MySQL 8 or MariaDB 10.6 or later that read ids of the layout and epoch of
 * `config`, with the names and results of `postgresFunctions`' (times are DATETIME(3) in UTC), to be run by the
 * `mysql` or `mariadb` client (they use `DELIMITER`).
 */
function mysqlFunctions(config) {
  const { layout, f, epoch, expiresAt, lowMask, about } = readerParts(config)
  const idCheck = name => `IF id IS NULL THEN
    RETURN NULL;
  END IF;
  IF id < 0 THEN
    ${signal('22003', [`'${name}: expected an id from 0 to 9223372036854775807, found '`, 'id'])}
  END IF;`
  const decoder = (name, key, comment) => `-- ${comment}
DROP FUNCTION IF EXISTS ${name}//
CREATE FUNCTION ${name}(id BIGINT) RETURNS INT
DETERMINISTIC NO SQL
BEGIN
  ${idCheck(name)}
  RETURN CAST((id >> ${f[key].shift}) & ${f[key].mask} AS SIGNED);
END`
  // Times are read to the microsecond as exact integers (TIMESTAMPDIFF of DATETIME(6)s), so no rounding can move a
  // boundary by a ms. DATETIME has no time zone: the times are UTC, as UTC_TIMESTAMP() gives them.
  const bound = (name, low, comment) => `-- ${comment}
DROP FUNCTION IF EXISTS ${name}//
CREATE FUNCTION ${name}(t DATETIME(6)) RETURNS BIGINT
DETERMINISTIC NO SQL
BEGIN
  DECLARE us BIGINT;
  IF t IS NULL THEN
    RETURN NULL;
  END IF;
  SET us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', t);
  IF NOT (us >= ${epoch * 1000n} AND us <= ${expiresAt * 1000n}) THEN
    ${signal('22008', [`'${name}: expected a time from ${iso(layout.epoch)} (the epoch) to ${iso(Number(expiresAt))}, found '`, 't'])}
  END IF;
  RETURN ((${low ? 'FLOOR(us / 1000)' : 'CEIL(us / 1000)'} - ${epoch}) << ${f.timestampBits.shift})${low ? ` | ${lowMask}` : ''};
END`
  return `-- snowid SQL functions for MySQL 8 or MariaDB 10.6 or later, for ids of this layout and epoch:
${about}
-- They are DETERMINISTIC: the layout is written into them as constants, and they read no setting (times are UTC
-- DATETIMEs, whatever the session's time zone). Run with the mysql or mariadb client (they use DELIMITER). With a
-- binary log, creating functions needs SUPER or log_bin_trust_function_creators (they are DETERMINISTIC NO SQL).
${delimited([
  `-- The id's time (UTC): its timestamp field plus the epoch, to the ms.
DROP FUNCTION IF EXISTS snowid_timestamp//
CREATE FUNCTION snowid_timestamp(id BIGINT) RETURNS DATETIME(3)
DETERMINISTIC NO SQL
BEGIN
  ${idCheck('snowid_timestamp')}
  RETURN TIMESTAMPADD(MICROSECOND, ((id >> ${f.timestampBits.shift}) + ${epoch}) * 1000, '1970-01-01 00:00:00.000');
END`,
  decoder('snowid_datacenter_id', 'datacenterBits', "The id's datacenterId."),
  decoder('snowid_worker_id', 'workerBits', "The id's workerId."),
  decoder('snowid_clock_back', 'clockBackBits', "The id's clockBack."),
  decoder('snowid_sequence', 'sequenceBits', "The id's sequence within its ms."),
  bound(
    'snowid_min_id_at',
    false,
    'The smallest id whose time is at or after t: WHERE id BETWEEN snowid_min_id_at(a) AND snowid_max_id_at(b).',
  ),
  bound('snowid_max_id_at', true, 'The largest id whose time is at or before t.'),
])}`
}

/**
 * The SQL that installs `snowid_next_id()` in MariaDB 10.6 or later (MySQL 8 has no sequences): ids of the layout
 * and epoch of `config`, made by the database on a slot of snowid/mysql's lease table that it holds for good. MariaDB
 * allows no stored function in a DEFAULT: a BEFORE INSERT trigger calls it (docs/databases.md shows one).
 */
function mysqlGenerator(config, options = {}) {
  const { o, layout, t, f, S, fixed, slot } = generatorParts(
    config,
    options,
    require('./mysql.js')[Symbol.for('snowid.mysql.quoteTable')],
  )
  const epoch = layout.epoch
  const tsMask = f.timestampBits.mask
  const NOW_MS = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
  const FOREVER = '9223372036854775807'
  const where = `datacenter_id = ${o.datacenterId} AND worker_id = ${o.workerId}`
  return `-- snowid_next_id() for MariaDB 10.6 or later: ids of this layout and epoch, made by the database.
--   epoch ${layout.epoch} (${iso(layout.epoch)}), timestamp ${layout.timestampBits} bits, datacenterId ${layout.datacenterBits} bits,
--   workerId ${layout.workerBits} bits, clockBack ${layout.clockBackBits} bits, sequence ${S} bits.
-- The slot (datacenterId ${o.datacenterId}, workerId ${o.workerId}) of ${o.table} is claimed for good: its row gets the token
-- '${DATABASE_TOKEN}...' and the expiry ${FOREVER} (Unix ms), which no app holder sees expire. The claim is the
-- first statement, and it refuses a slot an app or a database holds; run this once per database, with the mysql or
-- mariadb client (it uses DELIMITER), after the lease table (snowid sql mysql makes it).
--
-- Why no id is ever made twice:
-- - The state is one row of snowid_next_id_state, an Aria table: not transactional (a change is kept whether the
--   caller's transaction commits or rolls back) and crash-safe. Its value v packs the last id's ms (since the epoch)
--   above its ${S}-bit sequence number, so v + 1 is the next id of the same ms, or the first of the next ms once the ms
--   is full. One UPDATE, under the table's lock, sets v to the greater of v + 1 and the clock's ms with sequence 0,
--   and returns it (LAST_INSERT_ID): v only grows, so no value is given twice. Ids only grow: clockBack stays 0.
--   The lock is held to the end of the calling statement (MariaDB locks a function's tables with the statement's),
--   not of its transaction.
-- - A clock stepped back: ids carry on from the last one, at most ${o.maxLeadMs + 1} ms ahead of the clock (maxLeadMs + 1);
--   past that the function refuses (SQLSTATE SN001) until the clock catches up.
-- - A crash or restart may lose the state's last values (an unflushed log). Every id given out
--   before is stamped at most ${o.maxLeadMs + 1} ms after the server stopped; each session computes once the server's start
--   time (from Uptime, to the second, rounded late) and makes no id stamped before it plus ${o.maxLeadMs + 2} ms: in the first
--   second after a start, it may refuse (SN001) until the clock gets within ${o.maxLeadMs + 1} ms of that time.
-- - A promoted replica: its state may lack the old primary's last values: run
--   UPDATE snowid_next_id_state SET state = GREATEST(state, <ms of the promotion plus a TTL, since the epoch> << ${S}) on it
--   before it takes writes (docs/databases.md).
-- - Statement-based replication would have a replica compute its own values: use row-based (the default).
${delimited([
  `BEGIN NOT ATOMIC
  DECLARE held TEXT;
  IF EXISTS (SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'snowid_next_id')
     OR EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'snowid_next_id_state') THEN
    ${signal('42000', ["'snowid_next_id: expected no snowid_next_id() nor snowid_next_id_state in database '", 'DATABASE()', "', found them: it is installed already (see docs/databases.md to remove it and release its slot)'"]).replaceAll('\n  ', '\n  ')}
  END IF;
  UPDATE ${t} SET token = CONCAT('${DATABASE_TOKEN}', UUID()), expires_ms = ${FOREVER},
      mark_ms = GREATEST(COALESCE(mark_ms + 1, 0), ${NOW_MS} + IF(mark_ms IS NULL OR NOT (written_on <=> @@server_id), ${o.ttlMs}, 0)),
      clock_back = 0, written_on = @@server_id
    WHERE ${where} AND (token IS NULL OR expires_ms IS NULL OR expires_ms <= ${NOW_MS})
      AND (mark_ms IS NULL OR mark_ms BETWEEN 0 AND ${Number.MAX_SAFE_INTEGER});
  IF ROW_COUNT() <> 1 THEN
    SELECT IFNULL(MAX(CONCAT('token ', IFNULL(token, 'none'), ', expires_ms ', IFNULL(expires_ms, 'none'), ', mark_ms ', IFNULL(mark_ms, 'none'))), 'no row') INTO held FROM ${t} WHERE ${where};
    ${signal('SN004', [`'snowid_next_id: expected the slot ${slot} of ${o.table} free, found '`, 'held', `': choose another slot (--worker-id)'`])}
  END IF;
END`,
])}CREATE TABLE snowid_next_id_state (state BIGINT NOT NULL) ENGINE = Aria TRANSACTIONAL = 1;
INSERT INTO snowid_next_id_state (state) SELECT ((mark_ms - ${epoch}) << ${S}) - 1 FROM ${t} WHERE ${where};
${delimited([
  `CREATE FUNCTION snowid_next_id() RETURNS BIGINT
NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v BIGINT;
  DECLARE now_ms BIGINT DEFAULT ${NOW_MS} - ${epoch};
  DECLARE lo BIGINT;
  IF @snowid_next_id_floor IS NULL THEN
    SET @snowid_next_id_floor = ${NOW_MS} - ${epoch} + ${o.maxLeadMs + 2}
      - 1000 * (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME');
  END IF;
  SET lo = GREATEST(now_ms, @snowid_next_id_floor);
  -- One statement reads and moves the state, under the table's lock: the next value, or the clock's ms if later.
  UPDATE snowid_next_id_state SET state = LAST_INSERT_ID(GREATEST(state + 1, lo << ${S}));
  SET v = LAST_INSERT_ID();
  IF v = lo << ${S} AND NOT EXISTS (SELECT 1 FROM ${t} WHERE ${where} AND token LIKE '${DATABASE_TOKEN}%' AND expires_ms = ${FOREVER}) THEN
    ${signal('SN003', [`'snowid_next_id: expected the row ${slot} of ${o.table} to be held by this database, found it changed: no id is made on a slot the database does not hold'`])}
  END IF;
  -- Ahead of the clock by maxLeadMs at most (+ 1 ms, and up to a second more just after the server's start).
  IF (v >> ${S}) - now_ms > ${o.maxLeadMs + 1} THEN
    ${signal('SN001', [`'snowid_next_id: expected the clock within ${o.maxLeadMs + 1} ms (maxLeadMs + 1) of the next id, found it '`, `(v >> ${S}) - now_ms`, `' ms behind: the clock stepped back, or the slot is held before use until then'`])}
  END IF;
  IF (v >> ${S}) > ${tsMask} THEN
    ${signal('SN002', [`'snowid_next_id: expected a time up to ${iso(Number(BigInt(epoch) + tsMask))} (the layout''s expiresAt), found a later one'`])}
  END IF;
  RETURN ((v >> ${S}) << ${f.timestampBits.shift}) | ${fixed} | (v & ${f.sequenceBits.mask});
END`,
])}`
}

// The slots (and layouts) of this process's backfills.
const backfills = new Set()

/**
 * Ids for past times (a backfill, a move from bigserial), on a slot reserved for it by configuration: `options` are
 * a `Snowflake`'s, with an explicit `workerId` (and `datacenterId`) that no live generator uses. The slot's host lease
 * is taken at once (one id made and dropped: ERR_SNOWID_WORKER_ID_IN_USE when a live process holds it), and that
 * id's time is the backfill's `start`: `idAt(time)` makes ids for times before it only, in the order of the times.
 * Each id is the time's ms with a counter of the ids made for that ms in the clockBack and sequence fields, so two
 * ids of one backfill never repeat, and they sort as their times.
 */
function backfill(options) {
  if (options === null || typeof options !== 'object') {
    throw invalid(TypeError, 'options', 'an object of Snowflake options', options === null ? 'null' : typeof options)
  }
  if (options.workerId === undefined) {
    throw invalid(
      TypeError,
      'options.workerId',
      'the worker id reserved for backfills (with datacenterId, a slot no live generator uses)',
      'undefined',
    )
  }
  const { Snowflake } = require('../index.js')
  const snowflake = new Snowflake(options)
  const c = snowflake.config()
  // Generators of one identity share their state in a process, so a second backfill on the slot here would count
  // the same ms again: one backfill per slot and layout per process.
  const key = [
    c.datacenterId,
    c.workerId,
    c.epoch,
    c.timestampBits,
    c.datacenterBits,
    c.workerBits,
    c.clockBackBits,
  ].join()
  if (backfills.has(key)) {
    throw codedError(
      Error,
      'ERR_SNOWID_WORKER_ID_IN_USE',
      `backfill: expected the slot (${c.datacenterId}, ${c.workerId}) free, found another backfill of this process on it: one backfill per slot`,
    )
  }
  const start = snowflake.timestampOf(snowflake.nextId())
  backfills.add(key)
  const f = fieldsOf(c)
  const fixed = (BigInt(c.datacenterId) << f.datacenterBits.shift) | (BigInt(c.workerId) << f.workerBits.shift)
  const perMs = 2 ** (c.clockBackBits + c.sequenceBits)
  let lastMs = -1
  let count = 0
  return Object.freeze({
    /** The backfill's start (Unix ms): its ids are for times before it. */
    start,
    datacenterId: c.datacenterId,
    workerId: c.workerId,
    /** The next id stamped with `time` (a Date, Unix ms or an ISO-8601 date), at or after the previous time. */
    idAt(time) {
      // minIdAt checks the time as reading ids does (a Date, whole Unix ms or ISO-8601; from the epoch to expiresAt),
      // and gives the time's ms with every lower field 0.
      const base = snowflake.minIdAt(time)
      const ms = snowflake.timestampOf(base)
      if (ms >= start) {
        throw codedError(
          RangeError,
          'ERR_SNOWID_TIME_IN_FUTURE',
          `time: expected a time before the backfill's start ${start} (${iso(start)}), found ${ms} (${iso(ms)})`,
        )
      }
      if (ms < lastMs) {
        throw invalid(
          RangeError,
          'time',
          `a time at or after the previous one, ${lastMs} (${iso(lastMs)}): give the times in order`,
          `${ms} (${iso(ms)})`,
        )
      }
      if (ms !== lastMs) {
        lastMs = ms
        count = 0
      }
      if (count >= perMs) {
        throw codedError(
          RangeError,
          'ERR_SNOWID_SEQUENCE_EXHAUSTED',
          `time: expected at most ${perMs} ids for one ms (the clockBack and sequence fields), found more for ${ms} (${iso(ms)})`,
        )
      }
      return base | fixed | BigInt(count++)
    },
  })
}

module.exports = { backfill, mysqlFunctions, mysqlGenerator, postgresFunctions, postgresGenerator }
