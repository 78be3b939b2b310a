'use strict'

// Ids from outside: `isId`, the guard for a value a client sent; the canonical decimal form that every id read from a
// string must have; and the pattern of that form for JSON Schema (`snowid/json`'s `idSchema`). The binding reads
// `"007"` as 7, so the refusal of non-canonical strings is made here, in front of each call that reads an id.

const { types } = require('node:util')
const { codedError } = require('./codes.js')

const MAX_ID = 0x7fffffffffffffffn
const MAX_TEXT = '9223372036854775807'
const EXPECTED_ID = 'a bigint, a decimal string or a safe integer from 0 to 9223372036854775807'

/** Whether `text` (a string) is an id in canonical decimal: digits only, no leading zero, at most 2^63 - 1. */
function isCanonical(text) {
  const n = text.length
  if (n === 0 || n > 19) return false
  if (text.charCodeAt(0) === 48) return n === 1
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  // Digit strings of one length compare as their numbers do.
  return n < 19 || text <= MAX_TEXT
}

/** Whether `value` is an id: a bigint, a canonical decimal string or a safe integer, from 0 to 2^63 - 1. */
function inRange(value) {
  switch (typeof value) {
    case 'bigint':
      return value >= 0n && value <= MAX_ID
    case 'string':
      return isCanonical(value)
    case 'number':
      return Number.isSafeInteger(value) && value >= 0
    default:
      return false
  }
}

/**
 * Throws the coded TypeError of a decimal id with leading zeros (`"00012"`), which the binding would read as 12. Any
 * other value is left to the binding, which reads it or refuses it with its own coded error.
 */
function refuseLeadingZeros(id) {
  if (typeof id === 'string' && id.length > 1 && id.charCodeAt(0) === 48 && /^[0-9]+$/.test(id)) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ID',
      `id: expected ${EXPECTED_ID} (in canonical decimal: no leading zeros), found the string "${id}"`,
    )
  }
}

/** `fn`, a native function of one id, behind `refuseLeadingZeros`. */
function canonicalIds(fn) {
  return {
    [fn.name || 'read'](id, ...rest) {
      if (typeof id === 'string') refuseLeadingZeros(id)
      return fn(id, ...rest)
    },
  }[fn.name || 'read']
}

/** The regular expression (as text, anchored) of the decimal strings from 0 to `max`, digits only, no leading zero. */
function decimalsUpTo(max) {
  const digits = k => (k === 0 ? '' : k === 1 ? '[0-9]' : `[0-9]{${k}}`)
  const range = (a, b) => (a === b ? `${a}` : `[${a}-${b}]`)
  const branches = ['0']
  // The numbers with fewer digits than max (but 0): a first digit, then up to max.length - 2 more.
  const shorter = max.length - 2
  if (shorter >= 0) branches.push(`[1-9]${shorter === 0 ? '' : shorter === 1 ? '[0-9]?' : `[0-9]{0,${shorter}}`}`)
  // The numbers of max's length below it: its first i digits, then a smaller digit, then any.
  for (let i = 0; i < max.length; i++) {
    const low = i === 0 ? 1 : 0
    const d = Number(max[i])
    if (d > low) branches.push(max.slice(0, i) + range(low, d - 1) + digits(max.length - i - 1))
  }
  if (max !== '0') branches.push(max)
  return `^(${branches.join('|')})$`
}

/** The pattern of an id in canonical decimal, 0 to 9223372036854775807, for JSON Schema's `pattern`. */
const ID_PATTERN = decimalsUpTo(MAX_TEXT)

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`
  if (typeof value === 'number' || typeof value === 'bigint') return `the ${typeof value} ${String(value)}`
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

/** A window bound: a valid `Date` or finite Unix ms, as ms. */
function bound(value, what) {
  if (types.isDate(value)) {
    const ms = value.getTime()
    if (Number.isNaN(ms)) {
      throw codedError(
        RangeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `${what}: expected a valid Date, found an invalid Date`,
      )
    }
    return ms
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw codedError(RangeError, 'ERR_SNOWID_INVALID_ARGUMENT', `${what}: expected finite Unix ms, found ${value}`)
    }
    return value
  }
  throw codedError(
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    `${what}: expected a Date or Unix ms, found ${describe(value)}`,
  )
}

/**
 * `isId` for a layout: `timestampOf` reads an id's Unix ms with it. `layoutOf`, when given, lets the options name
 * another layout (`options.layout`, a `Snowflake` or `SnowflakeLayout`): it returns that instance's `timestampOf`, or
 * null for anything else.
 */
function idGuard(name, timestampOf, layoutOf) {
  const keys = layoutOf ? ['notBefore', 'notAfter', 'layout'] : ['notBefore', 'notAfter']
  const expected = `options with ${keys.slice(0, -1).join(', ')} or ${keys[keys.length - 1]}`
  // The window of `options`, checked whole: the programmer's mistakes throw, whatever the value.
  function windowOf(options) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw codedError(
        TypeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `${name}: expected ${expected}, found ${describe(options)}`,
      )
    }
    for (const key of Object.keys(options)) {
      if (!keys.includes(key)) {
        throw codedError(
          TypeError,
          'ERR_SNOWID_INVALID_ARGUMENT',
          `${name}: expected ${expected}, found the option "${key}"`,
        )
      }
    }
    const { notBefore, notAfter, layout } = options
    const from = notBefore === undefined ? -Infinity : bound(notBefore, `${name}: options.notBefore`)
    const to = notAfter === undefined ? Infinity : bound(notAfter, `${name}: options.notAfter`)
    if (from > to) {
      throw codedError(
        RangeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `${name}: expected options.notBefore at or before options.notAfter, found ${from} after ${to}`,
      )
    }
    let read = timestampOf
    if (layout !== undefined) {
      read = layoutOf(layout)
      if (read === null) {
        throw codedError(
          TypeError,
          'ERR_SNOWID_INVALID_ARGUMENT',
          `${name}: options.layout: expected a Snowflake or a SnowflakeLayout, found ${describe(layout)}`,
        )
      }
    }
    return { from, to, read }
  }
  return function isId(value, options) {
    if (options === undefined) return inRange(value)
    const { from, to, read } = windowOf(options)
    if (!inRange(value)) return false
    if (from === -Infinity && to === Infinity) return true
    const ms = read(value)
    return ms >= from && ms <= to
  }
}

module.exports = { ID_PATTERN, MAX_ID, canonicalIds, decimalsUpTo, idGuard, inRange, isCanonical, refuseLeadingZeros }
