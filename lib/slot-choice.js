'use strict'

// Which free slot a take tries, for a store whose take is a compare-and-swap of one slot it read as free (etcd): when
// many processes start together, they all read the same free slots, and if each tried only the best one, all but one
// would lose every race. So the first try is the best slot, and after a lost race the take goes on over the other
// free slots it read, in random order within their rank, then reads again: it ends with a slot, or with a read that
// finds none free. No fixed number of tries: a lost race means another holder took or changed that slot.

const { randomInt } = require('node:crypto')

/** `items` in random order (Fisher-Yates). */
function shuffled(items) {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = randomInt(i + 1)
    ;[out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

/**
 * The order in which to try `candidates` (each `{ workerId, rank }`, a lower rank better): the best (lowest rank,
 * then lowest worker id) first, then the rest by rank, in random order within a rank.
 */
function tryOrder(candidates) {
  const sorted = [...candidates].sort((a, b) => a.rank - b.rank || a.workerId - b.workerId)
  if (sorted.length <= 1) return sorted
  const [best, ...rest] = sorted
  const ranks = [...new Set(rest.map(c => c.rank))]
  return [best, ...ranks.flatMap(rank => shuffled(rest.filter(c => c.rank === rank)))]
}

/**
 * Takes a free slot by compare-and-swap. `read()` resolves to `{ candidates, ahead }`: the free slots a take may use
 * (`{ workerId, rank, ... }`) and whatever the caller wants back when there are none. `claim(candidate)` resolves to
 * the take's result, or to null when the slot changed since it was read (the race was lost). Tries the candidates of
 * each read in `tryOrder`, reading again once all were lost, until a claim succeeds (its result) or a read finds no
 * candidate (`{ none: read }`). A race lost past `deadline` (Unix ms) throws an error with `timedOut`, as a take that
 * got no answer in time: its caller gives back whatever the take may hold and tries again.
 */
async function claimFreeSlot({ read, claim, deadline, what = 'take' }) {
  let lost = 0
  for (;;) {
    const found = await read()
    if (found.candidates.length === 0) return { none: found }
    for (const candidate of tryOrder(found.candidates)) {
      const result = await claim(candidate)
      if (result !== null) return { taken: result }
      lost++
      if (Date.now() >= deadline) {
        throw Object.assign(
          new Error(
            `${what}: every free slot tried changed before it could be taken (${lost} lost), until the take timed out`,
          ),
          { timedOut: true },
        )
      }
    }
  }
}

module.exports = { claimFreeSlot, tryOrder }
