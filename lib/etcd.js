'use strict'

// snowid/etcd: worker ids leased from etcd (v3, through the `etcd3` client), for teams that want a store whose
// failover forgets nothing: etcd commits a write once a majority of its members have it, so a promoted leader has
// every write a holder was told succeeded.
//
// A slot is a key `<prefix>/<datacenterId>/<workerId>/lease` holding a random token, bound to an etcd lease of its own
// (TTL: ttlMs rounded up to whole seconds), so that it goes when its holder stops renewing. Beside it,
// `<prefix>/<datacenterId>/<workerId>/marks` keeps the slot's high-water mark and clockBack as JSON, with no lease.
// - take: reads the datacenter's keys, picks a free slot (as every store does), and takes it in one transaction that
//   puts the lease key (if it still does not exist) and raises the mark (if it is still as read); a take that loses
//   that race tries a few other free slots it read, in random order, then reads again (lib/slot-choice.js), so
//   processes that start together all get slots while any is free;
// - renew: raises the mark in a transaction that holds only while the lease key still holds the token, then keeps
//   the etcd lease alive: the deadline comes from the time the renewal was sent, before either;
// - release: lowers the mark to the last id issued and deletes the key in a transaction on the token, then revokes
//   the etcd lease.
// The lease itself (take, hold, renew, lose, take again, release) is lib/store-lease.js's, shared with every store.
//
// The first lease of a datacenter writes, in one transaction, a marker key `<prefix>/<datacenterId>/init` and a mark
// of 0 for each of its slots (when they fit in one transaction).
//
// Incarnation. A cluster's id (in every response's header) names its members, not its data: a member wiped and
// started again with the same flags has the same. So the store's incarnation is the cluster id and a random id that
// `<prefix>/incarnation` holds, written once (if absent) and gone only with the data. Every mark is written with it,
// and a slot whose marks record another (another cluster at the address) or none (a slot never held, marks deleted by
// hand, etcd wiped and started again) waits one TTL before use.

const { randomUUID } = require('node:crypto')
const { StoreLease, startLease, listHolders: listStoreHolders, codedError } = require('./store-lease.js')
const { claimFreeSlot } = require('./slot-choice.js')

const DEFAULT_PREFIX = 'snowid'
// etcd's default limit of operations in one transaction (--max-txn-ops).
const MAX_TXN_OPS = 128
// How often a renewal tries again when another process changed the marks it read in between.
const ATTEMPTS = 5

/** Whether `client` looks like an etcd3 client (an `Etcd3`, or one of its namespaces). */
function isEtcd3(client) {
  return (
    client !== null &&
    typeof client === 'object' &&
    typeof client.if === 'function' &&
    typeof client.lease === 'function' &&
    typeof client.getAll === 'function' &&
    typeof client.put === 'function'
  )
}

/** An etcd permission error (auth enabled, the user's role lacks the keys) as ERR_SNOWID_STORE_PERMISSION_DENIED. */
function classify(err) {
  const name = err && err.constructor && err.constructor.name
  if (name !== 'EtcdPermissionDeniedError' && !/permission denied/i.test(String(err && err.message))) return null
  return codedError(
    Error,
    'ERR_SNOWID_STORE_PERMISSION_DENIED',
    `etcd: expected the user's role to have read and write permission on the lease keys (the prefix, as a range), found it refused: ${String(err.message).slice(0, 160)}`,
    err,
  )
}

/** Whether an etcd3 client was closed by its owner; `err` is the error of its last call. */
function closed(err) {
  const name = err && err.constructor && err.constructor.name
  return name === 'ClientClosedError' || /client was already closed/.test(String(err && err.message))
}

const text = v => (v === null || v === undefined ? null : Buffer.isBuffer(v) ? v.toString('utf8') : String(v))

/**
 * The etcd store of a lease: its primitives for lib/store-lease.js.
 * @returns {import('./store-lease').Store}
 */
