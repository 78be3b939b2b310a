'use strict'

// The package's entry: it only composes. The module's functions are the native binding's (lib/addon.js), with
// `decode`, `nextIds`, `nextIdStrings`, `encode` and `parse` completed in JS over the native ones (lib/decode.js,
// lib/batches.js, lib/encoding.js); the classes are lib/snowflake.js's; on the WASI build, the default generator's id functions claim
// it for their thread on their first call (lib/wasi-threads.js); the error codes are lib/codes.js's.

const { binding, WASI } = require('./lib/addon.js')
const { idsOf, stringsOf } = require('./lib/batches.js')
const { isSnowidError } = require('./lib/codes.js')
const { decoder } = require('./lib/decode.js')
const { encode, parse } = require('./lib/encoding.js')
const { Snowflake, SnowflakeLayout } = require('./lib/snowflake.js')

// On WASI the first call of each id function claims the default generator's identity for this thread.
const claimed = WASI ? fn => require('./lib/wasi-threads.js').claiming(fn, binding.config) : fn => fn

// Assigned one by one, so that `import { nextId } from 'snowid'` finds them (cjs-module-lexer reads these lines).
module.exports.Snowflake = Snowflake
module.exports.SnowflakeLayout = SnowflakeLayout
module.exports.ConfigSource = binding.ConfigSource
module.exports.OnClockBack = binding.OnClockBack
module.exports.config = binding.config
module.exports.configure = binding.configure
module.exports.decode = decoder(binding.__decodeFields, true)
module.exports.encode = encode
module.exports.isSnowidError = isSnowidError
module.exports.maxIdAt = binding.maxIdAt
module.exports.minIdAt = binding.minIdAt
module.exports.nextId = claimed(binding.nextId)
module.exports.nextIds = claimed(idsOf(binding.nextIds, binding.__scratchIds))
module.exports.nextIdString = claimed(binding.nextIdString)
module.exports.nextIdStrings = claimed(stringsOf(binding.nextIdString, binding.__joinedIds))
module.exports.parse = parse
module.exports.stats = binding.stats
module.exports.timestampOf = binding.timestampOf
module.exports.workerSlots = binding.workerSlots
