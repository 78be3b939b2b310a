'use strict'

// The lease of a (datacenterId, workerId) slot from a shared store, for services on more than one host: one state
// machine (take, hold, renew, lose, take again, release) and its events, used by every store (snowid/redis,
// snowid/postgres, snowid/mysql, snowid/etcd). A store supplies only its primitives, as an object: the `Store`
// interface in lib/store-lease.d.ts says what each member does, and `npm run test:types` checks every store's adapter
// against it.
//
// The generator may issue ids until its deadline: the send time of the last confirmed renewal plus ttlMs, less
// marginMs, checked in Rust on every call. Every renewal first raises the slot's mark past that deadline, so a later
// holder starts past every id this one may have issued.
//
// The invariant: a slot's mark never goes below an id issued on it, under any clockBack value. A renewal only
// raises it. A release lowers it only to what fenceSnowflake returns once the generator has stopped: the latest
// time of any id it issued, which after a clock step back is a time under an earlier clockBack value, not the time
// of the last id. A new holder takes the mark in for every clockBack value, so it issues nothing at or before it.

const { EventEmitter } = require('node:events')
const { randomUUID } = require('node:crypto')
const os = require('node:os')
const snowid = require('../index.js')
const { codedError, isSnowidCode } = require('./codes.js')
const { publishLease } = require('./diagnostics.js')
// Sets a generator's lease deadline and takes in an earlier holder's mark; not reachable from user code.
const { fenceSnowflake } = require('./snowflake.js')

const DEFAULTS = { ttlMs: 10_000, waitMs: 0 }
/** Options every store takes; each store adds its own. */
const OPTION_NAMES = ['client', 'datacenterId', 'ttlMs', 'waitMs', 'marginMs', 'snowflake', 'reacquire']

function isCoded(err) {
  return Boolean(err) && isSnowidCode(err.code)
}

function integerOption(options, name, min, max, fallback) {
  const v = options[name]
  if (v === undefined) return fallback
  if (typeof v !== 'number') {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `${name}: expected an integer from ${min} to ${max}, found ${typeof v}`,
    )
  }
  if (!Number.isInteger(v) || v < min || v > max) {
    throw codedError(
      RangeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `${name}: expected an integer from ${min} to ${max}, found ${v}`,
    )
  }
  return v
}

/**
 * Checks the options every store takes and fills in the defaults; `storeOptions` names the store's own. Returns the
 * settings of the lease (`o`), without the store.
 */
function readOptions(options, storeOptions) {
  return readingOptions(() => readOptionsOf(options, storeOptions))
}

/** What `read()` returns; a getter or a Proxy of the options that throws is `ERR_SNOWID_INVALID_ARGUMENT`. */
function readingOptions(read) {
  try {
    return read()
  } catch (err) {
    if (isCoded(err)) throw err
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `options: expected plain objects, found one that threw when read: ${String((err && err.message) || err).slice(0, 160)}`,
      err,
    )
  }
}

function readOptionsOf(options, storeOptions) {
  if (options === null || typeof options !== 'object') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', 'options: expected an object with a client')
  }
  const known = [...OPTION_NAMES, ...storeOptions]
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw codedError(
        TypeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `options: expected only ${known.join(', ')}, found ${JSON.stringify(key).slice(0, 60)}`,
      )
    }
  }
  const ttlMs = integerOption(options, 'ttlMs', 100, 3_600_000, DEFAULTS.ttlMs)
  const waitMs = integerOption(options, 'waitMs', 0, 3_600_000, DEFAULTS.waitMs)
  const given = options.snowflake ?? {}
  if (given === null || typeof given !== 'object') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', 'snowflake: expected an object of Snowflake options')
  }
  // Read once: the slot count and every generator of the lease come from this copy.
  const snowflake = { ...given }
  for (const key of ['datacenterId', 'workerId', 'lease', 'leaseDir', 'leaseNamespace']) {
    if (key in snowflake) {
      throw codedError(
        TypeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `snowflake.${key}: expected it left out, since the lease decides it`,
      )
    }
  }
  // The slot's count and the datacenter id, as the generator will see them (options over SNOWID_* variables); the
  // worker id is the lease's.
  const env = { SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '0' }
  if (snowflake.workerBits !== undefined) env.SNOWID_WORKER_BITS = String(snowflake.workerBits)
  if (snowflake.datacenterBits !== undefined) env.SNOWID_DATACENTER_BITS = String(snowflake.datacenterBits)
  if (options.datacenterId !== undefined) {
    integerOption(options, 'datacenterId', 0, 2 ** 31, 0)
    env.SNOWID_DATACENTER_ID = String(options.datacenterId)
  }
  const slots = snowid.workerSlots(env)
  // The generator's options are checked up front, on a layout-only reading of them where possible.
  const probe = new snowid.Snowflake({
    ...snowflake,
    datacenterId: slots.datacenterId,
    workerId: 0,
    lease: false,
  }).config()
  const maxLeadMs = probe.maxLeadMs
  // The margin covers the time between reading the clock and the store running the renewal, and the lead.
  const marginMs = integerOption(options, 'marginMs', 1, ttlMs - 1, Math.max(Math.floor(ttlMs / 5), 50) + maxLeadMs)
  if (marginMs <= maxLeadMs) {
    throw codedError(
      RangeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `marginMs: expected more than maxLeadMs (${maxLeadMs}), found ${marginMs}`,
    )
  }
  if (options.reacquire !== undefined && typeof options.reacquire !== 'boolean') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', 'reacquire: expected a boolean')
  }
  return {
    ttlMs,
    waitMs,
    marginMs,
    maxLeadMs,
    snowflake,
    datacenterId: slots.datacenterId,
    datacenterBits: probe.datacenterBits,
    slotCount: 2 ** slots.workerBits,
    reacquire: options.reacquire ?? true,
    // How long a renewal is awaited alone: past that another is sent beside it, and the first answered counts.
    renewTimeoutMs: Math.max(Math.floor(ttlMs / 3), 50),
    // How far apart renewals go, counted from the send of the last one confirmed.
    renewEveryMs: Math.max(Math.floor(ttlMs / 3), 20),
    // How soon a renewal that failed is tried again.
    renewRetryMs: Math.max(Math.floor(ttlMs / 20), 10),
    // How long taking a slot may take: generous, since a take that times out is abandoned and retried.
    takeTimeoutMs: Math.max(ttlMs, 5000),
  }
}

