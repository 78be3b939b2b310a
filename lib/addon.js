'use strict'

// The native binding as the rest of the package uses it: loaded by native.js (napi-rs's loader, with what to do when
// no binary loads), and this realm's functions of it (`realm`). Jest runs each test file, and Vitest's vm pools each
// file, in a `vm` realm of its own, but open the binary with the host's `require`, so one module instance serves
// every realm. Each realm that loads this file gets the module's hot functions made for it (`realm.nextId`, ...),
// and makes the binding's other functions its own with `realm.wrap(fn)`: a call of either throws this realm's
// `TypeError` and `RangeError`, takes this realm's object literals as options, and reads this realm's `process.env`
// (Jest's copy, where its setup files assign). See src/js/realm.rs.
//
// On Node's main thread, in the module instance's own realm, `process.env` is Node's own view of the OS environment,
// which the binding then reads directly, for a fraction of the cost, for as long as `process.env` is still that
// object (src/js/env.rs, register_os_backed). Bun and Deno keep assignments to `process.env` from the OS environment,
// and a worker_thread's `process.env` is its own copy, so there the binding reads `process.env` itself.

const binding = require('./native.js')

// Node's main thread runs on the process's first thread, which the binding recognizes where the OS says (and then
// `node:worker_threads`, 1.4 ms of a start, is not loaded); a worker_thread never does.
const mainThread =
  typeof binding.__processMainThread === 'boolean'
    ? binding.__processMainThread
    : require('node:worker_threads').isMainThread
const osBacked = mainThread && !process.versions.bun && !process.versions.deno
const realm = binding.__realm(globalThis, osBacked)

/** Whether this is the WASI build (snowid-wasm32-wasi), whose threads do not share generators. */
const WASI = binding.__napiBindingTarget === 'wasm32-wasi'

module.exports = { binding, realm, WASI }
