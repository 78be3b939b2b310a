'use strict'

// The package's two classes, over the binding's: `Snowflake`, a generator with its own options, and
// `SnowflakeLayout`, which reads ids of a layout and epoch. Their class semantics are lib/class.js's; their methods
// are the binding's, made once per native core.

const { binding, realm, WASI } = require('./addon.js')
const { idsOf, stringsOf } = require('./batches.js')
const { brandedClass } = require('./class.js')
const { decoder } = require('./decode.js')

// The native classes' methods and constructors, made this realm's (lib/addon.js): called on a core, each throws this
// realm's errors.
const native = {}
for (const [Class, names] of [
  [binding.Snowflake, ['__install', '__decoder', 'minIdAt', 'maxIdAt', 'config', 'stats']],
  [binding.SnowflakeLayout, ['__decoder', 'timestampOf', 'minIdAt', 'maxIdAt', 'layout']],
]) {
  native[Class.name] = Object.fromEntries(names.map(name => [name, realm.wrap(Class.prototype[name])]))
}
const snowflakeCore = realm.wrap(binding.__snowflakeCore)
const LayoutCore = realm.wrap(binding.SnowflakeLayout)
const fence = realm.wrap(binding.fenceSnowflake)

/** A `Snowflake` core's methods: its hot ones and batch halves (`__install`), the rest bound to it. */
function snowflakeMethods(core) {
  const own = native.Snowflake
  const [nextId, nextIdString, timestampOf, fill, scratchIds, joinedIds] = own.__install.call(core)
  return {
    nextId,
    nextIdString,
    nextIds: idsOf(fill, scratchIds),
    nextIdStrings: stringsOf(nextIdString, joinedIds),
    timestampOf,
    decode: decoder(own.__decoder.call(core), false),
    minIdAt: own.minIdAt.bind(core),
    maxIdAt: own.maxIdAt.bind(core),
    config: own.config.bind(core),
    stats: own.stats.bind(core),
  }
}

/** A `SnowflakeLayout` core's methods. */
function layoutMethods(core) {
  const own = native.SnowflakeLayout
  return {
    decode: decoder(own.__decoder.call(core), false),
    timestampOf: own.timestampOf.bind(core),
    minIdAt: own.minIdAt.bind(core),
    maxIdAt: own.maxIdAt.bind(core),
    layout: own.layout.bind(core),
  }
}

// On WASI a Snowflake claims its identity when it is made (its id methods are the binding's own, fixed on it). One
// whose config() fails claims nothing: its ids fail the same way.
function claimSnowflake(core) {
  let config
  try {
    config = native.Snowflake.config.call(core)
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
  options => snowflakeCore(options),
  snowflakeMethods,
  WASI ? claimSnowflake : undefined,
)

const layout = brandedClass(
  'SnowflakeLayout',
  ['decode', 'timestampOf', 'minIdAt', 'maxIdAt', 'layout'],
  options => new LayoutCore(options),
  layoutMethods,
)

module.exports = {
  Snowflake: snowflake.Class,
  SnowflakeLayout: layout.Class,
  /**
   * For the store leases (lib/store-lease.js): the binding's `fenceSnowflake` on the native core of `snowflake`, a
   * `Snowflake` made here.
   */
  fenceSnowflake: (generator, deadline, mark) => fence(snowflake.coreOf(generator), deadline, mark),
}
