'use strict'

// lib/store-lease.js's state machine against a store of the test's own, in this process: when 'lost' fires, what a slot
// whose history may have been lost waits (its store's incarnation changed, or unknown), a renewal the replicas did not
// confirm, a take answered after its caller gave up, and what a failed take's error says. The stores' own tests run the
// same machine against real servers.

const test = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const { setTimeout: sleep } = require('node:timers/promises')

require('./helpers.js').isolateLeases()

const { StoreLease, startLease, codedError } = require('../lib/store-lease.js')

/** A store of one slot, held in memory, in the incarnation `store.current`; `renew` is the test's to replace. */
function memoryStore(overrides = {}) {
  const slot = { token: null, mark: undefined, incarnation: undefined }
  const store = {
    current: 'first',
    async incarnation() {
      return store.current
    },
    name: 'Memory',
    unavailableCode: 'ERR_SNOWID_REDIS_UNAVAILABLE',
    slotName: w => `slot ${w}`,
    classify: () => null,
    closed: () => false,
    slot,
    async take(token, _preferred, _only, { until, incarnation }) {
      if (slot.token) return null
      slot.token = token
      const found = slot.mark
      const seen = slot.incarnation
      if (found !== undefined) Object.assign(slot, { mark: Math.max(found, until), incarnation })
      return { workerId: 0, mark: found, confirmed: found !== undefined, seen, ...overrides.taken }
    },
    async renew(_w, token, until, _clockBack, incarnation) {
      if (slot.token !== token) return false
      if (until !== null) Object.assign(slot, { mark: Math.max(slot.mark ?? 0, until), incarnation })
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
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
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
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
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
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
  const ttlMs = 800
  const started = Date.now()
  const lease = await start(store, { ttlMs })
  const waited = Date.now() - started
  assert.ok(waited >= ttlMs, `used after ${waited} ms`)
  await lease.release()
})

test('renewals the replicas do not confirm never move the deadline: renewFailed, then lost at the deadline', async t => {
  const store = memoryStore()
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
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

test('a slot held before use keeps it through renewals the store does not answer in time, until its deadline', async () => {
  // A fresh slot (no mark) is held one TTL before use; a renewal waits ttlMs / 3 (300 ms) for its answer.
  const ttlMs = 900
  const store = memoryStore()
  const renew = store.renew
  let calls = 0
  store.renew = (...args) => (++calls === 1 ? new Promise(() => {}) : renew(...args))
  const started = Date.now()
  const lease = await start(store, { ttlMs })
  assert.ok(Date.now() - started >= ttlMs, `used after ${Date.now() - started} ms`)
  assert.ok(calls >= 3, `${calls} renewals: the unanswered one, one after it, and the one that starts the generator`)
  assert.equal(typeof lease.snowflake.nextId(), 'bigint')
  await lease.release()
  assert.equal(store.slot.token, null)

  // None answered: the acquire fails with the store's timeout one TTL after the take, and gives the slot back.
  const silent = memoryStore()
  silent.renew = () => new Promise(() => {})
  const began = Date.now()
  await assert.rejects(start(silent, { ttlMs }), err => {
    assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE', err.message)
    assert.match(err.message, /no answer from Memory within 300 ms/)
    return true
  })
  assert.ok(Date.now() - began >= ttlMs - 300, `failed after ${Date.now() - began} ms`)
  assert.equal(silent.slot.token, null, 'the slot was given back')
})

test('a renewal answered after its timeout, within the TTL, still counts, and the next goes a third of the TTL after its sending', async () => {
  // A renewal waits ttlMs / 3 for its answer; this store answers each one `latency` ms after it was sent.
  let latency = 1300
  const store = memoryStore()
  const renew = store.renew
  const sends = []
  store.renew = async (...args) => {
    sends.push(Date.now())
    await sleep(latency)
    return renew(...args)
  }
  // A fresh slot, held one TTL (3 s) before use: every renewal of the hold times out (1000 ms), and is answered before
  // the TTL runs out.
  const lease = await start(store, { ttlMs: 3000 })
  // Only a renewal that raised the mark starts the generator: the mark covers its deadline.
  assert.ok(store.slot.mark >= lease.deadline, `mark ${store.slot.mark}, deadline ${lease.deadline}`)
  assert.equal(typeof lease.snowflake.nextId(), 'bigint')
  await lease.release()

  // Its mark recorded, the slot is used at once; renewals (2000 ms of timeout) are answered after 1400 ms. Sent a third
  // of the TTL after the one before was answered, they would go 3400 ms apart.
  latency = 1400
  sends.length = 0
  const running = await start(store, { ttlMs: 6000 })
  let lost = null
  running.on('lost', err => {
    lost = err
  })
  const waitUntil = Date.now() + 20_000
  while (sends.length < 3 && !lost && Date.now() < waitUntil) await sleep(50)
  await running.release()
  assert.equal(lost, null, 'the lease was lost')
  assert.ok(sends.length >= 3, `${sends.length} renewals sent in 20 s`)
  const gaps = [sends[1] - sends[0], sends[2] - sends[1]]
  for (const gap of gaps) assert.ok(gap < 2800, `renewals sent ${gaps.join(' and ')} ms apart`)
})

test('a running lease whose store answers every renewal a little after its timeout keeps its slot', async () => {
  // ttlMs 6000: a renewal waits 2000 ms for its answer, and confirms a deadline 4800 ms past its sending. This store
  // answers each after 2200 ms: the one that timed out is still awaited beside the next, and its answer counts.
  const store = memoryStore()
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
  const renew = store.renew
  store.renew = async (...args) => {
    await sleep(2200)
    return renew(...args)
  }
  const lease = await start(store, { ttlMs: 6000 })
  let lost = null
  let renewed = 0
  let failed = 0
  lease.on('lost', err => {
    lost = err
  })
  lease.on('renewed', () => renewed++)
  lease.on('renewFailed', () => failed++)
  const waitUntil = Date.now() + 25_000
  while (renewed < 3 && !lost && Date.now() < waitUntil) await sleep(50)
  await lease.release()
  assert.equal(lost, null, 'the lease was lost')
  assert.ok(renewed >= 3, `${renewed} renewals confirmed in 25 s`)
  assert.ok(failed >= 1, 'the renewals timed out first')
})

test('a slot that records no incarnation, or another, waits one TTL, even with a mark behind the clock', async () => {
  const ttlMs = 800
  for (const recorded of [undefined, 'another']) {
    const store = memoryStore()
    Object.assign(store.slot, { mark: Date.now() - 1, incarnation: recorded })
    const started = Date.now()
    const lease = await start(store, { ttlMs })
    const waited = Date.now() - started
    assert.ok(waited >= ttlMs, `recorded ${recorded}: used after ${waited} ms`)
    assert.equal(store.slot.incarnation, 'first', 'the renewals record the incarnation with the mark')
    await lease.release()
    // Recorded now: the next take uses the slot as soon as the clock is past its mark.
    const again = Date.now()
    const next = await start(store, { ttlMs })
    assert.ok(Date.now() - again < ttlMs, `recorded ${recorded}: the next take waited ${Date.now() - again} ms`)
    await next.release()
  }
  // A store that cannot name its incarnation holds every slot one TTL.
  const unknown = memoryStore()
  Object.assign(unknown.slot, { mark: Date.now() - 1, incarnation: 'first' })
  unknown.current = null
  const started = Date.now()
  const lease = await start(unknown, { ttlMs })
  assert.ok(Date.now() - started >= ttlMs, `unknown incarnation: used after ${Date.now() - started} ms`)
  await lease.release()
})

test('a lease moved to another incarnation takes its slot again one TTL later, whatever that slot records', async () => {
  const store = memoryStore()
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
  const ttlMs = 600
  const lease = await start(store, { ttlMs })
  // Another server at the same address, with slots of its own: the slot is free there and records that server.
  store.current = 'second'
  Object.assign(store.slot, { token: null, mark: Date.now() - 1, incarnation: 'second' })
  const [lost] = await once(lease, 'lost')
  assert.equal(lost.code, 'ERR_SNOWID_LEASE_LOST')
  const lostAt = Date.now()
  await once(lease, 'reacquired')
  assert.ok(Date.now() - lostAt >= ttlMs, `reacquired ${Date.now() - lostAt} ms after the loss`)
  await lease.release()
})

test('a take answered after its caller gave up is given back, so no slot stays held under a token nobody owns', async () => {
  const store = memoryStore()
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
  const take = store.take
  let late
  // The take runs (the slot is taken) only after the lease's timeout for it (takeTimeoutMs, 5 s at least), and the
  // abandon sent at the timeout comes first, as on a pool whose other connection is not stuck.
  store.take = (...args) =>
    (late = new Promise(resolve => setTimeout(resolve, 6000)).then(() => take.apply(store, args)))
  store.abandon = async token => {
    if (store.slot.token === token) store.slot.token = null
  }
  await assert.rejects(start(store, { ttlMs: 1000 }), err => {
    assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE')
    assert.match(err.message, /no answer from Memory within 5000 ms/)
    return true
  })
  await late
  await sleep(50)
  assert.equal(store.slot.token, null, 'the late take was given back')
})

test("a failed take's error names the store's own error: its code and message, or its inner error's", async () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  for (const [thrown, expected] of [
    [
      refused,
      /found an error: connect ECONNREFUSED 127\.0\.0\.1:5432 \(Error, code ECONNREFUSED\)\. Check that Memory is up/,
    ],
    // pg's error when every address of the host refuses: an AggregateError with no message of its own.
    [new AggregateError([refused]), /found an error: connect ECONNREFUSED 127\.0\.0\.1:5432 \(AggregateError\)\./],
    [
      Object.assign(new Error('Connection terminated'), { code: 'XX000' }),
      /found an error: Connection terminated \(Error, code XX000\)/,
    ],
  ]) {
    const store = memoryStore()
    store.take = async () => {
      throw thrown
    }
    await assert.rejects(start(store, { ttlMs: 1000 }), err => {
      assert.equal(err.code, 'ERR_SNOWID_REDIS_UNAVAILABLE')
      assert.match(err.message, expected)
      assert.equal(err.cause, thrown)
      return true
    })
  }
})

test("'lost' is never told before the clock reads the deadline, though a timer may fire a little early by it", async t => {
  const store = memoryStore()
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
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

test("a renewal confirmed after failed ones is published on snowid:lease as 'renewed', late", async t => {
  const dc = require('node:diagnostics_channel')
  const messages = []
  const onMessage = m => messages.push(m)
  dc.subscribe('snowid:lease', onMessage)
  t.after(() => dc.unsubscribe('snowid:lease', onMessage))
  const store = memoryStore()
  Object.assign(store.slot, { mark: Date.now() - 1, incarnation: 'first' })
  const lease = await start(store, { ttlMs: 3000, reacquire: false })
  t.after(() => lease.release())
  const renew = store.renew
  let failures = 1
  store.renew = (...args) => (failures-- > 0 ? Promise.reject(new Error('no answer')) : renew(...args))
  await once(lease, 'renewed')
  const mine = messages
    .filter(m => m.lease === lease)
    .map(m => [m.event, m.store, m.late ?? null, m.error?.code ?? null])
  assert.deepEqual(mine, [
    ['acquired', 'Memory', null, null],
    ['renewFailed', 'Memory', null, 'ERR_SNOWID_REDIS_UNAVAILABLE'],
    ['renewed', 'Memory', true, null],
  ])
})
