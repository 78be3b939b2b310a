'use strict'

// The native binding as the rest of the package uses it: loaded by native.js (napi-rs's loader, with what to do when
// no binary loads), and its functions as this realm calls them (`realm`).
//
// Jest runs each test file, and Vitest's vm pools each file, in a `vm` realm of its own, but open the binary with the
// host's `require`, so one module instance, whose functions throw the host's errors and read the host's
// `process.env`, serves every realm. The binding knows nothing of realms: the difference is handled here, at the
// edge, once per realm that loads this file. Where this file runs in another realm than the binding's (its exports
// are not this realm's objects), `realm.wrap(fn)` makes a function of the binding this realm's: for the length of
// each call it gives the binding this realm's `process.env` to read (`__caller.env`: Jest's copy, where its setup
// files assign), and an error the binding throws is thrown again as an error of this realm's class, with the same
// message, code and cause, so that `instanceof TypeError` holds in the test file. The binding takes option objects of
// any realm as they are (an object literal of any realm is plain to it). In the binding's own realm `wrap` returns
// the function itself, so that a call of `nextId()` is one native call.
//
// On Node's main thread, in the module instance's own realm, `process.env` is Node's own view of the OS environment,
// which the binding then reads directly, for a fraction of the cost, for as long as `process.env` is still that
// object (src/js/env.rs, register_os_backed). Bun and Deno keep assignments to `process.env` from the OS environment,
// and a worker_thread's `process.env` is its own copy, so there the binding reads `process.env` itself.

const binding = require('./native.js')

// Whether the binding's objects are another realm's: this file then runs in a `vm` realm (a Jest or Vitest test
// file's), which the binding's functions must be made this realm's for.
const foreign = !(binding instanceof Object)

// Node's main thread runs on the process's first thread, which the binding recognizes where the OS says (and then
// `node:worker_threads`, 1.4 ms of a start, is not loaded); a worker_thread never does.
const mainThread =
  typeof binding.__processMainThread === 'boolean'
    ? binding.__processMainThread
    : require('node:worker_threads').isMainThread
const osBacked = mainThread && !foreign && !process.versions.bun && !process.versions.deno

// This realm's error classes, by the `name` of the class the binding threw.
const CLASSES = { Error, TypeError, RangeError }

/** `e`, a coded error of the binding's realm, as an error of this realm's class with its message, code and cause. */
function reclassed(e) {
  if (e === null || typeof e !== 'object' || e instanceof Error) return e
  if (typeof e.code !== 'string' || !e.code.startsWith('ERR_SNOWID_')) return e
  const Class = Object.hasOwn(CLASSES, e.name) ? CLASSES[e.name] : Error
  const own = new Class(e.message, Object.hasOwn(e, 'cause') ? { cause: e.cause } : undefined)
  for (const key of Object.keys(e)) own[key] = e[key]
  return own
}

const caller = binding.__caller

/** `fn`, a function of the binding, as this realm's (see above): itself in the binding's own realm. */
function wrap(fn) {
  if (!foreign) return fn
  const { name } = fn
  return {
    [name](...args) {
      const before = caller.env
      caller.env = process.env
      try {
        return fn.apply(this, args)
      } catch (e) {
        throw reclassed(e)
      } finally {
        caller.env = before
      }
    },
  }[name]
}

const own = binding.__module(osBacked ? process.env : undefined)
const realm = { wrap }
for (const name of Object.keys(own)) realm[name] = wrap(own[name])

/** Whether this is the WASI build (snowid-wasm32-wasi), whose threads do not share generators. */
const WASI = binding.__napiBindingTarget === 'wasm32-wasi'

module.exports = { binding, realm, WASI }
