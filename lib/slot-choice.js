'use strict'

// Which free slot a take tries, for a store whose take is a compare-and-swap of one slot it read as free (etcd): when
// many processes start together, they all read the same free slots, and if each tried only the best one, all but one
// would lose every race. So the first try is the best slot; after a lost race the take tries a few of the other free
// slots it read, in random order within their rank, then reads again (a read grows stale as the others take slots),
// and so on: it ends with a slot, or with a read that finds none free. No fixed number of tries: a lost race means
// another holder took or changed that slot.

const { randomInt } = require('node:crypto')

// How many slots of one read a take tries before it reads again.
const TRIES_PER_READ = 3

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
 * The order in which to try `candidates` (each `{ workerId, rank }`, a lower rank better): by rank, in random order
 * within a rank; with `bestFirst`, the best (lowest rank, then lowest worker id) before all.
 */
function tryOrder(candidates, { bestFirst = false } = {}) {
  const sorted = [...candidates].sort((a, b) => a.rank - b.rank || a.workerId - b.workerId)
  const [first, ...others] = sorted
  const rest = bestFirst ? others : sorted
  const ranks = [...new Set(rest.map(c => c.rank))]
  const mixed = ranks.flatMap(rank => shuffled(rest.filter(c => c.rank === rank)))
  return bestFirst && first ? [first, ...mixed] : mixed
}

/**
 * Takes a free slot by compare-and-swap. `read()` resolves to `{ candidates, ahead }`: the free slots a take may use
 * (`{ workerId, rank, ... }`) and whatever the caller wants back when there are none. `claim(candidate)` resolves to
 * the take's result, or to null when the slot changed since it was read (the race was lost). Tries the best candidate
 * of the first read, then up to `TRIES_PER_READ` of each read in `tryOrder`, reading again after them, until a claim
 * succeeds (its result) or a read finds no candidate (`{ none: read }`). A race lost past `deadline` (Unix ms) throws
 * an error with `timedOut`, as a take that got no answer in time: its caller gives back whatever the take may hold
 * and tries again.
 */
async function claimFreeSlot({ read, claim, deadline, what = 'take' }) {
  let lost = 0
  for (;;) {
    const found = await read()
    if (found.candidates.length === 0) return { none: found }
    const order = tryOrder(found.candidates, { bestFirst: lost === 0 })
    for (const candidate of order.slice(0, lost === 0 ? 1 + TRIES_PER_READ : TRIES_PER_READ)) {
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
