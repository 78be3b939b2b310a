'use strict'

// snowid/redis: worker ids leased from Redis, for services on more than one host.
//
// A lease is a key `{prefix}:<datacenterId>:<workerId>:lease` holding a random token, set with NX and a TTL, and
// renewed by compare-and-extend on that token. Beside it, `{prefix}:<datacenterId>:<workerId>:marks` keeps the
// slot's high-water mark (`until`, Unix ms) and the clockBack in use; it has no TTL. Every renewal first raises the
// mark to cover the new deadline, then the generator may issue until that deadline (the confirmed expiry less a
// margin), checked in Rust on every call.

const { EventEmitter } = require('node:events')
const { randomUUID } = require('node:crypto')
const snowid = require('./index.js')
// Sets a generator's lease deadline and takes in an earlier holder's mark; not reachable from user code.
const { fenceSnowflake } = require('./native.js')

const DEFAULTS = { keyPrefix: 'snowid', ttlMs: 10_000, waitMs: 0 }

// Takes the first free slot of a datacenter: the preferred one first when given (ARGV[6] >= 0), and only that one
// when ARGV[7] is 'only'. Returns { workerId, until, clockBack } of the slot taken, with the marks as stored (or
// false when there are none), or 'corrupt' and the error when the marks cannot be read.
const ACQUIRE = `
local prefix, dc, slots, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local function try(w)
  local base = prefix .. ':' .. dc .. ':' .. w
  if not redis.call('SET', base .. ':lease', token, 'NX', 'PX', ttl) then return nil end
  local ok, m = pcall(redis.call, 'HMGET', base .. ':marks', 'until', 'clockBack')
  if not ok then return {w, 'corrupt', tostring(m.err or m)} end
  return {w, m[1] or false, m[2] or false}
end
local preferred = tonumber(ARGV[6])
if preferred >= 0 then
  local r = try(preferred)
  if r or ARGV[7] == 'only' then return r or false end
end
for w = 0, slots - 1 do
  local r = try(w)
  if r then return r end
end
return false
`

// Extends the lease if it still holds our token, and first raises the mark to ARGV[3] (when given). Returns 1, 0
// when the lease is gone or held by another token, or -1 when the stored mark is not a number.
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] ~= '' then
  local ok, old = pcall(redis.call, 'HGET', KEYS[2], 'until')
  if not ok then return -1 end
  if old and not string.match(old, '^%d+$') then return -1 end
  if not old or tonumber(ARGV[3]) > tonumber(old) then
    redis.call('HSET', KEYS[2], 'until', ARGV[3], 'clockBack', ARGV[4])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

// Gives the lease back if it still holds our token. With ARGV[2], first lowers the mark to it: the generator has
// stopped, and ARGV[2] is the time of its last id, so the next holder need not wait for the deadline's mark.
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] and ARGV[2] ~= '' then
  local ok, old = pcall(redis.call, 'HGET', KEYS[2], 'until')
  if ok and old and string.match(old, '^%d+$') and tonumber(ARGV[2]) < tonumber(old) then
    redis.call('HSET', KEYS[2], 'until', ARGV[2])
  end
