'use strict'

// The package's entry: it only composes. The module's functions are the native binding's, made this realm's in a
// test runner's vm realm (lib/addon.js), with `decode`, `nextIds`, `nextIdStrings`, `encode` and `parse` completed in JS over the native ones
// (lib/decode.js, lib/batches.js, lib/encoding.js), and `isId` and the refusal of decimal ids with leading zeros
// (lib/ids.js), and `watch` (lib/diagnostics.js); the classes are lib/snowflake.js's; on the WASI build, the default
// generator's id functions claim it for their thread on their first call (lib/wasi-threads.js); the error codes are
// lib/codes.js's. The first id needs none of those lib/ files, so each export made from them is loaded the first time
// it is read (then it is a plain property), and `require('snowid')` parses only what `nextId()` needs.

const { binding, realm, WASI } = require('./lib/addon.js')

const config = realm.wrap(binding.config)
// On WASI the first call of each id function claims the default generator's identity for this thread.
const claimed = WASI ? fn => require('./lib/wasi-threads.js').claiming(fn, config) : fn => fn

// On WASI the binding's `nextIdOut` writes the id into wasm memory, which `__idOut` views: a bigint or a string that
// emnapi makes from wasm costs more than the call (src/js/module.rs, ID_OUT).
const out = binding.__idOut
const [nextId, nextIdString] = out
  ? [
      function nextId() {
        realm.nextIdOut()
        return out[0]
      },
      function nextIdString() {
        realm.nextIdOut()
        return String(out[0])
      },
    ]
  : [realm.nextId, realm.nextIdString]

function define(name, value) {
  Object.defineProperty(module.exports, name, { value, writable: true, enumerable: true, configurable: true })
}

/** An export loaded the first time it is read (or replaced by an assignment first, as a test's spy does). */
function lazy(name, load) {
  Object.defineProperty(module.exports, name, {
    enumerable: true,
    configurable: true,
    get() {
      const value = load()
      define(name, value)
      return value
    },
    set(value) {
      define(name, value)
    },
  })
}

// The names of the exports `lazy` defines, for `import { decode } from 'snowid'`: cjs-module-lexer reads this
// line, which never runs.
0 &&
  // biome-ignore lint/suspicious/noAssignInExpressions: read by cjs-module-lexer only
  (module.exports = {
    Snowflake,
    SnowflakeLayout,
    decode,
    encode,
    isId,
    isSnowidError,
    nextIds,
    nextIdStrings,
    parse,
    timestampOf,
    watch,
  })

// In alphabetical order, as before; the others are assigned one by one, so that `import { nextId } from 'snowid'`
// finds them too (cjs-module-lexer reads these lines).
lazy('Snowflake', () => require('./lib/snowflake.js').Snowflake)
lazy('SnowflakeLayout', () => require('./lib/snowflake.js').SnowflakeLayout)
module.exports.ConfigSource = binding.ConfigSource
module.exports.OnClockBack = binding.OnClockBack
module.exports.config = config
module.exports.configure = realm.wrap(binding.configure)
lazy('decode', () => require('./lib/decode.js').decoder(realm.decodeFields, true))
lazy('encode', () => require('./lib/encoding.js').encode)
lazy('isId', () => {
  const { timestampReader } = require('./lib/snowflake.js')
  return require('./lib/ids.js').idGuard('isId', realm.timestampOf, timestampReader)
})
lazy('isSnowidError', () => require('./lib/codes.js').isSnowidError)
module.exports.maxIdAt = realm.wrap(binding.maxIdAt)
module.exports.minIdAt = realm.wrap(binding.minIdAt)
module.exports.nextId = claimed(nextId)
lazy('nextIds', () => claimed(require('./lib/batches.js').idsOf(realm.nextIds, realm.scratchIds)))
module.exports.nextIdString = claimed(nextIdString)
lazy('nextIdStrings', () => claimed(require('./lib/batches.js').stringsOf(nextIdString, realm.joinedIds)))
lazy('parse', () => require('./lib/encoding.js').parse)
module.exports.stats = realm.wrap(binding.stats)
lazy('timestampOf', () => require('./lib/ids.js').canonicalIds(realm.timestampOf))
lazy('watch', () =>
  require('./lib/diagnostics.js').watcher(module.exports.stats, require('./lib/snowflake.js').statsOf),
)
module.exports.workerSlots = realm.wrap(binding.workerSlots)
