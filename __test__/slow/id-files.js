'use strict'

// What the processes of __test__/fixtures/id-file-writer.js left in their output directory, and the checks the slow
// tests make on it: every process's summary, every id, each id's slot, and duplicates counted by sorting.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const { countDuplicates, readIds } = require('../helpers.js')

const WRITER = path.join(__dirname, '..', 'fixtures', 'id-file-writer.js')

/** The summaries written so far in `dir`, by pid. */
function summaries(dir) {
  const out = new Map()
  for (const name of fs.readdirSync(dir)) {
    if (name.endsWith('.json'))
      out.set(Number(name.slice(0, -'.json'.length)), JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')))
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
  for (const pid of pids) out.set(pid, readIds(path.join(dir, `${pid}.ids`)))
  return out
}

/**
 * Asserts that the lease chose both ids of every process whose summary is in `all` (`why` says so), and that they
 * hold `count` distinct slots; returns the slots, as `datacenterId:workerId`.
 */
function leaseSlots(all, count, why) {
  assert.deepEqual([...new Set(all.map(s => `${s.sources.datacenterId}/${s.sources.workerId}`))], ['lease/lease'], why)
  const slots = new Set(all.map(s => `${s.datacenterId}:${s.workerId}`))
  assert.equal(slots.size, count, 'distinct (datacenterId, workerId) slots')
  return slots
}

/**
 * The ids the processes of `found` (their summaries, by pid) wrote in `dir`: asserts that each wrote some, as many as
 * it said, every one carrying its slot, and returns the duplicates among them all, `{ total, dups }`, counted by
 * sorting.
 */
function checkIds(dir, found) {
  const ids = idsOf(dir, found.keys())
  for (const [pid, list] of ids) {
    const s = found.get(pid)
    assert.ok(list.length > 0 && list.length === s.count, `pid ${pid} wrote ${list.length} ids, said ${s.count}`)
    assert.equal(offSlot(list, s.datacenterId, s.workerId), 0, `pid ${pid}: every id carries its slot`)
  }
  const { total, dups } = countDuplicates([...ids.values()])
  return { total, dups }
}

/** How many of `ids` do not carry the slot (datacenterId, workerId), under the default layout (3, 5, 2, 12 bits). */
function offSlot(ids, datacenterId, workerId) {
  const want = (BigInt(datacenterId) << 5n) | BigInt(workerId)
  let off = 0
  for (const id of ids) if (((id >> 14n) & 0xffn) !== want) off++
  return off
}

module.exports = { WRITER, summaries, waitForSummaries, idsOf, leaseSlots, checkIds, offSlot }
