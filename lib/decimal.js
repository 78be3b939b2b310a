'use strict'

// Ids in decimal, in JS: for ids split into two 32-bit halves, where `BigInt#toString` would cost more than the
// rest of a decode. (The native side has its own, src/core/id.rs `Decimal`.)

const ZEROS = ['', '0', '00', '000', '0000', '00000', '000000', '0000000', '00000000']

/** `n`, below 10^9, as nine digits. */
function nine(n) {
  const s = '' + n
  return s.length === 9 ? s : ZEROS[9 - s.length] + s
}

/** `high * 2^32 + low` (below 2^63) in decimal, nine digits at a time, with every step exact in a double. */
function decimal(high, low) {
  // The quotient by 10^9, one 16-bit limb at a time below the high word: each remainder times 2^16, plus a limb, is
  // below 2^46.
  let r = high
  const q2 = Math.floor(r / 1e9)
  r -= q2 * 1e9
  r = r * 65536 + (low >>> 16)
  const q1 = Math.floor(r / 1e9)
  r -= q1 * 1e9
  r = r * 65536 + (low & 0xffff)
  const q0 = Math.floor(r / 1e9)
  r -= q0 * 1e9
  // Below 2^63 / 10^9, so exact.
  const q = q2 * 4294967296 + q1 * 65536 + q0
  if (q === 0) return '' + r
  if (q < 1e9) return '' + q + nine(r)
  const top = Math.floor(q / 1e9)
  return '' + top + nine(q - top * 1e9) + nine(r)
}

module.exports = { decimal }
