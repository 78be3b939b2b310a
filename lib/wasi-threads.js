'use strict'

// worker_threads on the WASI build. Each thread that loads snowid-wasm32-wasi instantiates the wasm module afresh, with
// memory of its own, so threads do not share the process's generators as they do on a native build: two threads making
// ids with one worker id would hand out the same ids. So on WASI every thread claims the identity of each generator it
// makes ids with (layout, epoch, datacenterId, workerId) in a registry all the process's threads share, and a thread
// whose identity another thread holds gets ERR_SNOWID_WORKER_ID_IN_USE. A claim lasts as long as the process, as the
// native generators' states do: a thread started later with the same worker id could reuse a millisecond and sequence.
// A thread can also load the WASI binding more than once (the package required again after a purge of require.cache,
// in another vm realm, or installed twice), and each load instantiates the module afresh, with generators of its own:
// so a claim's holder is a thread and the load that made the claim, and a second load in one thread is refused an
// identity the first holds, as another thread would be.
//
// The registry is a SharedArrayBuffer that reaches threads through worker_threads' environment data, which a Worker
// copies from its parent when it starts (a SharedArrayBuffer stays shared). The main thread makes it when it loads
// snowid, so it must load snowid before it starts the threads that make ids; a thread that finds none cannot check its
// siblings, and gets ERR_SNOWID_WASI_THREAD instead of ids.

const { isMainThread, threadId, getEnvironmentData, setEnvironmentData } = require('node:worker_threads')
const { randomUUID } = require('node:crypto')
const binding = require('./native.js')
const { codedError } = require('./codes.js')

// The load of the binding this copy of snowid makes ids with, named on the binding itself: copies that share a load
// share its generators.
binding.__wasiLoad ??= randomUUID()
const LOAD = binding.__wasiLoad

const KEY = 'snowid:wasi-thread-claims'
// Int32 0: a lock; Int32 1: the length of the claims' JSON (identity -> { thread, load }), which follows from byte 8.
const SIZE = 64 * 1024
const HEADER = 8

function registry() {
  let sab = getEnvironmentData(KEY)
  if (sab instanceof SharedArrayBuffer) return sab
  if (!isMainThread) return null
  sab = new SharedArrayBuffer(SIZE)
  setEnvironmentData(KEY, sab)
  return sab
}

const RULE =
  'On WASI (snowid-wasm32-wasi) threads do not share a generator: give each thread that makes ids its own ' +
  'SNOWID_WORKER_ID (the Worker option env) or workerId, or make ids in one thread'

function thread(id) {
  return id === 0 ? 'the main thread' : `worker_thread ${id}`
}

const COPIES =
  'Each load of the WASI build in a thread (the package required again after a purge of require.cache, in another ' +
  'vm realm such as a Jest test file, or a second installed copy) has generators of its own: load snowid once per ' +
  'thread, or give each copy its own worker id'

// Runs `fn` with the claims, under the registry's lock; what `fn` returns is written back when it is not undefined.
function withClaims(sab, fn) {
  const lock = new Int32Array(sab, 0, 2)
  while (Atomics.compareExchange(lock, 0, 0, 1) !== 0) Atomics.wait(lock, 0, 1, 5)
  try {
    const bytes = new Uint8Array(sab, HEADER)
    const length = Atomics.load(lock, 1)
    const claims = length === 0 ? {} : JSON.parse(Buffer.from(bytes.subarray(0, length)).toString('utf8'))
    const next = fn(claims)
    if (next === undefined) return
    const text = Buffer.from(JSON.stringify(next), 'utf8')
    if (text.length > bytes.length) {
      throw codedError(
        Error,
        'ERR_SNOWID_WASI_THREAD',
        `generators claimed by threads: expected at most ${bytes.length} bytes of claims, found ${text.length}; make ids in fewer threads`,
      )
    }
    bytes.set(text)
    Atomics.store(lock, 1, text.length)
  } finally {
    Atomics.store(lock, 0, 0)
    Atomics.notify(lock, 0, 1)
  }
}

/**
 * Claims for this thread and this load of the binding the identity of the generator whose `config()` is `config`:
 * nothing on the main thread or a worker_thread the first time, or when they hold it already; throws a coded error
 * when another thread, or another load in this thread, holds it, or when this worker_thread cannot see the registry.
 */
function claim(config) {
  const { epoch, datacenterBits, workerBits, clockBackBits, sequenceBits, timestampBits, datacenterId, workerId } =
    config
  const identity = [
    epoch,
    timestampBits,
    datacenterBits,
    workerBits,
    clockBackBits,
    sequenceBits,
    datacenterId,
    workerId,
  ].join('/')
  const sab = registry()
  if (sab === null) {
    throw codedError(
      Error,
      'ERR_SNOWID_WASI_THREAD',
      `ids in ${thread(threadId)}: expected snowid loaded by the main thread before this thread started, found no ` +
        `sign of it, so other threads' worker ids cannot be checked; require('snowid') in the main thread first. ${RULE}`,
    )
  }
  withClaims(sab, claims => {
    // A copy of an earlier snowid in this process names its claims' threads alone.
    const holder = typeof claims[identity] === 'number' ? { thread: claims[identity], load: null } : claims[identity]
    if (holder === undefined) return { ...claims, [identity]: { thread: threadId, load: LOAD } }
    if (holder.thread === threadId && holder.load === LOAD) return undefined
    if (holder.thread === threadId) {
      throw codedError(
        Error,
        'ERR_SNOWID_WORKER_ID_IN_USE',
        `workerId ${workerId} (datacenterId ${datacenterId}) in ${thread(threadId)}: expected one no other copy of ` +
          `snowid makes ids with, found it in use by another copy loaded in this thread. ${COPIES}. ${RULE}`,
      )
    }
    throw codedError(
      Error,
      'ERR_SNOWID_WORKER_ID_IN_USE',
      `workerId ${workerId} (datacenterId ${datacenterId}) in ${thread(threadId)}: expected one no other thread makes ` +
        `ids with, found it in use by ${thread(holder.thread)}. ${RULE}`,
    )
  })
}

/**
 * Wraps a function that makes ids from the generator whose config `config()` returns: its first call claims that
 * generator for this thread. A `config()` that throws claims nothing: the call itself then fails the same way.
 */
function claiming(fn, config) {
  let claimed = false
  return {
    [fn.name](...args) {
      if (!claimed) {
        let current
        try {
          current = config()
        } catch {
          current = null
        }
        if (current !== null) {
          claim(current)
          claimed = true
        }
      }
      return Reflect.apply(fn, this, args)
    },
  }[fn.name]
}

// The main thread makes the registry as it loads snowid, for the threads it starts after.
registry()

module.exports = { claim, claiming }
