'use strict'

// `encode` and `parse`: ids as fixed-width text (src/core/encoding.rs has the format). The common case is done here:
// a `bigint` id in range, or text of the right width and alphabet, which a call through N-API would cost several
// times over. Anything else (an id as a string or a number, an unknown encoding, text that is not an id) goes to the
// binding's, which reads it or refuses it with its coded error. So each has one JS path and one native.

const { binding, realm } = require('./addon.js')
const { refuseLeadingZeros } = require('./ids.js')

const nativeEncode = realm.wrap(binding.encode)
const nativeParse = realm.wrap(binding.parse)

const MAX_ID = 0x7fffffffffffffffn

// Base 62: 0-9, then A-Z, then a-z (ASCII order, so fixed-width texts sort as their ids do).
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
/** Each character code's base-62 digit, or 255. */
const BASE62_DIGIT = new Uint8Array(128).fill(255)
for (let i = 0; i < 62; i++) BASE62_DIGIT[BASE62.charCodeAt(i)] = i
// 62^6, above 2^32: a base-62 text is 5 digits above 6, and an id below 2^63 is below 62^6 * 62^5.
const BASE62_LOW = 56800235584
const BASE62_LOW_BIG = 56800235584n
const BASE36_LOW_BIG = 36n ** 7n
const BASE36_TEXT = /^[0-9A-Za-z]{13}$/

// An id's two 32-bit halves, read back from the 64 bits it is written to.
const ID_BITS = new BigUint64Array(1)
const HALVES = new Uint32Array(ID_BITS.buffer)
const [LOW, HIGH] = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? [0, 1] : [1, 0]

/** Every two base-62 digits, by their value (below 62^2). */
const BASE62_PAIRS = Array.from({ length: 62 * 62 }, (_, v) => BASE62[Math.floor(v / 62)] + BASE62[v % 62])

/** `n` (a whole number below 62^digits) in `digits` base-62 digits, two at a time. */
function base62Digits(n, digits) {
  let text = ''
  for (; digits > 1; digits -= 2) {
    const q = Math.floor(n / 3844)
    text = BASE62_PAIRS[n - q * 3844] + text
    n = q
  }
  return digits === 1 ? BASE62[n] + text : text
}

/** An id (a `bigint` from 0 to 2^63 - 1) in 11 base-62 digits. */
function base62(id) {
  ID_BITS[0] = id
  // The quotient and remainder by 62^6 of `high * 2^32 + low`, one 16-bit limb of `low` at a time (`high` is below
  // 62^6): each remainder times 2^16, plus a limb, is below 2^52, and each quotient digit below 2^16.
  const low = HALVES[LOW]
  let r = HALVES[HIGH] * 65536 + (low >>> 16)
  const q1 = Math.floor(r / BASE62_LOW)
  r -= q1 * BASE62_LOW
  r = r * 65536 + (low & 0xffff)
  const q0 = Math.floor(r / BASE62_LOW)
  r -= q0 * BASE62_LOW
  return base62Digits(q1 * 65536 + q0, 5) + base62Digits(r, 6)
}

/** The value of `text` (11 characters) in base 62, or -1 when a character is not in the alphabet. */
function fromBase62(text) {
  let high = 0
  let low = 0
  for (let i = 0; i < 11; i++) {
    const c = text.charCodeAt(i)
    const d = c < 128 ? BASE62_DIGIT[c] : 255
    if (d === 255) return -1n
    if (i < 5) high = high * 62 + d
    else low = low * 62 + d
  }
  return BigInt(high) * BASE62_LOW_BIG + BigInt(low)
}

/** Whether a character code is a hex digit (either case). */
function isHexDigit(c) {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)
}

/** An id as fixed-width text: the binding's `encode`, done here for a `bigint` id in range. */
function encode(id, encoding) {
  if (typeof id === 'bigint' && id >= 0n && id <= MAX_ID) {
    if (encoding === 'hex') return id.toString(16).padStart(16, '0')
    if (encoding === 'base62') return base62(id)
    if (encoding === 'base36') return id.toString(36).padStart(13, '0')
  }
  refuseLeadingZeros(id)
  return nativeEncode(id, encoding)
}

/** Text made by `encode` read back into the id: the binding's `parse`, done here for text that is an id. */
function parse(text, encoding) {
  if (typeof text === 'string') {
    let id = -1n
    if (encoding === 'hex') {
      // BigInt takes hex digits only after `0x`, but also trailing white space: hence the last character's check.
      if (text.length === 16 && isHexDigit(text.charCodeAt(15))) {
        try {
          id = BigInt('0x' + text)
        } catch {
          // Not hex: the binding says where.
        }
      }
    } else if (encoding === 'base62') {
      if (text.length === 11) id = fromBase62(text)
    } else if (encoding === 'base36' && BASE36_TEXT.test(text)) {
      id = BigInt(Number.parseInt(text.slice(0, 6), 36)) * BASE36_LOW_BIG + BigInt(Number.parseInt(text.slice(6), 36))
    }
    if (id >= 0n && id <= MAX_ID) return id
  }
  return nativeParse(text, encoding)
}

module.exports = { encode, parse }
