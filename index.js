'use strict'

// The package's entry: it only composes. The module's functions are the native binding's, made for this realm
// (lib/addon.js), with `decode`, `nextIds`, `nextIdStrings`, `encode` and `parse` completed in JS over the native ones
// (lib/decode.js, lib/batches.js, lib/encoding.js), and `isId` and the refusal of decimal ids with leading zeros
// (lib/ids.js), and `watch` (lib/diagnostics.js); the classes are lib/snowflake.js's; on the WASI build, the default
// generator's id functions claim it for their thread on their first call (lib/wasi-threads.js); the error codes are
// lib/codes.js's.

const { binding, realm, WASI } = require('./lib/addon.js')
const { idsOf, stringsOf } = require('./lib/batches.js')
const { isSnowidError } = require('./lib/codes.js')
const { decoder } = require('./lib/decode.js')
const { encode, parse } = require('./lib/encoding.js')
const { watcher } = require('./lib/diagnostics.js')
const { canonicalIds, idGuard } = require('./lib/ids.js')
const { Snowflake, SnowflakeLayout, statsOf, timestampReader } = require('./lib/snowflake.js')

const config = realm.wrap(binding.config)
// On WASI the first call of each id function claims the default generator's identity for this thread.
const claimed = WASI ? fn => require('./lib/wasi-threads.js').claiming(fn, config) : fn => fn

// Assigned one by one, so that `import { nextId } from 'snowid'` finds them (cjs-module-lexer reads these lines).
module.exports.Snowflake = Snowflake
module.exports.SnowflakeLayout = SnowflakeLayout
module.exports.ConfigSource = binding.ConfigSource
module.exports.OnClockBack = binding.OnClockBack
module.exports.config = config
module.exports.configure = realm.wrap(binding.configure)
module.exports.decode = decoder(realm.decodeFields, true)
module.exports.encode = encode
module.exports.isId = idGuard('isId', realm.timestampOf, timestampReader)
module.exports.isSnowidError = isSnowidError
module.exports.maxIdAt = realm.wrap(binding.maxIdAt)
module.exports.minIdAt = realm.wrap(binding.minIdAt)
module.exports.nextId = claimed(realm.nextId)
module.exports.nextIds = claimed(idsOf(realm.nextIds, realm.scratchIds))
module.exports.nextIdString = claimed(realm.nextIdString)
module.exports.nextIdStrings = claimed(stringsOf(realm.nextIdString, realm.joinedIds))
module.exports.parse = parse
module.exports.stats = realm.wrap(binding.stats)
module.exports.timestampOf = canonicalIds(realm.timestampOf)
module.exports.watch = watcher(module.exports.stats, statsOf)
module.exports.workerSlots = realm.wrap(binding.workerSlots)
