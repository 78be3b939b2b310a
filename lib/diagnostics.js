'use strict'

// snowid's events on node:diagnostics_channel (docs/observability.md): `snowid:lease` for store leases, published as
// their events happen, and for host leases; `snowid:clock` and `snowid:wait` for the generators' clockBack steps,
// refused steps back and waits. What happens in the native core (a host lease taken or lost, a step back, a wait) is
// read from `stats()` by `watch()`, every `intervalMs`, only while a channel has a subscriber. Nothing on an id's path
// calls into JS: publishing costs nothing while nobody subscribes.

const dc = require('node:diagnostics_channel')
const { codedError } = require('./codes.js')

const lease = dc.channel('snowid:lease')
const clock = dc.channel('snowid:clock')
const wait = dc.channel('snowid:wait')

/** Publishes a store lease's event `event` on `snowid:lease`, when it has a subscriber. */
function publishLease(event, l, store, more) {
  if (!lease.hasSubscribers) return
  lease.publish({
    event,
    store,
    datacenterId: l.datacenterId,
    workerId: l.workerId,
    deadline: l.deadline,
    lease: l,
    ...more,
  })
}

// Every `Snowflake` used (lib/snowflake.js), weakly held, so that `watch()` reads its counters too. Dead references
// are dropped when the set has doubled since the last sweep, so a process that makes many short-lived generators
// keeps few.
const generators = new Set()
const tracked = new WeakSet()
let swept = 64

function track(snowflake) {
  if (tracked.has(snowflake)) return
  tracked.add(snowflake)
  generators.add(new WeakRef(snowflake))
  if (generators.size < swept) return
  for (const ref of generators) if (ref.deref() === undefined) generators.delete(ref)
  swept = Math.max(64, generators.size * 2)
}

const KINDS = [
  ['sequence', 'sequenceWaits', 'sequenceWaitMs'],
  ['mark', 'markWaits', 'markWaitMs'],
  ['clock', 'clockWaits', 'clockWaitMs'],
]

/**
 * Publishes on `snowid:lease` what changed in a generator's host lease (`stats().hostLease`) from `before` to `now`:
 * `'acquired'` (or `'moved'`, when `workerIdIfTaken: 'next'` moved on from the configured worker id) once the
 * generator has started on a slot, and `'lost'` once the lease found the slot lost.
 */
function publishHostLease(generator, before, now) {
  if (!now || !lease.hasSubscribers) return
  const message = event => ({
    event,
    store: 'host',
    datacenterId: now.datacenterId,
    workerId: now.workerId,
    generator,
  })
  if (!before) {
    lease.publish(
      now.requestedWorkerId === null
        ? message('acquired')
        : { ...message('moved'), previousWorkerId: now.requestedWorkerId },
    )
  }
  if (now.lost !== null && !before?.lost) {
    lease.publish({ ...message('lost'), error: codedError(Error, 'ERR_SNOWID_LEASE_LOST', now.lost) })
  }
}

/**
 * Publishes what changed in `now` since `before` (two `stats()` of `generator`, `null` for the default one): its host
 * lease's taking and loss on `snowid:lease`, one `snowid:clock` message for new clockBack steps and one for new
 * refusals of a step back, one `snowid:wait` message per kind of wait that grew.
 */
function publishChanges(generator, before, now) {
  publishHostLease(generator, before.hostLease, now.hostLease)
  const steps = now.clockBackEvents - before.clockBackEvents
  if (steps > 0 && clock.hasSubscribers) {
    clock.publish({ event: 'clockBack', generator, clockBack: now.clockBack, steps, total: now.clockBackEvents })
  }
  const refusals = now.clockBackRefusals - before.clockBackRefusals
  if (refusals > 0 && clock.hasSubscribers) {
    clock.publish({
      event: 'refused',
      generator,
      clockBack: now.clockBack,
      calls: refusals,
      total: now.clockBackRefusals,
    })
  }
  if (!wait.hasSubscribers) return
  for (const [reason, count, ms] of KINDS) {
    const calls = now[count] - before[count]
    if (calls > 0) wait.publish({ generator, reason, calls, ms: now[ms] - before[ms], total: now[count] })
  }
}

/**
 * `watch(options)` for the module: reads the counters and host lease of the default generator (`defaultStats()`) and
 * of every `Snowflake` (`statsOf(snowflake)`) every `intervalMs`, while `snowid:lease`, `snowid:clock` or
 * `snowid:wait` has a subscriber, and publishes what changed. Returns a function that stops it. Its timer is unref'd.
 */
function watcher(defaultStats, statsOf) {
  return function watch(options = {}) {
    if (typeof options !== 'object' || options === null) {
      throw codedError(
        TypeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `watch: expected options to be an object, found ${options === null ? 'null' : typeof options}`,
      )
    }
    const intervalMs = options.intervalMs ?? 1000
    if (!Number.isSafeInteger(intervalMs) || intervalMs < 1 || intervalMs > 2 ** 31 - 1) {
      throw codedError(
        RangeError,
        'ERR_SNOWID_INVALID_ARGUMENT',
        `watch: expected intervalMs to be an integer from 1 to ${2 ** 31 - 1}, found ${String(intervalMs)}`,
      )
    }
    // The counters last read, per generator; none while nobody subscribes, so the first reading after a
    // subscription is a baseline and what happened before it is not told.
    let last = new WeakMap()
    let baseline = true
    const defaultKey = {}
    const read = (key, generator, stats) => {
      let now
      try {
        now = stats()
      } catch {
        // A generator whose counters cannot be read (its realm gone) is skipped; a timer must not throw.
        return
      }
      const before = last.get(key) ?? (baseline ? null : ZERO)
      last.set(key, now)
      if (before) publishChanges(generator, before, now)
    }
    const tick = () => {
      if (!lease.hasSubscribers && !clock.hasSubscribers && !wait.hasSubscribers) {
        if (!baseline) {
          last = new WeakMap()
          baseline = true
        }
        return
      }
      read(defaultKey, null, defaultStats)
      for (const ref of generators) {
        const g = ref.deref()
        if (g === undefined) generators.delete(ref)
        else read(g, g, () => statsOf(g))
      }
      baseline = false
    }
    tick()
    const timer = setInterval(tick, intervalMs)
    timer.unref()
    return function stop() {
      clearInterval(timer)
    }
  }
}

const ZERO = Object.freeze({
  clockBackEvents: 0,
  clockBackRefusals: 0,
  hostLease: null,
  sequenceWaits: 0,
  sequenceWaitMs: 0,
  markWaits: 0,
  markWaitMs: 0,
  clockWaits: 0,
  clockWaitMs: 0,
})

module.exports = { publishLease, track, watcher }
