'use strict'

// snowid/redis: worker ids leased from Redis, for services on more than one host.
//
// A lease is a key `{prefix}:<datacenterId>:<workerId>:lease` holding a random token, set with NX and a TTL, and
// renewed by compare-and-extend on that token. Beside it, `{prefix}:<datacenterId>:<workerId>:marks` keeps the
// slot's high-water mark (`until`, Unix ms) and the clockBack in use; it has no TTL. Every renewal first raises the
// mark to cover the new deadline, then the generator may issue until that deadline (the confirmed expiry less a
// margin), checked in Rust on every call. Every key a script touches is passed in KEYS, under the one hash tag
// `{prefix}`, so Redis Cluster routes a whole take to the node that holds them all.
//
// Replicas and failover. A write on a master is confirmed only once `replicas` replicas acknowledge it (WAIT, sent
// on the same connection right after the script): by default as many as the master has had connected under its
// current replication id, a number kept in `{prefix}:replicas` so that it never drops while the replicas are cut
// off. So a master cut off from its replicas (the old side of a split brain) confirms no renewal, and its holders
// stop at their deadlines. Every mark is written with the master's replication id and offset; a slot whose mark was
// written under another replication id, or at an offset the master has not reached (it restarted from an older
// snapshot), may have lost its history in a failover, and waits one TTL before use, as a slot with no history does.
//
// Incarnation. What identifies a dataset is a key that goes only with it: `{prefix}:incarnation` holds a random id,
// set once (SET NX) by the first take, and every mark is written with it. A slot whose marks record another (keys
// copied or restored from another dataset, the incarnation key deleted by hand) waits one TTL before use, as one
// whose marks record none does (marks an older version wrote); a dataset that lost its data lost the marks too.
//
// The lease itself (take, hold, renew, lose, take again, release) is lib/store-lease.js's, shared with snowid/postgres:
// this module supplies the Redis primitives.

const { randomUUID } = require('node:crypto')
const { StoreLease, startLease, listHolders: listStoreHolders, codedError } = require('./store-lease.js')

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

// The master's replication id and offset, and how many replicas it has connected (INFO replication).
const REPLICATION = `
local function replication()
  local info = must('INFO', 'replication')
  return string.match(info, 'master_replid:(%x+)') or '', tonumber(string.match(info, 'master_repl_offset:(%d+)') or '0'),
    tonumber(string.match(info, 'connected_slaves:(%d+)') or '0')
end
`

