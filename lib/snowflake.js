'use strict'

// The package's two classes, over the binding's: `Snowflake`, a generator with its own options, and
// `SnowflakeLayout`, which reads ids of a layout and epoch. Their class semantics are lib/class.js's; their methods
// are the binding's, made once per native core.

const { binding, WASI } = require('./addon.js')
const { idsOf, stringsOf } = require('./batches.js')
const { brandedClass } = require('./class.js')
const { decoder } = require('./decode.js')

/** A `Snowflake` core's methods: its hot ones and batch halves (`__install`), the rest bound to it. */
function snowflakeMethods(core) {
  const [nextId, nextIdString, timestampOf, fill, scratchIds, joinedIds] =
    binding.Snowflake.prototype.__install.call(core)
  const native = binding.Snowflake.prototype
  return {
    nextId,
    nextIdString,
    nextIds: idsOf(fill, scratchIds),
    nextIdStrings: stringsOf(nextIdString, joinedIds),
    timestampOf,
    decode: decoder(native.__decoder.call(core), false),
    minIdAt: native.minIdAt.bind(core),
    maxIdAt: native.maxIdAt.bind(core),
    config: native.config.bind(core),
    stats: native.stats.bind(core),
  }
}

/** A `SnowflakeLayout` core's methods. */
function layoutMethods(core) {
  const native = binding.SnowflakeLayout.prototype
  return {
    decode: decoder(native.__decoder.call(core), false),
    timestampOf: native.timestampOf.bind(core),
    minIdAt: native.minIdAt.bind(core),
    maxIdAt: native.maxIdAt.bind(core),
    layout: native.layout.bind(core),
  }
}

// On WASI a Snowflake claims its identity when it is made (its id methods are the binding's own, fixed on it). One
// whose config() fails claims nothing: its ids fail the same way.
function claimSnowflake(core) {
  let config
  try {
    config = binding.Snowflake.prototype.config.call(core)
  } catch {
    return
  }
  require('./wasi-threads.js').claim(config)
}

const snowflake = brandedClass(
  'Snowflake',
  [
    'nextId',
    'nextIdString',
    'nextIds',
    'nextIdStrings',
    'timestampOf',
    'decode',
    'minIdAt',
    'maxIdAt',
    'config',
    'stats',
  ],
  options => binding.__snowflakeCore(options),
  snowflakeMethods,
  WASI ? claimSnowflake : undefined,
)

const layout = brandedClass(
  'SnowflakeLayout',
  ['decode', 'timestampOf', 'minIdAt', 'maxIdAt', 'layout'],
  options => new binding.SnowflakeLayout(options),
  layoutMethods,
)

module.exports = {
  Snowflake: snowflake.Class,
  SnowflakeLayout: layout.Class,
  /** The native core of a `Snowflake` made here: what the binding's `fenceSnowflake` takes (lib/store-lease.js). */
  coreOf: snowflake.coreOf,
}
