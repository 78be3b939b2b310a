'use strict'

// The package's two classes, over the binding's: `Snowflake`, a generator with its own options, and
// `SnowflakeLayout`, which reads ids of a layout and epoch. Their class semantics are lib/class.js's; their methods
// are the binding's, made once per native core.

const { binding, realm, WASI } = require('./addon.js')
const { idsOf, stringsOf } = require('./batches.js')
const { brandedClass } = require('./class.js')
const { decoder } = require('./decode.js')
const { track } = require('./diagnostics.js')
const { canonicalIds, idGuard } = require('./ids.js')

// The native classes' methods and constructors, made this realm's (lib/addon.js): each takes the core first, and
// throws this realm's errors; so do the functions they return. The core is passed as an argument, not as `this`: Deno does not give a native function
// the `this` it was called with.
const native = {}
for (const [Class, names] of [
  [binding.Snowflake, ['__install', '__decoder', 'minIdAt', 'maxIdAt', 'config', 'stats']],
  [binding.SnowflakeLayout, ['__decoder', 'timestampOf', 'minIdAt', 'maxIdAt', 'layout']],
]) {
  native[Class.name] = Object.fromEntries(
    names.map(name => {
      const method = Class.prototype[name]
      return [name, realm.wrap({ [name]: (core, ...args) => method.apply(core, args) }[name])]
    }),
  )
}
const snowflakeCore = realm.wrap(binding.__snowflakeCore)
// Made with `new` inside a function called as the realm's: Bun and Deno give `new` of a native function the object
// they made, not the one it returns, so the native class is not itself wrapped.
const layoutCore = realm.wrap(function SnowflakeLayout(options) {
  return new binding.SnowflakeLayout(options)
})
const fence = realm.wrap(binding.fenceSnowflake)

/** A `Snowflake` core's methods: its hot ones and batch halves (`__install`), the rest bound to it. */
function snowflakeMethods(core) {
  const own = native.Snowflake
  const [nextId, nextIdString, timestampOf, fill, scratchIds, joinedIds] = own.__install(core).map(realm.wrap)
  return {
    nextId,
    nextIdString,
    nextIds: idsOf(fill, scratchIds),
    nextIdStrings: stringsOf(nextIdString, joinedIds),
    timestampOf: canonicalIds(timestampOf),
    isId: idGuard('Snowflake.prototype.isId', timestampOf),
    decode: decoder(realm.wrap(own.__decoder(core)), false),
    minIdAt: own.minIdAt.bind(undefined, core),
    maxIdAt: own.maxIdAt.bind(undefined, core),
    config: own.config.bind(undefined, core),
    stats: own.stats.bind(undefined, core),
  }
}

/** A `SnowflakeLayout` core's methods. */
function layoutMethods(core) {
  const own = native.SnowflakeLayout
  const timestampOf = own.timestampOf.bind(undefined, core)
  return {
    decode: decoder(realm.wrap(own.__decoder(core)), false),
    timestampOf: canonicalIds(timestampOf),
    isId: idGuard('SnowflakeLayout.prototype.isId', timestampOf),
    minIdAt: own.minIdAt.bind(undefined, core),
    maxIdAt: own.maxIdAt.bind(undefined, core),
    layout: own.layout.bind(undefined, core),
  }
}

// On WASI a Snowflake claims its identity when it is made (its id methods are the binding's own, fixed on it). One
// whose config() fails claims nothing: its ids fail the same way.
function claimSnowflake(core) {
  let config
  try {
    config = native.Snowflake.config(core)
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
    'isId',
    'decode',
    'minIdAt',
    'maxIdAt',
    'config',
    'stats',
  ],
  options => snowflakeCore(options),
  snowflakeMethods,
  WASI ? claimSnowflake : undefined,
  // Each is watched by `watch()` (lib/diagnostics.js) from its first method access: before it, its counters are all 0
  // and it holds no lease. Not from its making, which would keep every instance made in one synchronous loop alive to
  // its end (a WeakRef keeps its target for the rest of the job).
  track,
)

const layout = brandedClass(
  'SnowflakeLayout',
  ['decode', 'timestampOf', 'isId', 'minIdAt', 'maxIdAt', 'layout'],
  options => layoutCore(options),
  layoutMethods,
)

/** The `timestampOf` of `value` when it is a `Snowflake` or a `SnowflakeLayout`, else null (for `isId`'s `layout`). */
function timestampReader(value) {
  if (snowflake.is(value)) return snowflake.methodsOf(value).timestampOf
  if (layout.is(value)) return layout.methodsOf(value).timestampOf
  return null
}

module.exports = {
  Snowflake: snowflake.Class,
  SnowflakeLayout: layout.Class,
  timestampReader,
  /** A `Snowflake`'s counters, for `watch()`. */
  statsOf: generator => snowflake.methodsOf(generator).stats(),
  /**
   * For the store leases (lib/store-lease.js): the binding's `fenceSnowflake` on the native core of `snowflake`, a
   * `Snowflake` made here.
   */
  fenceSnowflake: (generator, deadline, mark) => fence(snowflake.coreOf(generator), deadline, mark),
}
