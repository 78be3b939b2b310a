'use strict'

// snowid/redis: worker ids leased from Redis, for services on more than one host.
//
// A lease is a key `{prefix}:<datacenterId>:<workerId>:lease` holding a random token, set with NX and a TTL, and
// renewed by compare-and-extend on that token. Beside it, `{prefix}:<datacenterId>:<workerId>:marks` keeps the
// slot's high-water mark (`until`, Unix ms) and the clockBack in use; it has no TTL. Every renewal first raises the
// mark to cover the new deadline, then the generator may issue until that deadline (the confirmed expiry less a
// margin), checked in Rust on every call.
//
// The lease itself (take, hold, renew, lose, take again, release) is lib/lease.js's, shared with snowid/postgres:
// this module supplies the Redis primitives.

const { StoreLease, startLease, codedError } = require('./lease.js')

const DEFAULT_PREFIX = 'snowid'

// Every script starts with these. `call` runs a command and returns ok and its reply, or false and the error; a
// refusal by an ACL is raised instead, naming the command, so that the client can say what is missing. `must` raises
// any error.
const PRELUDE = `
local function refused(e)
  return string.find(e, "can't run", 1, true) or string.find(e, "can't access", 1, true) or string.find(e, 'NOPERM', 1, true)
end
local function call(cmd, ...)
  local ok, r = pcall(redis.call, cmd, ...)
  if ok then return true, r end
  local e = type(r) == 'table' and r.err or tostring(r)
  if refused(e) then error({err = 'NOPERM snowid ' .. cmd .. ': ' .. e}) end
  return false, e
end
local function must(cmd, ...)
  local ok, r = call(cmd, ...)
  if not ok then error({err = r}) end
  return r
end
`

// Takes a free slot of a datacenter: the preferred one first when given (ARGV[6] >= 0), and only that one when
// ARGV[7] is 'only'; then one whose mark is before ARGV[8] (usable at once); then the lowest. A slot whose mark is at
// or past ARGV[10] is skipped (the generator could not start past it). The slot taken gets its mark raised to
// ARGV[9], as a renewal does, when it has a mark snowid wrote. Returns { workerId, until, clockBack, raised } of the
// slot taken, with the marks as found (false when there are none), or 'corrupt' and the error when the marks cannot
// be read; else { 'ahead', the earliest mark skipped } or false.
const ACQUIRE =
  PRELUDE +
  `
local prefix, dc, slots, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local now, raise, limit = tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10])
local ahead = false
local function try(w, anyMark)
  local base = prefix .. ':' .. dc .. ':' .. w
  local ok, m = call('HMGET', base .. ':marks', 'until', 'clockBack')
  local mark = ok and m[1] and string.match(m[1], '^%d+$') and tonumber(m[1])
  if mark and mark >= limit then
    if not must('GET', base .. ':lease') and (not ahead or mark < ahead) then ahead = mark end
    return nil
  end
  if not anyMark and not (mark and mark < now) then return nil end
  if not must('SET', base .. ':lease', token, 'NX', 'PX', ttl) then return nil end
  if not ok then return {w, 'corrupt', m} end
  local raised = 0
  if mark and (not m[2] or string.match(m[2], '^%d%d?%d?$')) then
    if tonumber(raise) > mark then must('HSET', base .. ':marks', 'until', raise, 'clockBack', '0') end
    raised = 1
  end
  return {w, m[1] or false, m[2] or false, raised}
end
local preferred = tonumber(ARGV[6])
if preferred >= 0 then
  local r = try(preferred, true)
  if r then return r end
  if ARGV[7] == 'only' then return ahead and {'ahead', tostring(ahead)} or false end
end
for pass = 1, 2 do
  for w = 0, slots - 1 do
    local r = try(w, pass == 2)
    if r then return r end
  end
end
return ahead and {'ahead', tostring(ahead)} or false
`