// Takes a free slot of a datacenter: KEYS are each slot's lease and marks keys, in order, then the replicas key.
// ARGV[9] is the incarnation, written with a mark the take raises; the one the marks record is returned last.
// ARGV[10] is the holder record (lib/store-lease.js), kept in the marks' field holder for listHolders. The
// preferred slot first when given (ARGV[3] >= 0), and only that one when ARGV[4] is 'only'; then one whose mark is
// before ARGV[5] (usable at once); then the lowest. A slot whose mark is at or past ARGV[7] is skipped (the generator
// could not start past it). The slot taken gets its mark raised to ARGV[6], as a renewal does, when it has a mark
// snowid wrote. The replicas a write needs: ARGV[8] when it is a number, else as many as the master has had under its
// replication id (kept in the replicas key). Returns { workerId, until, clockBack, raised, forgotten, replicas } of the
// slot taken, with the marks as found (false when there are none), `forgotten` 1 when they were written under another
// replication id or past the master's offset; or 'corrupt' and the error when the marks cannot be read; else
// { 'ahead', the earliest mark skipped } or false.
const ACQUIRE =
  PRELUDE +
  REPLICATION +
  `
local token, ttl, slots = ARGV[1], ARGV[2], (#KEYS - 1) / 2
local now, raise, limit = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local replid, offset, connected = replication()
local replicas = tonumber(ARGV[8])
if not replicas then
  local known = tonumber(must('HGET', KEYS[#KEYS], replid)) or 0
  replicas = math.max(known, connected)
  if replicas > known then
    if known == 0 then must('DEL', KEYS[#KEYS]) end
    must('HSET', KEYS[#KEYS], replid, replicas)
  end
end
local ahead = false
local function try(w, anyMark)
  local leaseKey, marksKey = KEYS[2 * w + 1], KEYS[2 * w + 2]
  local ok, m = call('HMGET', marksKey, 'until', 'clockBack', 'replid', 'offset', 'incarnation')
  local mark = ok and m[1] and string.match(m[1], '^%d+$') and tonumber(m[1])
  if mark and mark >= limit then
    if not must('GET', leaseKey) and (not ahead or mark < ahead) then ahead = mark end
    return nil
  end
  if not anyMark and not (mark and mark < now) then return nil end
  if not must('SET', leaseKey, token, 'NX', 'PX', ttl) then return nil end
  if not ok then return {w, 'corrupt', m} end
  -- Who holds it, for listHolders only: a write that fails leaves the take as it is.
  if ARGV[10] ~= '' then pcall(redis.call, 'HSET', marksKey, 'holder', ARGV[10]) end
  local raised, forgotten = 0, 0
  if m[3] and (m[3] ~= replid or (tonumber(m[4]) or 0) > offset) then forgotten = 1 end
  if mark and (not m[2] or string.match(m[2], '^%d%d?%d?$')) then
    if tonumber(raise) > mark then
      must('HSET', marksKey, 'until', raise, 'clockBack', '0', 'replid', replid, 'offset', offset, 'incarnation', ARGV[9])
    end
    raised = 1
  end
  return {w, m[1] or false, m[2] or false, raised, forgotten, replicas, m[5] or false}
end
local preferred = tonumber(ARGV[3])
if preferred >= 0 then
  local r = try(preferred, true)
  if r then return r end
  if ARGV[4] == 'only' then return ahead and {'ahead', tostring(ahead)} or false end
end
for pass = 1, 2 do
  for w = 0, slots - 1 do
    local r = try(w, pass == 2)
    if r then return r end
  end
end
return ahead and {'ahead', tostring(ahead)} or false
`

// Extends the lease if it still holds our token, and first raises the mark to ARGV[3] (when given), with the master's
// replication id and offset, and the incarnation ARGV[5]. Returns 1, 0 when the lease is gone or held by another token, or -1 when the stored mark
// is not a number.
const RENEW =
  PRELUDE +
  REPLICATION +
  `
if must('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] ~= '' then
  local ok, old = call('HGET', KEYS[2], 'until')
  if not ok then return -1 end
  if old and not string.match(old, '^%d+$') then return -1 end
  if not old or tonumber(ARGV[3]) > tonumber(old) then
    local replid, offset = replication()
    must('HSET', KEYS[2], 'until', ARGV[3], 'clockBack', ARGV[4], 'replid', replid, 'offset', offset, 'incarnation', ARGV[5])
  end
end
must('PEXPIRE', KEYS[1], ARGV[2])
return 1
`

// Gives the lease back if it still holds our token. With ARGV[2], first lowers the mark to it: the generator has
// stopped, and ARGV[2] is the time of its last id, so the next holder need not wait for the deadline's mark.
// The holder record goes with it (emptied with HSET, which the lease's ACL has; a failure leaves the release as it is).
const RELEASE =
  PRELUDE +
  `
if must('GET', KEYS[1]) ~= ARGV[1] then return 0 end
pcall(redis.call, 'HSET', KEYS[2], 'holder', '')
if ARGV[2] and ARGV[2] ~= '' then
  local ok, old = call('HGET', KEYS[2], 'until')
  if ok and old and string.match(old, '^%d+$') and tonumber(ARGV[2]) < tonumber(old) then
    must('HSET', KEYS[2], 'until', ARGV[2])
  end
end
return must('DEL', KEYS[1])
`

