'use strict'

// Batches. A small `nextIds(count)` has the binding write the ids into `ID_SCRATCH` and copies them out into an
// array made here (V8 makes a small array for a fraction of what N-API pays); any other argument goes to the
// binding's own `nextIds` as it is, which makes or fills the array, or refuses the argument with its coded error.
// `nextIdStrings(count)` of a few ids is that many `nextIdString()` calls, and of more splits the one string of
// comma-joined ids the binding's `joinedIds` returns.

const { binding } = require('./addon.js')

const ID_SCRATCH = binding.__idScratch

/** `nextIds` over `fill` (the binding's, for any argument) and `scratchIds` (a small batch into the scratch). */
function idsOf(fill, scratchIds) {
  return function nextIds(count) {
    if (Number.isInteger(count) && count >= 1 && count <= ID_SCRATCH.length) {
      scratchIds(count)
      // A copy by hand: for a few ids, cheaper than `slice`.
      const ids = new BigInt64Array(count)
      for (let i = 0; i < count; i++) ids[i] = ID_SCRATCH[i]
      return ids
    }
    return fill(count)
  }
}

// Below this many, calls of `nextIdString()` cost less than one joined string and its split (CPU time per batch
// on this machine: of 4 ids, 220 ns against 259; of 5, 275 against 290; of 8, 430 against 368).
const FEW_STRINGS = 6

/**
 * `nextIdStrings` over `nextIdString` (the binding's, for a few ids) and `joinedIds` (its comma-joined decimal
 * forms, for more, or any other argument: it refuses a bad one with its coded error). Few or many, the ids are
 * those of `count` calls, in order.
 */
function stringsOf(nextIdString, joinedIds) {
  return function nextIdStrings(count) {
    if (Number.isInteger(count) && count >= 1 && count < FEW_STRINGS) {
      const ids = new Array(count)
      for (let i = 0; i < count; i++) ids[i] = nextIdString()
      return ids
    }
    return joinedIds(count).split(',')
  }
}

module.exports = { idsOf, stringsOf }
