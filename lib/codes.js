'use strict'

// The one registry of the codes snowid's errors carry: every `ERR_SNOWID_*` that the core (src/), the entry, its
// subpaths and the CLI throw or emit. index.d.ts's `SnowidErrorCode`, lib/*.d.ts's lists and docs/errors.md's table
// are checked against it by __test__/codes.test.js, which also scans the sources for any code it lacks.

const CODES = Object.freeze([
  'ERR_SNOWID_ALREADY_CONFIGURED',
  'ERR_SNOWID_CLAIM_REFUSED',
  'ERR_SNOWID_CLOCK_BACKWARDS',
  'ERR_SNOWID_ETCD_UNAVAILABLE',
  'ERR_SNOWID_IDENTITY_REQUIRED',
  'ERR_SNOWID_ID_SPACE_CHANGED',
  'ERR_SNOWID_INVALID_ARGUMENT',
  'ERR_SNOWID_INVALID_CONFIG',
  'ERR_SNOWID_INVALID_ID',
  'ERR_SNOWID_LEASE_CORRUPT',
  'ERR_SNOWID_LEASE_DIR',
  'ERR_SNOWID_LEASE_LOST',
  'ERR_SNOWID_LEASE_UNSUPPORTED',
  'ERR_SNOWID_MYSQL_UNAVAILABLE',
  'ERR_SNOWID_NOT_PRIMARY',
  'ERR_SNOWID_NO_BINARY',
  'ERR_SNOWID_NO_FREE_WORKER_ID',
  'ERR_SNOWID_PEER_MISSING',
  'ERR_SNOWID_POSTGRES_UNAVAILABLE',
  'ERR_SNOWID_REDIS_UNAVAILABLE',
  'ERR_SNOWID_RUNTIME_PERMISSION',
  'ERR_SNOWID_SEQUENCE_EXHAUSTED',
  'ERR_SNOWID_STORE_NOT_REPLICATED',
  'ERR_SNOWID_STORE_PERMISSION_DENIED',
  'ERR_SNOWID_STORE_TABLE_INVALID',
  'ERR_SNOWID_STORE_TABLE_MISSING',
  'ERR_SNOWID_STORE_TIMEOUT',
  'ERR_SNOWID_TIME_EXHAUSTED',
  'ERR_SNOWID_TIME_IN_FUTURE',
  'ERR_SNOWID_WASI_THREAD',
  'ERR_SNOWID_WORKER_ID_IN_USE',
])

const KNOWN = new Set(CODES)

/** A new error of class `Class` (`Error`, `TypeError` or `RangeError`) with `code`, and `cause` when given. */
function codedError(Class, code, message, cause) {
  const err = new Class(message, cause === undefined ? undefined : { cause })
  err.code = code
  return err
}

/** Whether `code` is one of snowid's error codes. */
function isSnowidCode(code) {
  return typeof code === 'string' && KNOWN.has(code)
}

// Whether `value` is an Error made in any realm: the native addon makes its errors in the realm that loaded it, which
// under Jest or a vm context is not the realm of the code that catches them. `Error.isError` (Node 24) and
// `util.types.isNativeError` both read the internal slot, not the prototype chain, and neither runs a Proxy trap.
const isNativeError = typeof Error.isError === 'function' ? Error.isError : require('node:util').types.isNativeError

/**
 * Whether `value` is an error snowid made: an Error (of this realm or another) whose `code` is one of `CODES`.
 * It never throws: a revoked Proxy, or a Proxy or getter that throws when its prototype or `code` is read, is not one.
 */
function isSnowidError(value) {
  try {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false
    if (!(value instanceof Error) && !isNativeError(value)) return false
    return isSnowidCode(value.code)
  } catch {
    return false
  }
}

module.exports = { CODES, codedError, isSnowidCode, isSnowidError }