// No timer of a lease keeps the process alive: while a lease waits for the store, the client's connection does.
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms).unref())

/** `promise`, or a rejection after `ms` that says the store did not answer. */
function withTimeout(store, promise, ms) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`no answer from ${store.name} within ${ms} ms`), { timedOut: true })),
      ms,
    )
    timer.unref()
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * As `storeError`, but a call that got no answer in time is first explained by the store when it can (`explain`,
 * optional: PostgreSQL tells a commit waiting for its synchronous standby from a server that is down).
 */
async function explainedError(store, what, err) {
  if (err && err.timedOut && store.explain) {
    try {
      const explained = await withTimeout(store, store.explain(what, err), 2000)
      if (explained) return explained
    } catch {
      // The store cannot say why: the plain error stands.
    }
  }
  return storeError(store, what, err)
}

/**
 * An error from a store call made for `what`, as a coded error. A lease table found missing makes the next take run
 * the store's setup again, which makes it anew.
 */
function storeError(store, what, err) {
  const coded = isCoded(err) ? err : (store.classify(err) ?? unavailable(store, what, err))
  if (coded.code === 'ERR_SNOWID_STORE_TABLE_MISSING') prepared.delete(store)
  return coded
}

/**
 * A client's error as a message names it: its message (or, when it has none, the messages of the errors it gathers),
 * then its class and code, so that an error a client made with no message (node-redis's TimeoutError) still says what
 * it is. A timeout of the lease's own is its message alone.
 */
function clientError(err) {
  if (err === null || typeof err !== 'object') return String(err)
  if (err.timedOut) return String(err.message)
  const gathered = Array.isArray(err.errors) ? err.errors.map(e => e && e.message).filter(Boolean) : []
  const message = err.message || gathered.join('; ') || 'no message'
  const kind = (err.constructor && err.constructor.name) || err.name || 'Error'
  return `${message} (${kind}${err.code === undefined ? '' : `, code ${err.code}`})`.slice(0, 240)
}

/** ERR_SNOWID_STORE_TABLE_MISSING: the lease table `table` of the store `name` ('postgres', ...) is gone (`err`). */
function tableMissing(name, table, err) {
  return codedError(
    Error,
    'ERR_SNOWID_STORE_TABLE_MISSING',
    `${name}: expected the lease table ${table}, found it missing (${clientError(err)}): it was dropped or renamed; the next take makes it again, and holds each of its slots one TTL before use`,
    err,
  )
}

/**
 * ERR_SNOWID_STORE_TIMEOUT: the store `name` cancelled a statement on `table` by its own lock or statement timeout
 * (`err`); `where` says how to see who holds the lock.
 */
function timedOut(name, table, err, where) {
  return codedError(
    Error,
    'ERR_SNOWID_STORE_TIMEOUT',
    `${name}: expected a statement on ${table} to get its locks and finish in time, found the server cancelled it (${clientError(err)}): another session holds a lock on the table (LOCK TABLE, ALTER TABLE, a long transaction; see ${where}), or the server is overloaded. The server is up`,
    err,
  )
}