end
return redis.call('DEL', KEYS[1])
`

function codedError(Class, code, message, cause) {
  const err = new Class(message, cause === undefined ? undefined : { cause })
  err.code = code
  return err
}

/** Runs a Lua script on an ioredis or node-redis client. */
function scriptRunner(client) {
  if (client && typeof client === 'object' && 'isOpen' in client && typeof client.sendCommand === 'function') {
    // node-redis (the `redis` package): raw commands take strings only.
    return (script, keys, args) => client.sendCommand(['EVAL', script, String(keys.length), ...keys, ...args.map(String)])
  }
  if (client && typeof client === 'object' && typeof client.call === 'function') {
    // ioredis
    return (script, keys, args) => client.call('EVAL', script, keys.length, ...keys, ...args.map(String))
  }
  throw codedError(
    TypeError,
    'ERR_SNOWID_INVALID_ARGUMENT',
    `client: expected a connected ioredis or node-redis client, found ${client === null ? 'null' : typeof client}`,
  )
}

/**
 * Gives a slot back if `token` still holds it, first lowering its mark to `last` (Unix ms of the last id issued
 * under it) when given. Best effort: when Redis does not answer, the lease key expires by itself.
 */
function giveBack(o, workerId, token, last = '') {
  return o.run(RELEASE, slotKeys(o, workerId), [token, last]).catch(() => {})
}

/** `promise`, or a rejection after `ms`. */
function withTimeout(promise, ms, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer from Redis within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The lease key and the marks key of a slot. */
function slotKeys(o, workerId) {
  const base = `{${o.keyPrefix}}:${o.datacenterId}:${workerId}`
  return [`${base}:lease`, `${base}:marks`]
}

function integerOption(options, name, min, max, fallback) {
  const v = options[name]
  if (v === undefined) return fallback
  if (typeof v !== 'number') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', `${name}: expected an integer from ${min} to ${max}, found ${typeof v}`)
  }
  if (!Number.isInteger(v) || v < min || v > max) {
    throw codedError(RangeError, 'ERR_SNOWID_INVALID_ARGUMENT', `${name}: expected an integer from ${min} to ${max}, found ${v}`)
  }
  return v
}

const OPTION_NAMES = ['client', 'datacenterId', 'keyPrefix', 'ttlMs', 'waitMs', 'marginMs', 'snowflake', 'reacquire']

/** Checks the options of `acquireWorkerId` and fills in the defaults. */
function readOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', 'options: expected an object with a client')
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.includes(key)) {
      throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', `options: expected only ${OPTION_NAMES.join(', ')}, found ${JSON.stringify(key)}`)
    }
  }
  const run = scriptRunner(options.client)
  const keyPrefix = options.keyPrefix ?? DEFAULTS.keyPrefix
  if (typeof keyPrefix !== 'string' || keyPrefix === '' || /[{}]/.test(keyPrefix)) {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', `keyPrefix: expected a non-empty string without braces, found ${JSON.stringify(keyPrefix)}`)
  }
  const ttlMs = integerOption(options, 'ttlMs', 100, 3_600_000, DEFAULTS.ttlMs)
  const waitMs = integerOption(options, 'waitMs', 0, 3_600_000, DEFAULTS.waitMs)
  const snowflake = options.snowflake ?? {}
  if (snowflake === null || typeof snowflake !== 'object') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', 'snowflake: expected an object of Snowflake options')
  }
  for (const key of ['datacenterId', 'workerId', 'lease', 'leaseDir']) {
    if (key in snowflake) {
      throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', `snowflake.${key}: expected it left out, since the Redis lease decides it`)
    }
  }
  // The slot's count and the datacenter id, as the generator will see them (options over SNOWID_* variables).
  const env = { SNOWID_LEASE: 'off' }
  if (snowflake.workerBits !== undefined) env.SNOWID_WORKER_BITS = String(snowflake.workerBits)
  if (snowflake.datacenterBits !== undefined) env.SNOWID_DATACENTER_BITS = String(snowflake.datacenterBits)
  if (options.datacenterId !== undefined) {
    integerOption(options, 'datacenterId', 0, 2 ** 31, 0)
    env.SNOWID_DATACENTER_ID = String(options.datacenterId)
  }
  const slots = snowid.workerSlots(env)
  const probe = new snowid.Snowflake({ ...snowflake, datacenterId: slots.datacenterId, workerId: 0, lease: false }).config()
  const maxLeadMs = probe.maxLeadMs
  // The margin covers the time between reading the clock and Redis running the renewal, and the lead.
  const marginMs = integerOption(options, 'marginMs', 1, ttlMs - 1, Math.max(Math.floor(ttlMs / 5), 50) + maxLeadMs)
  if (marginMs <= maxLeadMs) {
    throw codedError(RangeError, 'ERR_SNOWID_INVALID_ARGUMENT', `marginMs: expected more than maxLeadMs (${maxLeadMs}), found ${marginMs}`)
  }
  if (options.reacquire !== undefined && typeof options.reacquire !== 'boolean') {
    throw codedError(TypeError, 'ERR_SNOWID_INVALID_ARGUMENT', 'reacquire: expected a boolean')
  }
  return {
    run,
    keyPrefix,
    ttlMs,
    waitMs,
    marginMs,
    maxLeadMs,
    snowflake,
    datacenterId: slots.datacenterId,
    slotCount: 2 ** slots.workerBits,
    reacquire: options.reacquire ?? true,
  }
}

/**
 * A worker-id slot leased from Redis. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal Redis did not
 * answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a slot again),
 * 'lost' (error) and 'reacquired' (lease).
 */
class RedisLease extends EventEmitter {
  #o
  #token
  #deadline = 0
  #timer = null
  #released = false
  #renewing = false
  #onDefault
  // The worker id whose lease key #token holds. It differs from `workerId` only while a lost lease is taking
  // another slot: `workerId` and `snowflake` move to it together, once it may be used.
  #slot

  constructor(o, workerId, token, snowflake, onDefault) {
    super()
    this.#o = o
    this.#token = token
    this.#onDefault = onDefault
    this.#slot = workerId
    /** The datacenter id of the slot. */
    this.datacenterId = o.datacenterId
    /** The worker id of the slot. */
    this.workerId = workerId
    /** A generator bound to the slot. It throws ERR_SNOWID_LEASE_LOST past the lease's deadline. */
    this.snowflake = snowflake
  }

  /** Unix ms until which the generator may issue ids: the last confirmed expiry less the margin. */
  get deadline() {
    return this.#deadline
  }

  get #keys() {
    return slotKeys(this.#o, this.#slot)
  }

  /** Internal: holds the slot, renewing it without a mark, until it may be used (see `holdUntilUsable`). */
  _hold(mark) {
    return holdUntilUsable(this.#o, mark, () => this.#renew({ withMark: false }))
  }

  /** Renews the lease once: raises the mark past the new deadline, extends the key, then moves the deadline. */
  async #renew({ withMark = true } = {}) {
    const { ttlMs, marginMs, maxLeadMs, run } = this.#o
    const sent = Date.now()
    const deadline = sent + ttlMs - marginMs
    // The generator issues ids stamped at most maxLeadMs past the clock, and only before the deadline.
    const until = withMark ? String(deadline + maxLeadMs) : ''
    const clockBack = this.snowflake && this.workerId === this.#slot ? this.snowflake.stats().clockBack : 0
    const reply = Number(await withTimeout(run(RENEW, this.#keys, [this.#token, ttlMs, until, clockBack]), Math.max(ttlMs / 3, 50), 'renew'))
    if (reply === 1) return deadline
    if (reply === -1) {
      throw codedError(Error, 'ERR_SNOWID_LEASE_CORRUPT', `lease: expected a number of ms in ${this.#keys[1]} field until, found something else; the key is left as found`)
    }
    return 0
  }

  /** Starts the generator once the lease is confirmed. */
  async start(mark) {
    const deadline = await this.#renew()
    if (!deadline) throw codedError(Error, 'ERR_SNOWID_LEASE_LOST', `lease: the slot ${this.#keys[0]} was lost before it was used`)
    // release() may have run while the renewal was out: the slot is given back, so no generator may be opened on it.
    if (this.#released) throw codedError(Error, 'ERR_SNOWID_LEASE_LOST', `lease: released before the slot ${this.#keys[0]} was used`)
    let snowflake = this.snowflake
    if (!snowflake || this.workerId !== this.#slot) {
      snowflake = new snowid.Snowflake({ ...this.#o.snowflake, datacenterId: this.datacenterId, workerId: this.#slot, lease: false })
    }
    fenceSnowflake(snowflake, deadline, mark)
    this.workerId = this.#slot
    this.snowflake = snowflake
    this.#deadline = deadline
    this.#schedule()
    return this
  }

  #schedule() {
    clearTimeout(this.#timer)
    if (this.#released) return
    this.#timer = setTimeout(() => this.#tick(), Math.max(Math.floor(this.#o.ttlMs / 3), 20))
    this.#timer.unref()
  }

  async #tick() {
    if (this.#released || this.#renewing) return
    this.#renewing = true
    try {
      const deadline = await this.#renew()
      if (this.#released) return
      if (deadline) {
        this.#deadline = deadline
        fenceSnowflake(this.snowflake, deadline)
        this.emit('renewed', { deadline })
        this.#schedule()
        return
      }
      this.#lose(`the slot's lease key no longer holds this process's token (it expired, or Redis lost it)`)
    } catch (err) {
      if (this.#released) return
      if (err && err.code === 'ERR_SNOWID_LEASE_CORRUPT') {
        this.#lose(err.message)
        return
      }
      // Redis is unreachable or slow: keep trying until the deadline; the generator stops by itself there.
      if (Date.now() >= this.#deadline) {
        this.#lose(`no renewal was confirmed before the deadline: ${err && err.message}`)
        return
      }
      this.emit('renewFailed', codedError(Error, 'ERR_SNOWID_REDIS_UNAVAILABLE', `renew: ${err && err.message}`, err))
      this.#schedule()
    } finally {
      this.#renewing = false
    }
  }

  #lose(why) {
    fenceSnowflake(this.snowflake, 0)
    this.#deadline = 0
    clearTimeout(this.#timer)
    const err = codedError(Error, 'ERR_SNOWID_LEASE_LOST', `lease: lost datacenterId ${this.datacenterId} workerId ${this.workerId}: ${why}`)
    this.emit('lost', err)
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
        taken = await takeSlot(this.#o, this.workerId, Boolean(this.#onDefault))
        if (taken) {
          this.#slot = taken.workerId
          this.#token = taken.token
          if (this.#released) return await giveBack(this.#o, taken.workerId, taken.token)
          await this._hold(taken.mark)
          await this.start(taken.mark)
          this.emit('reacquired', this)
          return
        }
      } catch (err) {
        if (taken) await giveBack(this.#o, taken.workerId, taken.token)
        if (this.#released) return
        const coded = err && typeof err.code === 'string' && err.code.startsWith('ERR_SNOWID_')
        this.emit('renewFailed', coded ? err : codedError(Error, 'ERR_SNOWID_REDIS_UNAVAILABLE', `reacquire: ${err && err.message}`, err))
        if (coded && err.code === 'ERR_SNOWID_LEASE_CORRUPT') return
      }
      await sleep(delay)
    }
  }

  /** Stops the generator, then gives the slot back. The mark stays, for the next holder. */
  async release() {
    if (this.#released) return
    this.#released = true
    clearTimeout(this.#timer)
    const stopped = this.snowflake ? fenceSnowflake(this.snowflake, 0) : 0
    // The mark is lowered only to the last id of a generator in use on the slot held: after a loss, the slot being
    // re-taken keeps the mark it has (another holder may have issued ids past this generator's last one meanwhile).
    const last = this.#deadline > 0 ? String(stopped) : ''
    this.#deadline = 0
    await giveBack(this.#o, this.#slot, this.#token, last)
  }
}

/**
 * Holds a freshly taken slot, renewing it without a mark, until it may be used: one TTL after it was taken when it
 * has no recorded history (so any earlier holder's deadline has passed), else just past the mark an earlier holder
 * left. Throws when the slot is lost meanwhile, or when the mark is further ahead of this host's clock than a TTL.
 */
async function holdUntilUsable(o, mark, renew) {
  const now = Date.now()
  const until = mark === undefined ? now + o.ttlMs : mark + 1
  if (until - now > o.ttlMs) {
    throw codedError(
      Error,
      'ERR_SNOWID_CLOCK_BACKWARDS',
      `clock: expected a time within ttlMs (${o.ttlMs}) of the mark ${mark} that the slot's last holder left, found ${now}, ${mark - now} ms behind it: are this host's and that host's clocks in sync?`,
    )
  }
  while (Date.now() < until) {
    await sleep(Math.min(Math.max(Math.floor(o.ttlMs / 3), 20), until - Date.now()))
    const ok = await renew()
    if (!ok) throw codedError(Error, 'ERR_SNOWID_LEASE_LOST', 'lease: the slot was lost while it was held before use')
  }
}

/**
 * Tries once to take a slot. Returns `{ workerId, token, mark }` (`mark` is undefined when the slot has no
 * history), or `null` when no slot is free. Throws coded errors for Redis errors and corrupt marks.
 */
async function takeSlot(o, preferred = -1, only = false) {
  const token = randomUUID()
  let reply
  try {
    reply = await withTimeout(
      o.run(ACQUIRE, [], [`{${o.keyPrefix}}`, o.datacenterId, o.slotCount, token, o.ttlMs, preferred, only ? 'only' : 'any']),
      Math.max(o.ttlMs, 1000),
      'acquire',
    )
  } catch (err) {
    throw codedError(Error, 'ERR_SNOWID_REDIS_UNAVAILABLE', `acquire: Redis did not answer: ${err && err.message}`, err)
  }
  if (!reply) return null
  const [workerId, until, clockBack] = reply
  const w = Number(workerId)
  const keys = slotKeys(o, w)
  const bad = (found) => {
    giveBack(o, w, token)
    return codedError(Error, 'ERR_SNOWID_LEASE_CORRUPT', `lease: expected ${keys[1]} to be a hash with a whole number of ms in until, found ${found}; the key is left as found`)
  }
  if (until === 'corrupt') throw bad(`a key Redis cannot read as a hash (${clockBack})`)
  if (until === null || until === undefined || until === false) {
    if (clockBack !== null && clockBack !== undefined && clockBack !== false) throw bad('a clockBack with no until')
    return { workerId: w, token, mark: undefined }
  }
  if (!/^\d{1,16}$/.test(String(until)) || !Number.isSafeInteger(Number(until))) throw bad(JSON.stringify(String(until)))
  if (clockBack !== null && clockBack !== undefined && clockBack !== false && !/^\d{1,3}$/.test(String(clockBack))) {
    throw bad(`clockBack ${JSON.stringify(String(clockBack))}`)
  }
  return { workerId: w, token, mark: Number(until) }
}

async function acquire(options, onDefault) {
  const o = readOptions(options)
  const started = Date.now()
  const retryMs = Math.max(Math.floor(Math.min(o.ttlMs, 1000) / 10), 10)
  for (;;) {
    const taken = await takeSlot(o)
    if (taken) {
      const lease = new RedisLease(o, taken.workerId, taken.token, null, onDefault)
      try {
        await lease._hold(taken.mark)
        if (onDefault) onDefault(lease)
        return await lease.start(taken.mark)
      } catch (err) {
        await lease.release()
        if (err && typeof err.code === 'string' && err.code.startsWith('ERR_SNOWID_')) throw err
        throw codedError(Error, 'ERR_SNOWID_REDIS_UNAVAILABLE', `acquire: ${err && err.message}`, err)
      }
    }
    const left = o.waitMs - (Date.now() - started)
    if (left <= 0) {
      throw codedError(
        Error,
        'ERR_SNOWID_NO_FREE_WORKER_ID',
        `acquireWorkerId: expected a free worker id among the ${o.slotCount} of datacenterId ${o.datacenterId}, found every one leased after waiting ${Date.now() - started} ms (waitMs ${o.waitMs})`,
      )
    }
    await sleep(Math.min(retryMs, left))
  }
}

/**
 * Leases a free (datacenterId, workerId) slot from Redis and returns a started lease with its `snowflake`.
 * A slot with no recorded history is held for one TTL before it is used.
 */
function acquireWorkerId(options) {
  return acquire(options, null)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return acquire(options, (lease) => {
    snowid.configure({ ...options.snowflake, datacenterId: lease.datacenterId, workerId: lease.workerId, lease: false })
  })
}

module.exports = { acquireWorkerId, configureWorkerId, RedisLease }
