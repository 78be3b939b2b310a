'use strict'

// The package loaded in a `vm` realm of its own, as test runners load it: its JS files run in that realm (with that
// realm's `Object`, `TypeError`, ...), and Node's own modules are the host's. How the binary is opened, and what the
// realm's `process` is, are the runner's:
// - Jest (its default `testEnvironment: 'node'`): the `.node` file with the host's `require` (one module instance for
//   every realm), and a `process` of the realm's own whose `env` is a copy that the OS environment never sees (an
//   object Jest makes in the host realm, so of the host's `Object.prototype`);
// - Vitest's `vmThreads` and `vmForks` pools: the `.node` file with the host's `require`, and the host's `process`;
// - a `.node` file opened again for the realm (`process.dlopen`, a module instance of its own), as the package
//   required again after a purge of `require.cache` does.

const fs = require('node:fs')
const path = require('node:path')
const vm = require('node:vm')
const { createRequire, isBuiltin } = require('node:module')

const ROOT = path.resolve(__dirname, '..')

/**
 * A `require` for the `vm` context `context`, from the file `from`: JS files run in that realm, Node's own modules are
 * the host's, and a `.node` file is opened with the host's `require` (`addon: 'host'`) or anew (`addon: 'own'`).
 */
function realmRequire(context, from, addon) {
  const cache = new Map()
  function load(filename) {
    const cached = cache.get(filename)
    if (cached) return cached.exports
    const module = { exports: {}, filename, id: filename, loaded: false }
    cache.set(filename, module)
    if (filename.endsWith('.node')) {
      if (addon === 'own') process.dlopen(module, filename)
      else module.exports = require(filename)
    } else if (filename.endsWith('.json')) {
      module.exports = JSON.parse(fs.readFileSync(filename, 'utf8'))
    } else {
      const params = ['exports', 'require', 'module', '__filename', '__dirname']
      const fn = vm.compileFunction(fs.readFileSync(filename, 'utf8'), params, { filename, parsingContext: context })
      fn.call(module.exports, module.exports, requireFrom(filename), module, filename, path.dirname(filename))
    }
    module.loaded = true
    return module.exports
  }
  function requireFrom(parent) {
    const outer = createRequire(parent)
    function require(spec) {
      if (isBuiltin(spec)) return outer(spec)
      return load(outer.resolve(spec))
    }
    require.resolve = (spec, options) => outer.resolve(spec, options)
    return require
  }
  return requireFrom(from)
}

const HOST_GLOBALS = [
  'console',
  'Buffer',
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'setImmediate',
  'clearImmediate',
  'queueMicrotask',
  'structuredClone',
  'URL',
  'URLSearchParams',
  'TextEncoder',
  'TextDecoder',
  'AbortController',
  'AbortSignal',
  'EventTarget',
  'Event',
  'performance',
]

/** A `process` as Jest gives a test file: the host's, but for `env`, a copy made in the host realm. */
function jestProcess() {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) env[k] = v
  const realmProcess = Object.create(process)
  Object.defineProperty(realmProcess, 'env', { value: env, writable: true, enumerable: true, configurable: true })
  return realmProcess
}

/**
 * A new realm as `runner` ('jest', 'vitest' or 'reload') makes one: `{ context, require, run, process }`, where
 * `run(code)` evaluates `code` in the realm, and `require(spec)` loads a module there (from the package's root).
 */
function realm(runner) {
  const realmProcess = runner === 'jest' ? jestProcess() : process
  const globals = { process: realmProcess }
  // The host's globals that are not the language's own, as Jest and Vitest give a realm.
  for (const name of HOST_GLOBALS) globals[name] = globalThis[name]
  const context = vm.createContext(globals)
  const load = realmRequire(context, path.join(ROOT, 'realm.js'), runner === 'reload' ? 'own' : 'host')
  context.require = load
  return { context, require: load, run: code => vm.runInContext(code, context), process: realmProcess }
}

module.exports = { realm }