/** ERR_SNOWID_*_UNAVAILABLE for a store call made for `what` that failed with `err` (its cause). */
function unavailable(store, what, err) {
  return codedError(
    Error,
    store.unavailableCode,
    `${what}: expected an answer from ${store.name}, found an error: ${clientError(err)}. Check that ${store.name} is up and the client connected; the error is this one's cause`,
    err,
  )
}

/**
 * A worker-id slot leased from a store. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal the store
 * did not answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a slot
 * again), 'lost' (error) and 'reacquired' (lease). The same, its taking and its move to another slot, are published on
 * `snowid:lease` (lib/diagnostics.js).
 */
class StoreLease extends EventEmitter {
  #store
  #o
  #token
  #deadline = 0
  #timer = null
  // Fires at the deadline, unless a renewal moved it: the generator stops issuing then, so the loss is told then.
  #expiry = null
  // Counts the losses: a renewal that was on its way when the lease was lost is then ignored.
  #epoch = 0
  // The last renewal's failure, told with the loss.
  #lastFailure = null
  #released = false
  #renewing = false
  #onDefault
  // The worker id that #token holds. It differs from `workerId` only while a lost lease is taking another slot:
  // `workerId` and `snowflake` move to it together, once it may be used.
  #slot
  // The store's incarnation at the last take (see `incarnationChanged`), recorded with every mark this lease raises.
  #incarnation
  // The renewals of the slot held that are still out, oldest first (see `#renew`). A new set with each take and loss.
  #out = new Set()

  constructor(store, o, workerId, token, onDefault) {
    super()
    this.#store = store
    this.#o = o
    this.#token = token
    this.#onDefault = onDefault
    this.#slot = workerId
    /** The datacenter id of the slot. */
    this.datacenterId = o.datacenterId
    /** The worker id of the slot. */
    this.workerId = workerId
    /** A generator bound to the slot. It throws ERR_SNOWID_LEASE_LOST past the lease's deadline. */
    this.snowflake = null
  }

  /** Publishes `event` on `snowid:lease`, when it has a subscriber. */
  #publish(event, more) {
    publishLease(event, this, this.#store.name, more)
  }

  /** For `acquire`: publishes the lease's taking. */
  _acquired() {
    this.#publish('acquired')
  }

  /** Unix ms until which the generator may issue ids: the last confirmed expiry less the margin. */
  get deadline() {
    return this.#deadline
  }

  /**
   * Holds the slot just taken at `sent`, renewing it without a mark, until it may be used (see `holdUntilUsable`).
   * Returns the send time of the last confirmed renewal (or of the take).
   */
  #hold(mark, forgotten, sent) {
    return holdUntilUsable(this.#o, mark, forgotten, sent, since => this.#renewSince(since, { withMark: false }))
  }

  /**
   * Renews the slot not yet in use: `{ deadline, sent }` (deadline 0 when the store says the slot is not held). A
   * renewal that gets no answer in time, or finds the store unreachable, is tried again until one TTL after `since`,
   * the send time of the take or of the last confirmed renewal: the store keeps the slot at least that long. Its
   * error is thrown past that. No id is issued meanwhile, and a renewal confirmed late proves the slot still held.
   */
  async #renewSince(since, options) {
    for (;;) {
      try {
        return await this.#renew(options)
      } catch (err) {
        const passed = Date.now() >= since + this.#o.ttlMs
        if (this.#released || passed || !passing(storeError(this.#store, 'renew', err))) throw err
        await sleep(this.#o.renewRetryMs)
      }
    }
  }

  /**
   * Sends a renewal, then awaits the first answer among the renewals still out, for renewTimeoutMs: `{ deadline, sent }`
   * of the one answered (deadline 0 when the slot is lost). Throws the first that failed, or the timeout. A renewal
   * that timed out stays out beside the next: answered later, it still counts, as of its own send time, so a store
   * somewhat slower than renewTimeoutMs costs no slot (docs/across-hosts.md, Errors, says how much slower).
   */
  async #renew(options) {
    const out = this.#out
    const attempt = this.#send(options).then(
      renewed => ({ renewed, attempt }),
      error => ({ failed: true, error, attempt }),
    )
    out.add(attempt)
    const settled = await withTimeout(this.#store, Promise.race(out), this.#o.renewTimeoutMs)
    if (settled.failed) {
      out.delete(settled.attempt)
      throw settled.error
    }
    // Renewals sent before this one no longer count: their deadlines are earlier.
    for (const earlier of out) {
      out.delete(earlier)
      if (earlier === settled.attempt) break
    }
    return settled.renewed
  }

