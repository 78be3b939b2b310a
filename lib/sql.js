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
 * `CREATE OR REPLACE FUNCTION` statements for PostgreSQL 14 or later that read ids of the layout and epoch of
 * `config` (what `config()` or `snowflake.config()` returns): `snowid_timestamp`, `snowid_datacenter_id`,
 * `snowid_worker_id`, `snowid_clock_back`, `snowid_sequence`, `snowid_min_id_at` and `snowid_max_id_at`.
 */
function postgresFunctions(config) {
  const layout = readLayout(config)
  const f = fieldsOf(layout)
  const epoch = BigInt(layout.epoch)
  const expiresAt = epoch + f.timestampBits.mask
  const lowMask = (1n << f.timestampBits.shift) - 1n
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
--   epoch ${layout.epoch} (${iso(layout.epoch)}), timestamp ${layout.timestampBits} bits (until ${iso(Number(expiresAt))}),
--   datacenterId ${layout.datacenterBits} bits, workerId ${layout.workerBits} bits, clockBack ${layout.clockBackBits} bits, sequence ${layout.sequenceBits} bits.
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

module.exports = { postgresFunctions }
