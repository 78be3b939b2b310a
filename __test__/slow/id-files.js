'use strict'

// What the processes of __test__/fixtures/id-file-writer.js left in their output directory, and the checks the slow
// tests make on it: every process's summary, every id, duplicates counted by sorting, and each id's slot.

const fs = require('node:fs')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const WRITER = path.join(__dirname, '..', 'fixtures', 'id-file-writer.js')

/** The summaries written so far in `dir`, by pid. */
function summaries(dir) {
  const out = new Map()
  for (const name of fs.readdirSync(dir)) {
    if (name.endsWith('.json')) out.set(Number(name.slice(0, -'.json'.length)), JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')))
  }
  return out
}

/** Waits until `count` summaries are in `dir`, for at most `ms`; `alive()` may stop the wait early by throwing. */
async function waitForSummaries(dir, count, ms, alive = () => {}) {
  const end = Date.now() + ms
  for (;;) {
    const found = summaries(dir)
    if (found.size >= count) return found
    alive()
    if (Date.now() > end) throw new Error(`${found.size} of ${count} processes wrote a summary within ${ms} ms`)
    await sleep(100)
  }
}

/** Every id every process wrote, with the pid that wrote each file, as one BigInt64Array per pid. */
function idsOf(dir, pids) {
  const out = new Map()
  for (const pid of pids) {
    const buf = fs.readFileSync(path.join(dir, `${pid}.ids`))
    out.set(pid, new BigInt64Array(buf.buffer, buf.byteOffset, buf.length / 8))
  }
  return out
}

/** Duplicates among all the ids, counted by sorting one BigInt64Array of them all. */
function duplicates(lists) {
  const all = new BigInt64Array(lists.reduce((n, l) => n + l.length, 0))
  let at = 0
  for (const l of lists) {
    all.set(l, at)
    at += l.length
  }
  all.sort()
  let dups = 0
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) dups++
  return { total: all.length, dups }
}

/** How many of `ids` do not carry the slot (datacenterId, workerId), under the default layout (3, 5, 2, 12 bits). */
function offSlot(ids, datacenterId, workerId) {
  const want = (BigInt(datacenterId) << 5n) | BigInt(workerId)
  let off = 0
  for (const id of ids) if (((id >> 14n) & 0xffn) !== want) off++
  return off
}

module.exports = { WRITER, summaries, waitForSummaries, idsOf, duplicates, offSlot }