function etcdStore(options, o) {
  const client = options.client
  if (!isEtcd3(client)) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `client: expected an etcd3 client (new Etcd3(...), or a namespace of one), found ${client === null ? 'null' : typeof client}`,
    )
  }
  const prefix = options.keyPrefix ?? DEFAULT_PREFIX
  if (typeof prefix !== 'string' || prefix === '' || prefix.includes('\0')) {
    throw codedError(
      TypeError,
      'ERR_SNOWID_INVALID_ARGUMENT',
      `keyPrefix: expected a non-empty string, found ${JSON.stringify(prefix).slice(0, 60)}`,
    )
  }
  const dc = `${prefix}/${o.datacenterId}/`
  const leaseKey = w => `${dc}${w}/lease`
  const marksKey = w => `${dc}${w}/marks`
  // Who holds the slot (lib/store-lease.js's holder record), for listHolders only: written by the take, with no etcd
  // lease, so that a holder that stops without releasing stays listed (as not live); deleted by the release.
  const holderKey = w => `${dc}${w}/holder`
  const initKey = `${dc}init`
  const incarnationKey = `${prefix}/incarnation`
  // ttlMs in whole seconds, rounded up: the key lives at least as long as the lease says.
  const ttlSeconds = Math.ceil(o.ttlMs / 1000)
  // The etcd lease of each token this store took a slot for.
  const leases = new Map()

  const corrupt = (w, found) =>
    codedError(
      Error,
      'ERR_SNOWID_LEASE_CORRUPT',
      `lease: expected ${marksKey(w)} to hold the JSON {"until":<Unix ms>,"clockBack":<0..1023>} that snowid writes, found ${JSON.stringify(found).slice(0, 80)}; the key is left as found`,
    )

  /** The marks of slot `w` as read from `raw` (a marks key's value): { until, clockBack }; throws when unreadable. */
  function readMarks(w, raw) {
    let m
    try {
      m = JSON.parse(raw)
    } catch {
      throw corrupt(w, raw)
    }
    const ok =
      m !== null &&
      typeof m === 'object' &&
      Number.isSafeInteger(m.until) &&
      m.until >= 0 &&
      Number.isInteger(m.clockBack) &&
      m.clockBack >= 0 &&
      m.clockBack <= 1023
    if (!ok) throw corrupt(w, raw)
    return m
  }

  const marksValue = (until, clockBack, incarnation) =>
    JSON.stringify(incarnation ? { until, clockBack, incarnation } : { until, clockBack })

  /** Writes the datacenter's marker and, when they fit in one transaction, a mark of 0 for each slot: once. */
  async function prepare() {
    const fresh = o.slotCount + 1 <= MAX_TXN_OPS
    const puts = [client.put(initKey).value(String(o.slotCount))]
    if (fresh) for (let w = 0; w < o.slotCount; w++) puts.push(client.put(marksKey(w)).value(marksValue(0, 0)))
    await client
      .if(initKey, 'Create', '==', 0)
      .then(...puts)
      .commit()
  }

  /** Each slot's state as read: { held, marks: { until, clockBack } | undefined, rev, raw } by worker id. */
  async function readSlots() {
    const res = await client.getAll().prefix(dc).exec()
    const slots = new Map()
    const slot = w => {
      if (!slots.has(w)) slots.set(w, { held: false, marks: undefined, rev: '0', raw: null })
      return slots.get(w)
    }
    for (const kv of res.kvs) {
      const m = /^(\d+)\/(lease|marks)$/.exec(text(kv.key).slice(dc.length))
      if (!m || Number(m[1]) >= o.slotCount) continue
      const s = slot(Number(m[1]))
      if (m[2] === 'lease') s.held = true
      else {
        s.raw = text(kv.value)
        s.rev = String(kv.mod_revision)
      }
    }
    return { slot, revision: res.header && res.header.revision }
  }

  /** Gives up the etcd lease of `token`, which deletes any key bound to it. */
  async function revoke(token) {
    const lease = leases.get(token)
    leases.delete(token)
    if (lease) await lease.revoke()
  }

  return {
    name: 'etcd',
    unavailableCode: 'ERR_SNOWID_ETCD_UNAVAILABLE',
    slotName: leaseKey,
    classify,
    closed,
    prepare,
    /** The cluster id and the random id of `<prefix>/incarnation` (written first if absent), as `cluster:id`. */
    async incarnation() {
      await client.if(incarnationKey, 'Create', '==', 0).then(client.put(incarnationKey).value(randomUUID())).commit()
      const res = await client.get(incarnationKey).exec()
      const kv = res.kvs[0]
      return kv && res.header ? `${res.header.cluster_id}:${text(kv.value)}` : null
    },
    async take(token, preferred, only, { now, until, limit, incarnation, holder }) {
      const lease = client.lease(ttlSeconds, { autoKeepAlive: false })
      leases.set(token, lease)
      try {
        const id = await lease.grant()
        let kept = Date.now()
        // The free slots as read: the preferred one first, then one whose mark is before `now`, then the rest.
        const read = async () => {
          const { slot } = await readSlots()
          let ahead = null
          const candidates = []
          for (let w = 0; w < o.slotCount; w++) {
            const s = slot(w)
            if (s.held || (only && w !== preferred)) continue
            // A marks key snowid cannot read is reported once its slot is taken; until then it is a candidate.
            let marks
            try {
              marks = s.raw === null ? undefined : readMarks(w, s.raw)
            } catch {
              marks = null
            }
            if (marks && marks.until >= limit) {
              if (ahead === null || marks.until < ahead) ahead = marks.until
              continue
            }
            const rank = w === preferred ? 0 : marks && marks.until < now ? 1 : 2
            candidates.push({ workerId: w, rank, s, marks })
          }
          return { candidates, ahead }
        }
        // Takes the slot if it is still as read: its lease key absent, its marks key unchanged. Null when it changed.
        const claim = async ({ workerId: w, s, marks }) => {
          // A take that goes on past a third of the TTL (many processes taking at once) keeps its etcd lease alive.
          if (Date.now() - kept > o.ttlMs / 3) {
            await lease.keepaliveOnce()
            kept = Date.now()
          }
          const ops = [client.put(leaseKey(w)).value(token).lease(id)]
          if (marks && until > marks.until) ops.push(client.put(marksKey(w)).value(marksValue(until, 0, incarnation)))
          if (holder) ops.push(client.put(holderKey(w)).value(holder))
          const txn = await client
            .if(leaseKey(w), 'Create', '==', 0)
            .and(marksKey(w), 'Mod', '==', s.rev)
            .then(...ops)
            .commit()
          return txn.succeeded ? { w, s, marks } : null
        }
        // Until the lease stops waiting for the take's answer (and abandons it).
        const deadline = now + o.takeTimeoutMs
        const { taken, none } = await claimFreeSlot({ read, claim, deadline, what: 'etcd take' })
        if (none) {
          await revoke(token)
          return none.ahead === null ? null : { ahead: none.ahead }
        }
        const { w, s, marks } = taken
        if (marks === null) {
          await this.release(w, token, null).catch(() => {})
          throw corrupt(w, s.raw)
        }
        return {
          workerId: w,
          mark: marks ? marks.until : undefined,
          confirmed: marks !== undefined,
          seen: marks && typeof marks.incarnation === 'string' ? marks.incarnation : undefined,
        }
      } catch (err) {
        await revoke(token).catch(() => {})
        throw err
      }
    },
    async renew(w, token, until, clockBack, incarnation) {
      const lease = leases.get(token)
      if (!lease) return false
      for (let attempt = 1; ; attempt++) {
        const [held, marks] = await Promise.all([client.get(leaseKey(w)).string(), client.get(marksKey(w)).exec()])
        if (held !== token) return false
        const kv = marks.kvs[0]
        const old = kv ? readMarks(w, text(kv.value)) : undefined
        const ops = []
        if (until !== null && (!old || until > old.until))
          ops.push(client.put(marksKey(w)).value(marksValue(until, clockBack, incarnation)))
        const txn = await client
          .if(leaseKey(w), 'Value', '==', token)
          .and(marksKey(w), 'Mod', '==', kv ? String(kv.mod_revision) : '0')
          .then(...ops)
          .commit()
        if (txn.succeeded) break
        if (attempt >= ATTEMPTS) return false
      }
      try {
        const kept = await lease.keepaliveOnce()
        return Number(kept.TTL) > 0
      } catch (err) {
        if (err && err.constructor && err.constructor.name === 'EtcdLeaseInvalidError') return false
        throw err
      }
    },
    async release(w, token, last) {
      // The holder record goes first, while the token still holds the slot; it never stops the release.
      await client
        .if(leaseKey(w), 'Value', '==', token)
        .then(client.delete().key(holderKey(w)))
        .commit()
        .catch(() => {})
      if (last !== null) {
        const [kv] = (await client.get(marksKey(w)).exec()).kvs
        const old = kv ? readMarks(w, text(kv.value)) : undefined
        if (old && last < old.until) {
          await client
            .if(leaseKey(w), 'Value', '==', token)
            .and(marksKey(w), 'Mod', '==', String(kv.mod_revision))
            .then(
              client.put(marksKey(w)).value(marksValue(last, old.clockBack, old.incarnation)),
              client.delete().key(leaseKey(w)),
            )
            .commit()
        }
      }
      await revoke(token)
    },
    async abandon(token) {
      await revoke(token)
    },
    /** Every slot of the datacenter that is held or has a holder record; the TTL left is its etcd lease's. */
    async list() {
      const res = await client.getAll().prefix(dc).exec()
      const slots = new Map()
      const slot = w => {
        if (!slots.has(w)) slots.set(w, { workerId: w, token: null, lease: null, holder: null })
        return slots.get(w)
      }
      for (const kv of res.kvs) {
        const m = /^(\d+)\/(lease|holder)$/.exec(text(kv.key).slice(dc.length))
        if (!m || Number(m[1]) >= o.slotCount) continue
        const s = slot(Number(m[1]))
        if (m[2] === 'holder') s.holder = text(kv.value)
        else {
          s.token = text(kv.value)
          s.lease = String(kv.lease)
        }
      }
      const list = []
      for (const s of slots.values()) {
        let ttl = -1
        if (s.token !== null && s.lease !== '0') {
          const live = await client.leaseClient.leaseTimeToLive({ ID: s.lease })
          ttl = Number(live.TTL)
        }
        list.push({
          workerId: s.workerId,
          token: s.token,
          holder: s.holder,
          held: s.token !== null && (s.lease === '0' || ttl > 0),
          remainingMs: ttl > 0 ? ttl * 1000 : null,
        })
      }
      return list
    },
  }
}