// Extends the lease if it still holds our token, and first raises the mark to ARGV[3] (when given). Returns 1, 0
// when the lease is gone or held by another token, or -1 when the stored mark is not a number.
const RENEW =
  PRELUDE +
  `
if must('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] ~= '' then
  local ok, old = call('HGET', KEYS[2], 'until')
  if not ok then return -1 end
  if old and not string.match(old, '^%d+$') then return -1 end
  if not old or tonumber(ARGV[3]) > tonumber(old) then
    must('HSET', KEYS[2], 'until', ARGV[3], 'clockBack', ARGV[4])
  end
end
must('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

// Gives the lease back if it still holds our token. With ARGV[2], first lowers the mark to it: the generator has
// stopped, and ARGV[2] is the time of its last id, so the next holder need not wait for the deadline's mark.
const RELEASE =
  PRELUDE +
  `
if must('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] and ARGV[2] ~= '' then
  local ok, old = call('HGET', KEYS[2], 'until')
  if ok and old and string.match(old, '^%d+$') and tonumber(ARGV[2]) < tonumber(old) then
    must('HSET', KEYS[2], 'until', ARGV[2])
  end
end
return must('DEL', KEYS[1])
`

// Deletes every lease key of a datacenter that holds the token ARGV[3]: sent after a take whose answer timed out. Redis
// runs the commands of one connection in order, so this runs after the stray take, whatever it took.
const ABANDON =
  PRELUDE +
  `
local prefix, dc, slots, token = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local n = 0
for w = 0, slots - 1 do
  local key = prefix .. ':' .. dc .. ':' .. w .. ':lease'
  if must('GET', key) == token then n = n + must('DEL', key) end
end
return n
`

/** Runs a Lua script on an ioredis or node-redis client. */
function scriptRunner(client) {
  if (client && typeof client === 'object' && 'isOpen' in client && typeof client.sendCommand === 'function') {
    // node-redis (the `redis` package): raw commands take strings only.
    return (script, keys, args) =>
      client.sendCommand(['EVAL', script, String(keys.length), ...keys, ...args.map(String)])
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

// What an ACL refusal says: EVAL itself answers "NOPERM this user has no permissions to run the 'eval' command";
// a command inside a script is raised by the scripts as "NOPERM snowid HGET: ... can't run this command ..." or
// "... can't access at least one of the keys ...".
const NOPERM = /NOPERM\b[^\n]*/

/** A Redis permission error as ERR_SNOWID_STORE_PERMISSION_DENIED, naming the command or keys refused; else null. */
function classify(err) {
  const text = String((err && err.message) || err)
  const refused = NOPERM.exec(text)
  if (!refused) return null
  const command = /NOPERM snowid (\w+)/.exec(refused[0]) ?? /run the '(\w+)' command/.exec(refused[0])
  const missing = /can't access|permissions to access/.test(refused[0])
    ? 'access to the lease keys (~{prefix}:*, with the braces)'
    : command
      ? `the command ${command[1].toUpperCase()} (+${command[1].toLowerCase()})`
      : 'a command the lease runs'
  return codedError(
    Error,
    'ERR_SNOWID_STORE_PERMISSION_DENIED',
    `redis: expected the ACL user to have ${missing}, found it refused: ${refused[0].slice(0, 160)}. The lease needs the key pattern ~{snowid}:* (with the braces, for your keyPrefix) and the commands +eval +set +get +hmget +hget +hset +pexpire +del`,
    err,
  )
}

/** Whether an ioredis or node-redis client was closed by its owner; `err` is the error of its last call. */
function closed(client, err) {
  if (client.status === 'end' || client.isOpen === false) return true
  return (err && err.name === 'ClientClosedError') || /^Connection is closed\.?$/.test(String(err && err.message))
}

/** The Redis store of a lease: its primitives for lib/lease.js. */
function redisStore(options, o) {
  const run = scriptRunner(options.client)
  const keyPrefix = options.keyPrefix ?? DEFAULT_PREFIX
  if (typeof keyPrefix !== 'string' || keyPrefix === '' || /[{}]/.test(keyPrefix)) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `keyPrefix: expected a non-empty string without braces, found ${JSON.stringify(keyPrefix).slice(0, 60)}`,
    )
  }
  /** The lease key and the marks key of a slot. */
  const slotKeys = workerId => {
    const base = `{${keyPrefix}}:${o.datacenterId}:${workerId}`
    return [`${base}:lease`, `${base}:marks`]
  }
  const store = {
    name: 'Redis',
    unavailableCode: 'ERR_SNOWID_REDIS_UNAVAILABLE',
    slotName: workerId => slotKeys(workerId)[0],
    classify,
    closed: err => closed(options.client, err),
    async take(token, preferred, only, { now, until: raise, limit }) {
      const args = [
        `{${keyPrefix}}`,
        o.datacenterId,
        o.slotCount,
        token,
        o.ttlMs,
        preferred,
        only ? 'only' : 'any',
        now,
        raise,
        limit,
      ]
      const reply = await run(ACQUIRE, [], args)
      if (!reply) return null
      if (reply[0] === 'ahead') return { ahead: Number(reply[1]) }
      const [workerId, until, clockBack, raised] = reply
      const w = Number(workerId)
      const bad = async found => {
        await store.release(w, token, null).catch(() => {})
        return codedError(
          Error,
          'ERR_SNOWID_LEASE_CORRUPT',
          `lease: expected ${slotKeys(w)[1]} to be a hash with a whole number of ms in until, found ${found}; the key is left as found`,
        )
      }
      if (until === 'corrupt') {
        throw (
          classify(clockBack) ?? (await bad(`a key Redis cannot read as a hash (${String(clockBack).slice(0, 120)})`))
        )
      }
      if (until === null || until === undefined || until === false) {
        if (clockBack !== null && clockBack !== undefined && clockBack !== false)
          throw await bad('a clockBack with no until')
        return { workerId: w, mark: undefined }
      }
      if (!/^\d{1,16}$/.test(String(until)) || !Number.isSafeInteger(Number(until)))
        throw await bad(JSON.stringify(String(until)).slice(0, 60))
      if (
        clockBack !== null &&
        clockBack !== undefined &&
        clockBack !== false &&
        !/^\d{1,3}$/.test(String(clockBack))
      ) {
        throw await bad(`clockBack ${JSON.stringify(String(clockBack)).slice(0, 60)}`)
      }
      return { workerId: w, mark: Number(until), confirmed: Number(raised) === 1 }
    },
    async renew(workerId, token, until, clockBack) {
      const keys = slotKeys(workerId)
      const reply = Number(await run(RENEW, keys, [token, o.ttlMs, until === null ? '' : until, clockBack]))
      if (reply === -1) {
        throw codedError(
          Error,
          'ERR_SNOWID_LEASE_CORRUPT',
          `lease: expected a number of ms in ${keys[1]} field until, found something else; the key is left as found`,
        )
      }
      return reply === 1
    },
    async release(workerId, token, last) {
      await run(RELEASE, slotKeys(workerId), [token, last === null ? '' : last])
    },
    async abandon(token) {
      await run(ABANDON, [], [`{${keyPrefix}}`, o.datacenterId, o.slotCount, token])
    },
  }
  return store
}

/**
 * A worker-id slot leased from Redis. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal Redis did not
 * answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a slot again),
 * 'lost' (error) and 'reacquired' (lease).
 */
class RedisLease extends StoreLease {}

/**
 * Leases a free (datacenterId, workerId) slot from Redis and returns a started lease with its `snowflake`.
 * A slot with no recorded history is held for one TTL before it is used.
 */
function acquireWorkerId(options) {
  return startLease(options, ['keyPrefix'], redisStore, RedisLease, false)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return startLease(options, ['keyPrefix'], redisStore, RedisLease, true)
}

module.exports = { acquireWorkerId, configureWorkerId, RedisLease }