// Each slot of a datacenter as listHolders reads it (KEYS: each slot's lease and marks keys, in order): its lease
// key's token (false when free), the milliseconds left of its TTL, and the marks' holder record (false when none).
// Only slots that are held, or whose holder record is left (a holder that stopped without releasing), are returned.
// Listing needs PTTL besides the lease's commands.
const LIST =
  PRELUDE +
  `
local out = {}
for w = 0, #KEYS / 2 - 1 do
  local token = must('GET', KEYS[2 * w + 1])
  local ok, holder = call('HGET', KEYS[2 * w + 2], 'holder')
  if not ok or holder == '' then holder = false end
  if token or holder then
    out[#out + 1] = {w, token or false, token and must('PTTL', KEYS[2 * w + 1]) or -2, holder or false}
  end
end
return out
`

// The dataset's incarnation: the random id ARGV[1] in KEYS[1], unless the key holds one already.
const INCARNATION =
  PRELUDE +
  `
must('SET', KEYS[1], ARGV[1], 'NX')
return must('GET', KEYS[1])
`

// Deletes every lease key (KEYS) of a datacenter that holds the token ARGV[1]: sent after a take whose answer timed
// out. Redis runs the commands of one connection in order, so this runs after the stray take, whatever it took.
const ABANDON =
  PRELUDE +
  `
local n = 0
for _, key in ipairs(KEYS) do
  if must('GET', key) == ARGV[1] then n = n + must('DEL', key) end
end
return n
`

// A Redis Cluster node's refusal of a command it did not run: the slot is served elsewhere (MOVED, ASK), is being
// moved (TRYAGAIN), or the cluster is down (CLUSTERDOWN).
const REDIRECTED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /

// No timer of a lease keeps the process alive.
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms).unref())

/**
 * Runs a Lua script on an ioredis or node-redis client (a single server, Sentinel-managed, or a Cluster), as
 * `run(script, keys, args, replicas, waitMs)`: with `replicas` > 0, WAIT follows the script on the same connection, and
 * the result is `{ reply, acks }`, the script's reply and how many replicas acknowledged it within `waitMs`; else
 * `{ reply }`.
 */
function scriptRunner(client) {
  const evalArgs = (script, keys, args) => ['EVAL', script, String(keys.length), ...keys, ...args.map(String)]
  const both = async (first, second) => {
    // Both are sent before either answers, so they go out together, in order, on one connection.
    const reply = first()
    const acks = second ? second() : undefined
    const settled = await Promise.allSettled([reply, acks])
    if (settled[0].status === 'rejected') throw settled[0].reason
    if (settled[1].status === 'rejected') throw settled[1].reason
    return second ? { reply: settled[0].value, acks: Number(settled[1].value) } : { reply: settled[0].value }
  }
  if (client && typeof client === 'object' && typeof client.sendCommand === 'function') {
    if (typeof client.getSlotMaster === 'function') {
      // A node-redis Cluster (createCluster): each command is routed by its first key, so WAIT goes where EVAL went.
      return (script, keys, args, replicas, waitMs) =>
        both(
          () => client.sendCommand(keys[0], false, evalArgs(script, keys, args)),
          replicas > 0 && (() => client.sendCommand(keys[0], false, ['WAIT', String(replicas), String(waitMs)])),
        )
    }
    if ('isOpen' in client) {
      // node-redis (the `redis` package): raw commands take strings only.
      return (script, keys, args, replicas, waitMs) =>
        both(
          () => client.sendCommand(evalArgs(script, keys, args)),
          replicas > 0 && (() => client.sendCommand(['WAIT', String(replicas), String(waitMs)])),
        )
    }
  }
  if (client && typeof client === 'object' && typeof client.call === 'function') {
    // ioredis finds a command's keys by its name, and ioredis 5.0.0 only by the lower-case name: with 'EVAL', a Cluster
    // would send the script to a random node, and a client's keyPrefix would not apply.
    const ioArgs = (script, keys, args) => ['eval', ...evalArgs(script, keys, args).slice(1)]
    if (client.isCluster === true && typeof client.pipeline === 'function') {
      // An ioredis Cluster: a pipeline goes to the node of its keys, so WAIT (which has none) goes where EVAL went.
      return async (script, keys, args, replicas, waitMs) => {
        for (let redirections = 0; ; redirections++) {
          const p = client.pipeline().call(...ioArgs(script, keys, args))
          if (replicas > 0) p.call('wait', replicas, waitMs)
          const results = await p.exec()
          const [err] = results[0]
          // The node refused the script without running it: its slot moved (a failover, a resharding), or the cluster
          // is not ready. ioredis follows a pipeline's redirection only when every command in it failed alike, and
          // WAIT, which has no key, succeeds wherever it goes: so the slot map is refreshed here, and the script sent
          // again. (The ioredis default of 16 redirections.)
          if (err && REDIRECTED.test(String(err.message)) && redirections < 16) {
            await new Promise(resolve => client.refreshSlotsCache(() => resolve()))
            if (!/^MOVED /.test(String(err.message))) await sleep(100)
            continue
          }
          for (const [e] of results) if (e) throw e
          return replicas > 0 ? { reply: results[0][1], acks: Number(results[1][1]) } : { reply: results[0][1] }
        }
      }
    }
    // ioredis
    return (script, keys, args, replicas, waitMs) =>
      both(
        () => client.call(...ioArgs(script, keys, args)),
        replicas > 0 && (() => client.call('wait', replicas, waitMs)),
      )
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
    `redis: expected the ACL user to have ${missing}, found it refused: ${refused[0].slice(0, 160)}. The lease needs the key pattern ~{snowid}:* (with the braces, for your keyPrefix) and the commands +eval +set +get +hmget +hget +hset +pexpire +del +info +wait`,
    err,
  )
}

