'use strict'

// `decode`. The binding's `decodeFields` checks the id, writes its number fields into `FIELDS` and returns its decimal
// form; the object is built here, as one literal of one shape, which costs a fraction of building it natively. It
// also writes the layout it decoded with, and from then on a `bigint` id in range is split here with no native call
// at all (the `Split` below), for as long as that layout is current: always for a `Snowflake`'s or a
// `SnowflakeLayout`'s, and for the module's, until `configure()` replaces it from any thread, which moves the
// process-wide count `CONFIGURED` shows. Anything else (a string, a number, a bigint out of range, a first call)
// goes to the binding, which decodes it or refuses it with its coded error (a decimal string with leading zeros,
// which the binding would read, is refused here first). So a decode has one JS path (`Split`)
// and one native (`decodeFields`).

const { binding } = require('./addon.js')
const { decimal } = require('./decimal.js')
const { refuseLeadingZeros } = require('./ids.js')

const FIELDS = binding.__decodeScratch
// The two 32-bit halves of the count of `configure()` calls (in the platform's byte order: `LOW` and `HIGH` below),
// read through a view of the count itself; absent where the runtime cannot show it, and then the module's `decode`
// always asks the binding.
const CONFIGURED = binding.__configured
const MAX_ID = 0x7fffffffffffffffn

function fields(id) {
  return {
    id,
    timestamp: FIELDS[0],
    datacenterId: FIELDS[1],
    workerId: FIELDS[2],
    clockBack: FIELDS[3],
    sequence: FIELDS[4],
  }
}

// An id's two 32-bit halves, read back from the 64 bits it is written to.
const ID_BITS = new BigUint64Array(1)
const HALVES = new Uint32Array(ID_BITS.buffer)
const [LOW, HIGH] = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? [0, 1] : [1, 0]

// A layout's split of an id `high * 2^32 + low` (below 2^63) into its fields, kept as plain numbers on the `Split`
// (one object of one shape, so each is one load). A field at bits `shift` to `end` of the id is its share of each
// half: the bits of `low` from `shift` (masked in place, then shifted down, which reads them as unsigned), plus the
// bits of `high` from `max(shift, 32) - 32`, shifted down and scaled above them. A share a field does not have has a
// mask of 0. Every field but the timestamp is at most 32 bits wide, and the timestamp at most 52, so each sum is
// exact in a double.
function maskOf(from, to) {
  return to > from ? (2 ** to - 2 ** from) | 0 : 0
}

/** A layout as the binding wrote it after a decode, which splits a `bigint` id in range into the decoded object. */
class Split {
  constructor() {
    this.epoch = FIELDS[5]
    this.countLow = FIELDS[10]
    this.countHigh = FIELDS[11]
    const widths = [FIELDS[9], FIELDS[8], FIELDS[7], FIELDS[6]]
    // Sequence, clock-back, worker, datacenter, timestamp: each field's low mask and shift, high mask and shift, and
    // the scale of its high share.
    const p = []
    let shift = 0
    for (let i = 0; i < 5; i++) {
      const end = i < 4 ? shift + widths[i] : 63
      const lowEnd = Math.min(end, 32)
      const highFrom = Math.max(shift, 32) - 32
      p.push(
        maskOf(shift, lowEnd),
        shift & 31,
        end > 32 ? maskOf(highFrom, end - 32) : 0,
        highFrom,
        2 ** Math.max(lowEnd - shift, 0),
      )
      shift = end
    }
    ;[this.sLowMask, this.sLowShift, this.sHighMask, this.sHighShift, this.sScale] = p.slice(0, 5)
    ;[this.cLowMask, this.cLowShift, this.cHighMask, this.cHighShift, this.cScale] = p.slice(5, 10)
    ;[this.wLowMask, this.wLowShift, this.wHighMask, this.wHighShift, this.wScale] = p.slice(10, 15)
    ;[this.dLowMask, this.dLowShift, this.dHighMask, this.dHighShift, this.dScale] = p.slice(15, 20)
    ;[this.tLowMask, this.tLowShift, this.tHighMask, this.tHighShift, this.tScale] = p.slice(20, 25)
  }

  /** Whether this is the layout the binding wrote last (so that a new one is made only when it changes). */
  same() {
    return this.epoch === FIELDS[5] && this.countLow === FIELDS[10] && this.countHigh === FIELDS[11]
  }

  /**
   * Whether the process-wide count is still the one this layout was read under. Plain loads: each half is one
   * aligned 32-bit word, which a store changes whole, and the count only grows, by one per call. A pair read torn
   * across a carry into the high half could match an earlier count only after 2^32 `configure()` calls; short of
   * that, a count that moved never reads as the old one (a `configure()` racing this very call may or may not be
   * seen, as with any two threads).
   */
  current() {
    return CONFIGURED !== undefined && CONFIGURED[LOW] === this.countLow && CONFIGURED[HIGH] === this.countHigh
  }

  decode(id) {
    ID_BITS[0] = id
    const low = HALVES[LOW]
    const high = HALVES[HIGH]
    return {
      id: decimal(high, low),
      timestamp:
        this.epoch +
        ((high & this.tHighMask) >>> this.tHighShift) * this.tScale +
        ((low & this.tLowMask) >>> this.tLowShift),
      datacenterId:
        ((high & this.dHighMask) >>> this.dHighShift) * this.dScale + ((low & this.dLowMask) >>> this.dLowShift),
      workerId:
        ((high & this.wHighMask) >>> this.wHighShift) * this.wScale + ((low & this.wLowMask) >>> this.wLowShift),
      clockBack:
        ((high & this.cHighMask) >>> this.cHighShift) * this.cScale + ((low & this.cLowMask) >>> this.cLowShift),
      sequence:
        ((high & this.sHighMask) >>> this.sHighShift) * this.sScale + ((low & this.sLowMask) >>> this.sLowShift),
    }
  }
}

/**
 * A `decode` function over `decodeFields`, a native function of one id. With `counted`, its layout is the module's,
 * current only while the process-wide count has not moved; without, it is fixed.
 */
function decoder(decodeFields, counted) {
  let split = null
  return function decode(id) {
    if (typeof id === 'bigint' && split !== null && id >= 0n && id <= MAX_ID && (!counted || split.current()))
      return split.decode(id)
    refuseLeadingZeros(id)
    const text = decodeFields(id)
    if (split === null || !split.same()) split = new Split()
    return fields(text)
  }
}

module.exports = { decoder }