  /**
   * Sends one renewal: raises the mark past the new deadline and extends the TTL. Resolves to `{ deadline, sent }`
   * (deadline 0 when the slot is lost), with no timeout of its own.
   */
  async #send({ withMark = true } = {}) {
    const { ttlMs, marginMs, maxLeadMs } = this.#o
    const sent = Date.now()
    const deadline = sent + ttlMs - marginMs
    // The generator issues ids stamped at most maxLeadMs past the clock, and only before the deadline.
    const until = withMark ? deadline + maxLeadMs : null
    const clockBack = this.snowflake && this.workerId === this.#slot ? this.snowflake.stats().clockBack : 0
    const held = await this.#store.renew(this.#slot, this.#token, until, clockBack, this.#incarnation ?? null)
    return { deadline: held ? deadline : 0, sent }
  }

  /** Takes a slot (see `takeSlot`), holds it until usable, and starts the generator on it. */
  async _open(taken) {
    this.#out = new Set()
    const forgotten = Boolean(taken.forgotten) || incarnationChanged(this.#incarnation, taken)
    this.#incarnation = taken.incarnation
    const confirmed = forgotten ? 0 : this.#confirmedByTake(taken)
    const since = confirmed ? 0 : await this.#hold(taken.mark, forgotten, taken.sent)
    if (this.#onDefault && !this.snowflake) this.#onDefault(this)
    return this.#start(taken.mark, confirmed, since)
  }

  /**
   * The deadline a take gave, or 0. A take that raised the mark (`confirmed`) did what a renewal sent at the same time
   * does, so its deadline is the same; it is used at once when the slot's mark is behind the clock, and the answer
   * came within a renewal's timeout.
   */
  #confirmedByTake({ confirmed, mark, sent }) {
    const now = Date.now()
    if (!confirmed || mark === undefined || now <= mark || now - sent >= this.#o.renewTimeoutMs) return 0
    return sent + this.#o.ttlMs - this.#o.marginMs
  }

  /**
   * Starts the generator once the lease is confirmed: by `confirmed` (a deadline), else by a renewal, tried again
   * while the store is slow or unreachable until one TTL after `since` (the send time of the hold's last confirmed
   * renewal).
   */
  async #start(mark, confirmed, since) {
    // The hold's renewals still out raised no mark, so none of them may start the generator.
    this.#out = new Set()
    const deadline = confirmed || (await this.#renewSince(since)).deadline
    const name = this.#store.slotName(this.#slot)
    if (!deadline)
      throw codedError(Error, 'ERR_SNOWID_LEASE_LOST', `lease: the slot ${name} was lost before it was used`)
    // release() may have run while the renewal was out: the slot is given back, so no generator may be opened on it.
    if (this.#released)
      throw codedError(Error, 'ERR_SNOWID_LEASE_LOST', `lease: released before the slot ${name} was used`)
    let snowflake = this.snowflake
    if (!snowflake || this.workerId !== this.#slot) {
      snowflake = new snowid.Snowflake({
        ...this.#o.snowflake,
        datacenterId: this.datacenterId,
        workerId: this.#slot,
        lease: false,
      })
    }
    fenceSnowflake(snowflake, deadline, mark)
    this.workerId = this.#slot
    this.snowflake = snowflake
    this.#deadline = deadline
    this.#lastFailure = null
    this.#armExpiry()
    this.#schedule(this.#due())
    return this
  }

  /**
   * When the next renewal is due: a third of the TTL after the last confirmed one was sent (its deadline less the TTL
   * and the margin), so that one answered late still leaves the next its time before the deadline.
   */
  #due() {
    const { ttlMs, marginMs, renewEveryMs, renewRetryMs } = this.#o
    return Math.max(this.#deadline - ttlMs + marginMs + renewEveryMs - Date.now(), renewRetryMs)
  }

  /** The next renewal, in `delayMs` (by default renewEveryMs). */
  #schedule(delayMs = this.#o.renewEveryMs) {
    clearTimeout(this.#timer)
    if (this.#released) return
    this.#timer = setTimeout(() => this.#tick(), delayMs)
    this.#timer.unref()
  }

  /** Tells the loss when the deadline comes with no renewal confirmed: the generator stops issuing at that moment. */
  #armExpiry() {
    clearTimeout(this.#expiry)
    const deadline = this.#deadline
    const expire = () => {
      if (this.#released || this.#deadline !== deadline) return
      // A timer keeps the monotonic clock in whole ms, the deadline is the wall clock's: it may fire a little early.
      const early = deadline - Date.now()
      if (early > 0) {
        this.#expiry = setTimeout(expire, early)
        this.#expiry.unref()
        return
      }
      const why = this.#lastFailure ? `: ${this.#lastFailure.message}` : ' (the renewal sent last is still unanswered)'
      this.#lose(`no renewal was confirmed before the deadline${why}`, this.#lastFailure ?? undefined)
    }
    this.#expiry = setTimeout(expire, Math.max(deadline - Date.now(), 0))
    this.#expiry.unref()
  }

  async #tick() {
    if (this.#released) return
    // A renewal of the slot lost last is still out (it ends within its timeout): try again after it.
    if (this.#renewing) return this.#schedule()
    this.#renewing = true
    const epoch = this.#epoch
    try {
      const { deadline } = await this.#renew()
      if (this.#released || epoch !== this.#epoch) return
      if (deadline) {
        this.#deadline = deadline
        fenceSnowflake(this.snowflake, deadline)
        const late = this.#lastFailure !== null
        this.#lastFailure = null
        this.#armExpiry()
        this.emit('renewed', { deadline })
        this.#publish('renewed', { late })
        this.#schedule(this.#due())
        return
      }
      this.#lose(`the slot is no longer held by this process (its lease expired, or ${this.#store.name} lost it)`)
    } catch (err) {
      if (this.#released || epoch !== this.#epoch) return
      const coded = await explainedError(this.#store, 'renew', err)
      if (this.#released || epoch !== this.#epoch) return
      if (coded.code === 'ERR_SNOWID_LEASE_CORRUPT') {
        this.#lose(coded.message, coded)
        return
      }
      // The store is unreachable, slow, or did not get the renewal replicated: keep trying until the deadline, where
      // the generator stops by itself and the expiry timer tells the loss.
      this.#lastFailure = coded
      if (Date.now() >= this.#deadline) {
        this.#lose(`no renewal was confirmed before the deadline: ${coded.message}`, coded)
        return
      }
      this.emit('renewFailed', coded)
      this.#publish('renewFailed', { error: coded })
      // Tried again soon, beside the renewal that timed out: the first of them answered counts (see #renew).
      this.#schedule(this.#o.renewRetryMs)
    } finally {
      this.#renewing = false
    }
  }

  #lose(why, cause) {
    fenceSnowflake(this.snowflake, 0)
    this.#deadline = 0
    this.#epoch++
    this.#out = new Set()
    clearTimeout(this.#timer)
    clearTimeout(this.#expiry)
    const next = this.#o.reacquire
      ? 'until the lease takes a slot again (listen for reacquired)'
      : 'from now on: acquire a new lease'
    const err = codedError(
      Error,
      'ERR_SNOWID_LEASE_LOST',
      `lease: lost datacenterId ${this.datacenterId} workerId ${this.workerId}: ${why}. Its snowflake throws ${next}`,
      cause,
    )
    this.emit('lost', err)
    this.#publish('lost', { error: err })
    if (this.#o.reacquire && !this.#released) this.#reacquire()
  }

  /**
   * Takes a slot again after a loss: this one when it is free, else (unless bound to the default generator) another.
   * Until then `snowflake` stays the fenced generator of the lost slot, so it throws ERR_SNOWID_LEASE_LOST. Each
   * failed attempt is reported as 'renewFailed', and a slot taken but not brought into use is given back at once.
   */
  async #reacquire() {
    const delay = Math.max(Math.floor(this.#o.ttlMs / 10), 20)
    while (!this.#released) {
      let taken = null
      try {
        taken = await takeSlot(this.#store, this.#o, this.workerId, Boolean(this.#onDefault))
        if (taken && taken.token) {
          this.#slot = taken.workerId
          this.#token = taken.token
          if (this.#released) return await giveBack(this.#store, taken)
          const from = this.workerId
          await this._open(taken)
          this.emit('reacquired', this)
          this.#publish(from === this.workerId ? 'reacquired' : 'moved', { previousWorkerId: from })
          return
        }
        // Free slots there were, but their marks are too far ahead of this host's clock: say so, and try again.
        if (taken) {
          const error = markAhead(this.#o, taken.ahead, Date.now(), 'every free slot it may take')
          this.emit('renewFailed', error)
          this.#publish('renewFailed', { error })
        }
      } catch (err) {
        if (taken && taken.token) await giveBack(this.#store, taken)
        if (this.#released) return
        const coded = storeError(this.#store, 'reacquire', err)
        this.emit('renewFailed', coded)
        this.#publish('renewFailed', { error: coded })
        // Errors that another try cannot mend, and a client its owner ended or closed, stop the attempts.
        if (FINAL.includes(coded.code) || this.#store.closed(err)) return
      }
      await sleep(delay)
    }
  }

  /**
   * Stops the generator, then gives the slot back. The mark stays, for the next holder. Rejects only when the store
   * refuses the release for lack of a permission; a store that does not answer frees the slot when its TTL runs out.
   */
  async release() {
    if (this.#released) return
    this.#released = true
    clearTimeout(this.#timer)
    clearTimeout(this.#expiry)
    const stopped = this.snowflake ? fenceSnowflake(this.snowflake, 0) : 0
    // The mark is lowered only to the last id of a generator in use on the slot held: after a loss, the slot being
    // re-taken keeps the mark it has (another holder may have issued ids past this generator's last one meanwhile).
    const last = this.#deadline > 0 ? stopped : null
    this.#deadline = 0
    await giveBack(this.#store, { workerId: this.#slot, token: this.#token }, last, { strict: true })
  }
}

/**
 * Gives a slot back if `token` still holds it, first lowering its mark to `last` (Unix ms of the last id issued
 * under it) when given. A store that does not answer is left to free the slot by its TTL; with `strict`, a
 * permission error is thrown.
 */
async function giveBack(store, { workerId, token }, last = null, { strict = false } = {}) {
  try {
    await withTimeout(store, store.release(workerId, token, last), 5000)
  } catch (err) {
    const classified = isCoded(err) ? err : store.classify(err)
    if (strict && classified && classified.code === 'ERR_SNOWID_STORE_PERMISSION_DENIED') throw classified
  }
}

/**
 * Holds a freshly taken slot, renewing it without a mark, until it may be used: one TTL after it was taken when it
 * has no recorded history or its history may have been lost (`forgotten`: so any earlier holder's deadline has
 * passed), and in any case just past the mark an earlier holder left. `renew(since)` renews it (`{ deadline, sent }`),
 * trying until one TTL after `since`, the send time of the take (`sent`) or of the last confirmed renewal, which is
 * returned. Throws when the slot is lost meanwhile, or when the mark is further ahead of this host's clock than a TTL.
 */
async function holdUntilUsable(o, mark, forgotten, sent, renew) {
  const now = Date.now()
  if (mark !== undefined && mark + 1 - now > o.ttlMs) throw markAhead(o, mark, now, 'the slot was taken')
  const until = Math.max(mark === undefined || forgotten ? now + o.ttlMs : 0, mark === undefined ? 0 : mark + 1)
  let since = sent
  while (Date.now() < until) {
    // A third of the TTL after the last confirmed renewal was sent: one answered late is followed at once.
    const due = since + o.renewEveryMs
    await sleep(Math.max(Math.min(due, until) - Date.now(), 0))
    const renewed = await renew(since)
    if (!renewed.deadline)
      throw codedError(Error, 'ERR_SNOWID_LEASE_LOST', 'lease: the slot was lost while it was held before use')
    since = renewed.sent
  }
  return since
}

/** Whether a store's error (`coded`) says it did not answer in time, or answered before its replicas had the change. */
function late(coded) {
  return (
    Boolean(coded.cause && coded.cause.timedOut) ||
    coded.code === 'ERR_SNOWID_STORE_TIMEOUT' ||
    coded.code === 'ERR_SNOWID_STORE_NOT_REPLICATED'
  )
}

/** Whether a store's error (`coded`) may pass: `late`, or the store unreachable. */
function passing(coded) {
  return late(coded) || coded.code.endsWith('_UNAVAILABLE')
}

/**
 * Whether a slot just taken (`taken`: the store's `incarnation` at the take, and the one the slot records, `seen`) may
 * hold data other than the data every earlier holder's lease was in, so that it waits one TTL before use, as a slot
 * with no history does: when the store cannot name its incarnation, when the slot records none (its row or key was
 * made since, and a table made again is all such rows), when it records another (a table dropped and made again, a
 * fresh server or cluster at the same address, a promoted replica), or when this lease saw another before (`before`:
 * it was moved to another server or cluster that has slots of its own).
 */
function incarnationChanged(before, { incarnation, seen }) {
  if (incarnation === null || incarnation === undefined || seen === null || seen === undefined) return true
  return String(seen) !== String(incarnation) || (before !== undefined && before !== incarnation)
}

/** Codes after which taking a slot again is not tried: the store's data or its grants need a person. */
const FINAL = ['ERR_SNOWID_LEASE_CORRUPT', 'ERR_SNOWID_STORE_PERMISSION_DENIED', 'ERR_SNOWID_STORE_TABLE_INVALID']

/** ERR_SNOWID_CLOCK_BACKWARDS for a slot's `mark` further ahead of the clock (`now`) than the lease waits. */
function markAhead(o, mark, now, why) {
  return codedError(
    Error,
    'ERR_SNOWID_CLOCK_BACKWARDS',
    `clock: expected a time within ttlMs (${o.ttlMs}) of the mark ${mark} that a slot's last holder left, found ${now}, ${mark - now} ms behind it (${why}): are this host's and that host's clocks in sync?`,
  )
}

// Each store's one-time setup (its prepare()), as a promise shared by its takes; dropped when it fails.
const prepared = new WeakMap()

function prepareOnce(store) {
  if (!prepared.has(store)) {
    prepared.set(
      store,
      store.prepare().catch(err => {
        prepared.delete(store)
        throw err
      }),
    )
  }
  return prepared.get(store)
}

/**
 * Tries once to take a slot. Returns `{ workerId, token, mark, confirmed, sent }`; else `null` when no slot is free,
 * or `{ ahead }` when the free slots were skipped because their marks are a TTL or more ahead of the clock (the
 * generator could not start past them). A take whose answer does not come in time is abandoned: the store frees
 * whatever it may still take for that token.
 */
async function takeSlot(store, o, preferred = -1, only = false) {
  const token = randomUUID()
  const sent = Date.now()
  // As a renewal sent now would: the mark covers the deadline it gives, plus the lead.
  const at = { now: sent, until: sent + o.ttlMs - o.marginMs + o.maxLeadMs, limit: sent + o.ttlMs }
  let taken
  let taking = null
  try {
    // The store's one-time setup (a table made and checked) has a timeout of its own, apart from the take's.
    if (store.prepare) await withTimeout(store, prepareOnce(store), o.takeTimeoutMs)
    // A store that cannot name its incarnation holds every slot one TTL (see incarnationChanged).
    at.incarnation = store.incarnation
      ? ((await withTimeout(store, store.incarnation(), o.takeTimeoutMs)) ?? null)
      : null
    at.holder = holderRecord(token)
    taking = store.take(token, preferred, only, at)
    taken = await withTimeout(store, taking, o.takeTimeoutMs)
  } catch (err) {
    // A take that may still run, or that ran without its replicas: whatever it took for its token is given back, now
    // and once more when its answer comes (on a pool, the first may run before the take does).
    if ((err && err.timedOut) || (err && err.code === 'ERR_SNOWID_STORE_NOT_REPLICATED')) {
      const abandon = () => store.abandon(token).catch(() => {})
      abandon()
      if (taking) taking.then(abandon, abandon)
    }
    throw await explainedError(store, 'acquire', err)
  }
  if (!taken) return null
  if (taken.workerId === undefined) return { ahead: taken.ahead }
  return { ...taken, token, sent, incarnation: at.incarnation }
}

/**
 * Leases a free slot from `store` with the settings `o`, waiting up to `o.waitMs` for one, and returns the started
 * lease (an instance of `Lease`). `onDefault(lease)` is called once the slot may be used, before the generator starts.
 */
async function acquire(store, o, Lease, onDefault) {
  // The caller awaits the acquire: it keeps the process alive until it settles, as its store calls would. (An etcd3
  // client's gRPC channel does not, between calls; a lease's renewals never do.)
  const busy = setInterval(() => {}, 1 << 30)
  try {
    return await acquireSlot(store, o, Lease, onDefault)
  } finally {
    clearInterval(busy)
  }
}

async function acquireSlot(store, o, Lease, onDefault) {
  const started = Date.now()
  const retryMs = Math.max(Math.floor(Math.min(o.ttlMs, 1000) / 10), 10)
  // A take or a first renewal that got no answer in time, or a slot lost before use (its key evicted, its row changed
  // by hand), is tried again within waitMs; every other error ends the acquire.
  const retried = coded =>
    (coded.code === 'ERR_SNOWID_LEASE_LOST' || coded.code === 'ERR_SNOWID_STORE_TABLE_MISSING' || late(coded)) &&
    Date.now() - started < o.waitMs
  for (;;) {
    let taken = null
    try {
      taken = await takeSlot(store, o)
    } catch (err) {
      if (!retried(err)) throw err
    }
    if (taken && taken.token) {
      const lease = new Lease(store, o, taken.workerId, taken.token, onDefault)
      try {
        const opened = await lease._open(taken)
        lease._acquired()
        return opened
      } catch (err) {
        await lease.release().catch(() => {})
        const coded = await explainedError(store, 'acquire', err)
        if (!retried(coded)) throw coded
      }
    }
    const left = o.waitMs - (Date.now() - started)
    if (left <= 0) {
      if (taken && taken.ahead !== undefined)
        throw markAhead(
          o,
          taken.ahead,
          Date.now(),
          `every free slot's mark is a TTL or more ahead (waited ${Date.now() - started} ms, waitMs ${o.waitMs})`,
        )
      throw codedError(
        Error,
        'ERR_SNOWID_NO_FREE_WORKER_ID',
        `acquireWorkerId: expected a free worker id among the ${o.slotCount} of datacenterId ${o.datacenterId}, found every one leased after waiting ${Date.now() - started} ms (waitMs ${o.waitMs}). ` +
          'Raise waitMs, release leases no longer used, use another datacenterId, or widen workerBits',
      )
    }
    await sleep(Math.min(retryMs, left))
  }
}

/**
 * Starts a lease: reads the options (the store's own named in `storeOptions`), makes the store with
 * `makeStore(options, o)`, and acquires a slot with it (see `acquire`). An option that throws when read (a getter,
 * a Proxy) is ERR_SNOWID_INVALID_ARGUMENT, never an uncoded error. With `configure`, the default generator is
 * configured with the slot (`configureWorkerId`).
 */
async function startLease(options, storeOptions, makeStore, Lease, configure) {
  const o = readOptions(options, storeOptions)
  const store = readingOptions(() => makeStore(options, o))
  return acquire(store, o, Lease, configure ? configureDefault(o.snowflake) : null)
}

/** The default generator configured with a lease's slot, for `configureWorkerId`. */
function configureDefault(snowflake) {
  return lease => {
    snowid.configure({ ...snowflake, datacenterId: lease.datacenterId, workerId: lease.workerId, lease: false })
  }
}

// Who holds a slot, for operators (listHolders): recorded with each take, beside the token. It never decides who
// holds: a record whose token is not the slot's is an unknown holder, and liveness is the store's TTL alone.

/** The longest command line a holder record keeps, in characters. */
const MAX_COMMAND = 256
/** The longest host name a holder record keeps (a DNS name's limit). */
const MAX_HOST = 255

/** This process as a holder: host name, pid, start time (Unix ms) and command line (bounded). */
function holderInfo() {
  return {
    host: String(os.hostname()).slice(0, MAX_HOST),
    pid: process.pid,
    since: Math.round(Date.now() - process.uptime() * 1000),
    command: process.argv.join(' ').slice(0, MAX_COMMAND),
  }
}

/** The holder record a take writes beside `token`: JSON of `holderInfo()` and the token it goes with. */
function holderRecord(token) {
  return JSON.stringify({ token, ...holderInfo() })
}

/**
 * A holder record as read (`raw`, a string or null) for the slot held by `token` (null when no token holds it): its
 * host, pid, since and command, each null when the record is missing, unreadable, or written for another token (an
 * earlier holder's, under a take by a version that records none).
 */
function readHolder(raw, token) {
  const unknown = { host: null, pid: null, since: null, command: null }
  if (typeof raw !== 'string' || raw.length > 4096) return unknown
  let r
  try {
    r = JSON.parse(raw)
  } catch {
    return unknown
  }
  // A slot no token holds shows the record its last holder left, when it stopped without releasing.
  if (r === null || typeof r !== 'object' || (token !== null && r.token !== token)) return unknown
  return {
    host: typeof r.host === 'string' ? r.host.slice(0, MAX_HOST) : null,
    pid: Number.isSafeInteger(r.pid) && r.pid > 0 ? r.pid : null,
    since: Number.isSafeInteger(r.since) && r.since >= 0 ? r.since : null,
    command: typeof r.command === 'string' ? r.command.slice(0, MAX_COMMAND) : null,
  }
}

/**
 * Lists the holders of a store's slots: of the datacenter `options.datacenterId`, or of every datacenter of the
 * layout when it is left out. Each store's `list()` gives its raw records; this reads them into one shape. Makes
 * nothing in the store (no table, no key).
 */
async function listHolders(options, storeOptions, makeStore) {
  const every = readingOptions(
    () => options !== null && typeof options === 'object' && options.datacenterId === undefined,
  )
  const o = readOptions(every ? { ...options, datacenterId: 0 } : options, storeOptions)
  const dcs = every ? Array.from({ length: 2 ** o.datacenterBits }, (_, d) => d) : [o.datacenterId]
  const holders = []
  for (const datacenterId of dcs) {
    const store = readingOptions(() => makeStore(options, { ...o, datacenterId }))
    if (!store.list) {
      throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', `listHolders: ${store.name} cannot list its holders`)
    }
    let records
    try {
      records = await withTimeout(store, store.list(), o.takeTimeoutMs)
    } catch (err) {
      throw await explainedError(store, 'listHolders', err)
    }
    const now = Date.now()
    for (const r of records) {
      holders.push({
        datacenterId,
        workerId: r.workerId,
        ...readHolder(r.holder, r.token),
        deadline: typeof r.remainingMs === 'number' && Number.isFinite(r.remainingMs) ? now + r.remainingMs : null,
        live: r.held === true,
      })
    }
  }
  return holders.sort((a, b) => a.datacenterId - b.datacenterId || a.workerId - b.workerId)
}

module.exports = { StoreLease, startLease, listHolders, codedError, tableMissing, timedOut }
