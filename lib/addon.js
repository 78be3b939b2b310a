'use strict'

// The native binding as the rest of the package uses it: loaded by native.js (napi-rs's loader, with what to do
// when no binary loads), and told on Node's main thread that `process.env` is Node's own view of the OS environment,
// which the binding can then read directly, for a fraction of the cost, for as long as `process.env` is still that
// object (see src/js/env.rs, os_backed_env). Bun and Deno keep assignments to `process.env` from the OS environment,
// and a worker_thread's `process.env` is its own copy, so there it reads `process.env` itself.

const binding = require('./native.js')

if (
  require('node:worker_threads').isMainThread &&
  !process.versions.bun &&
  !process.versions.deno &&
  binding.__osBackedEnv
) {
  binding.__osBackedEnv(process.env)
}

/** Whether this is the WASI build (snowid-wasm32-wasi), whose threads do not share generators. */
const WASI = binding.__napiBindingTarget === 'wasm32-wasi'

module.exports = { binding, WASI }
