'use strict'

// Batches. A small `nextIds(count)` has the binding write the ids into `ID_SCRATCH` and copies them out into an
// array made here (V8 makes a small array for a fraction of what N-API pays); any other argument goes to the
// binding's own `nextIds` as it is, which makes or fills the array, or refuses the argument with its coded error.
// `nextIdStrings(count)` splits the one string of comma-joined ids the binding's `joinedIds` returns.

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

/** `nextIdStrings` over `joinedIds`, the binding's comma-joined decimal forms. */
function stringsOf(joinedIds) {
  return function nextIdStrings(count) {
    return joinedIds(count).split(',')
  }
}

module.exports = { idsOf, stringsOf }