/**
 * A worker-id slot leased from etcd. Emits 'renewed' ({ deadline }), 'renewFailed' (error: a renewal etcd did not
 * answer, the lease keeps trying until its deadline; or, after a loss, a failed attempt to take a slot again),
 * 'lost' (error) and 'reacquired' (lease).
 */
class EtcdLease extends StoreLease {}

/**
 * Leases a free (datacenterId, workerId) slot from etcd and returns a started lease with its `snowflake`. The first
 * lease of a datacenter writes its slots' marks; a slot whose marks were deleted is held for one TTL before use.
 */
function acquireWorkerId(options) {
  return startLease(options, ['keyPrefix'], etcdStore, EtcdLease, false)
}

/**
 * As `acquireWorkerId`, and configures the process's default generator with the slot, so that
 * `require('snowid').nextId()` uses it. Call it before the default generator's first id.
 */
function configureWorkerId(options) {
  return startLease(options, ['keyPrefix'], etcdStore, EtcdLease, true)
}

/**
 * The holders of the slots in etcd (of `options.datacenterId`, else of every datacenter): see lib/etcd.d.ts. A
 * holder that stopped without releasing stays listed, not live, until a take of its slot.
 */
function listHolders(options) {
  return listStoreHolders(options, ['keyPrefix'], etcdStore)
}

module.exports = { acquireWorkerId, configureWorkerId, listHolders, EtcdLease }
