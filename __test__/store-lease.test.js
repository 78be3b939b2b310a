'use strict'

// lib/store-lease.js's state machine against a store of the test's own, in this process: when 'lost' fires, what a slot
// whose history may have been lost waits, and a renewal the replicas did not confirm. The stores' own tests run the
// same machine against real servers.

const test = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const { setTimeout: sleep } = require('node:timers/promises')

require('./helpers.js').isolateLeases()

const { StoreLease, startLease, codedError } = require('../lib/store-lease.js')

/** A store of one slot, held in memory; `renew` is the test's to replace. */
function memoryStore(overrides = {}) {
  const slot = { token: null, mark: undefined }
  const store = {
    name: 'Memory',
    unavailableCode: 'ERR_SNOWID_REDIS_UNAVAILABLE',
    slotName: w => `slot ${w}`,
    classify: () => null,
    closed: () => false,
    slot,
    async take(token, _preferred, _only, { until }) {
      if (slot.token) return null
      slot.token = token
      const found = slot.mark
      if (found !== undefined) slot.mark = Math.max(found, until)
      return { workerId: 0, mark: found, confirmed: found !== undefined, ...overrides.taken }
    },
    async renew(_w, token, until) {
      if (slot.token !== token) return false
      if (until !== null) slot.mark = Math.max(slot.mark ?? 0, until)
      return true
    },
    async release(_w, token, last) {
      if (slot.token !== token) return
      if (last !== null) slot.mark = Math.min(slot.mark, last)
      slot.token = null
    },
    async abandon() {},
  }
  return Object.assign(store, overrides.store)
}

// No timer of a lease keeps a process alive; a real store's connection would. This stands in for it.
const alive = setInterval(() => {}, 1000)
test.after(() => clearInterval(alive))

const start = (store, options) => startLease({ client: {}, ...options }, [], () => store, StoreLease, false)

test("'lost' fires when the generator stops issuing (at the deadline), not one renewal later", async t => {
  const store = memoryStore()
  store.slot.mark = Date.now() - 1
  const ttlMs = 3000
  const lease = await start(store, { ttlMs, reacquire: false })
  t.after(() => lease.release())
  // From now on every renewal goes unanswered, as when the store is cut off.
  store.renew = () => new Promise(() => {})
  const deadline = lease.deadline
  const [err] = await once(lease, 'lost')
  const lostAt = Date.now()
  assert.equal(err.code, 'ERR_SNOWID_LEASE_LOST')
  assert.match(err.message, /no renewal was confirmed before the deadline/)
  assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
  // A renewal is tried every ttlMs / 3 (1000 ms) and waits ttlMs / 3 for its answer: one renewal later is 1 s or more.
  assert.ok(lostAt >= deadline, `lost ${lostAt - deadline} ms before the deadline`)
  assert.ok(lostAt - deadline < 500, `lost ${lostAt - deadline} ms after the deadline`)
  t.diagnostic(`'lost' came ${lostAt - deadline} ms after the deadline`)
})

test('a renewal answered after the loss neither moves the deadline nor opens the generator again', async t => {
  const store = memoryStore()
  store.slot.mark = Date.now() - 1
  const lease = await start(store, { ttlMs: 600, reacquire: false })
  t.after(() => lease.release())
  let answer
  store.renew = () => new Promise(resolve => (answer = resolve))
  await once(lease, 'lost')
  answer?.(true)
  await sleep(300)
  assert.equal(lease.deadline, 0)
  assert.throws(() => lease.snowflake.nextId(), { code: 'ERR_SNOWID_LEASE_LOST' })
})

test('a slot whose history may have been lost (forgotten) waits one TTL, even with a mark behind the clock', async () => {
  const store = memoryStore({ taken: { forgotten: true } })
  store.slot.mark = Date.now() - 1
  const ttlMs = 800
  const started = Date.now()
  const lease = await start(store, { ttlMs })
  const waited = Date.now() - started
  assert.ok(waited >= ttlMs, `used after ${waited} ms`)
  await lease.release()
})

test('renewals the replicas do not confirm never move the deadline: renewFailed, then lost at the deadline', async t => {
  const store = memoryStore()
  store.slot.mark = Date.now() - 1
  const lease = await start(store, { ttlMs: 900, reacquire: false })
  t.after(() => lease.release())
  const deadline = lease.deadline
  store.renew = async () => {
    throw codedError(Error, 'ERR_SNOWID_STORE_NOT_REPLICATED', 'renew: expected 1 replica, found 0')
  }
  const failed = []
  lease.on('renewFailed', e => failed.push(e.code))
  const [err] = await once(lease, 'lost')
  assert.equal(lease.deadline, 0)
  assert.ok(Date.now() >= deadline)
  assert.ok(failed.length >= 1 && failed.every(c => c === 'ERR_SNOWID_STORE_NOT_REPLICATED'), failed.join())
  assert.match(err.message, /expected 1 replica/)
  assert.equal(err.cause.code, 'ERR_SNOWID_STORE_NOT_REPLICATED')
})

test("'lost' is never told before the clock reads the deadline, though a timer may fire a little early by it", async t => {
  const store = memoryStore()
  store.slot.mark = Date.now() - 1
  const lease = await start(store, { ttlMs: 600, reacquire: false })
  t.after(() => lease.release())
  store.renew = () => new Promise(() => {})
  const deadline = lease.deadline
  // A timer runs on the monotonic clock in whole ms, and the deadline is the wall clock's: the expiry timer may come
  // up to a ms early by the wall clock (about 1 start in 100 here), or more while the wall clock is slewed. Made
  // certain here: from now on the wall clock reads 20 ms behind.
  const now = Date.now
  Date.now = () => now() - 20
  t.after(() => {
    Date.now = now
  })
  await once(lease, 'lost')
  const at = Date.now()
  assert.ok(at >= deadline, `'lost' came ${deadline - at} ms before the deadline by the clock`)
})