/**
 * Whether an ioredis or node-redis client was closed by its owner; `err` is the error of its last call. An ioredis
 * client says so by its status alone: its "Connection is closed." also comes from one node of a Cluster that went
 * away (a failover), after which the Cluster goes on.
 */
function closed(client, err) {
  if (client.status === 'end' || client.isOpen === false) return true
  if (typeof client.status === 'string') return false
  return (err && err.name === 'ClientClosedError') || /^Connection is closed\.?$/.test(String(err && err.message))
}

/**
 * The Redis store of a lease: its primitives for lib/store-lease.js.
 * @returns {import('./store-lease').Store}
 */
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
  const given = options.replicas
  if (given !== undefined && (typeof given !== 'number' || !Number.isInteger(given) || given < 0 || given > 100)) {
    throw codedError(
      typeof given === 'number' ? RangeError : TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `replicas: expected an integer from 0 to 100, found ${typeof given === 'number' ? given : typeof given}`,
    )
  }
  /** The lease key and the marks key of a slot. */
  const slotKeys = workerId => {
    const base = `{${keyPrefix}}:${o.datacenterId}:${workerId}`
    return [`${base}:lease`, `${base}:marks`]
  }
  const allKeys = Array.from({ length: o.slotCount }, (_, w) => slotKeys(w)).flat()
  const replicasKey = `{${keyPrefix}}:replicas`
  const incarnationKey = `{${keyPrefix}}:incarnation`
  // How many replicas must acknowledge a write, as the last take found it (0 until then: a take confirms nothing
  // unless its WAIT says so); and how long WAIT may block the connection.
  let replicas = given ?? 0
  const waitMs = Math.min(Math.max(Math.floor(o.ttlMs / 10), 20), 1000)
  /** Throws ERR_SNOWID_STORE_NOT_REPLICATED unless `acks` reach the replicas a write needs. */
  const replicated = (acks, what) => {
    if (acks === undefined || acks >= replicas) return
    throw codedError(
      Error,
      'ERR_SNOWID_STORE_NOT_REPLICATED',
      `${what}: expected ${replicas} Redis replica${replicas === 1 ? '' : 's'} to acknowledge the write within ${waitMs} ms (WAIT), found ${acks}. A failover could forget it, so it does not count; the lease keeps trying until its deadline`,
    )
  }
  const store = {
    name: 'Redis',
    unavailableCode: 'ERR_SNOWID_REDIS_UNAVAILABLE',
    slotName: workerId => slotKeys(workerId)[0],
    classify,
    closed: err => closed(options.client, err),
    async incarnation() {
      const { reply } = await run(INCARNATION, [incarnationKey], [randomUUID()], 0, 0)
      return reply === null || reply === undefined ? null : String(reply)
    },
    async take(token, preferred, only, { now, until: raise, limit, incarnation, holder }) {
      const args = [
        token,
        o.ttlMs,
        preferred,
        only ? 'only' : 'any',
        now,
        raise,
        limit,
        given ?? 'auto',
        incarnation ?? '',
        holder ?? '',
      ]
      // The take's WAIT asks for as many replicas as the last take found; the script says how many it needs now.
      const { reply, acks } = await run(ACQUIRE, [...allKeys, replicasKey], args, replicas, waitMs)
      if (!reply) return null
      if (reply[0] === 'ahead') return { ahead: Number(reply[1]) }
      const [workerId, until, clockBack, raised, forgotten, needed, seen] = reply
      const w = Number(workerId)
      if (needed !== undefined) replicas = Number(needed)
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
      // The take confirms the lease only when as many replicas as it needs acknowledged it; else the renewals must.
      const acked = acks === undefined ? replicas === 0 : acks >= replicas
      return {
        workerId: w,
        mark: Number(until),
        confirmed: Number(raised) === 1 && acked,
        forgotten: Number(forgotten) === 1,
        seen: seen === null || seen === undefined || seen === false ? undefined : String(seen),
      }
    },
    async renew(workerId, token, until, clockBack, incarnation) {
      const keys = slotKeys(workerId)
      const args = [token, o.ttlMs, until === null ? '' : until, clockBack, incarnation ?? '']
      const { reply, acks } = await run(RENEW, keys, args, replicas, waitMs)
      if (Number(reply) === -1) {
        throw codedError(
          Error,
          'ERR_SNOWID_LEASE_CORRUPT',
          `lease: expected a number of ms in ${keys[1]} field until, found something else; the key is left as found`,
        )
      }
      if (Number(reply) !== 1) return false
      replicated(acks, 'renew')
      return true
    },
    async release(workerId, token, last) {
      await run(RELEASE, slotKeys(workerId), [token, last === null ? '' : last], 0, 0)
    },
    async list() {
      const { reply } = await run(LIST, allKeys, [], 0, 0)
      return Array.from(reply ?? [], ([w, token, pttl, holder]) => {
        const left = Number(pttl)
        const held = typeof token === 'string' || Buffer.isBuffer(token)
        return {
          workerId: Number(w),
          token: held ? String(token) : null,
          holder: holder === null || holder === false || holder === undefined ? null : String(holder),
          // PTTL is -1 for a key with no TTL (set by hand), -2 for one gone since GET.
          held: held && (left > 0 || left === -1),
          remainingMs: held && left >= 0 ? left : null,
        }
      })
    },
    async abandon(token) {
      await run(
        ABANDON,
        allKeys.filter((_, i) => i % 2 === 0),
        [token],
        0,
        0,
      )
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
  return startLease(options, ['keyPrefix', 'replicas'], redisStore, RedisLease, false)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return startLease(options, ['keyPrefix', 'replicas'], redisStore, RedisLease, true)
}

/**
 * The holders of the slots in Redis (of `options.datacenterId`, else of every datacenter): see lib/redis.d.ts.
 * A holder that stopped without releasing stays listed, not live, until a take of its slot.
 */
function listHolders(options) {
  return listStoreHolders(options, ['keyPrefix', 'replicas'], redisStore)
}

module.exports = { acquireWorkerId, configureWorkerId, listHolders, RedisLease }
