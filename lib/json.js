'use strict'

// snowid/json: ids as exact decimal strings in JSON and in logs, for code that keeps them as bigints. JSON.stringify
// throws on a bigint, and the libraries that do write one (safe-stable-stringify under pino, fast-json-stringify
// under a Fastify schema of `type: 'integer'`) write it as a bare number, which every JSON.parse of a client or log
// reader rounds to a double. Nothing here patches BigInt.prototype: each function is given to a library explicitly.
// `idSchema` is the JSON Schema of an id sent as a string, for validators and OpenAPI.

const { ID_PATTERN } = require('./ids.js')

/**
 * The JSON Schema of an id as a string: its `pattern` accepts exactly the decimal strings from 0 to
 * 9223372036854775807, with no sign, no leading zeros and no spaces (what `isId` accepts as a string). Valid in JSON
 * Schema draft 4 to 2020-12 and in OpenAPI 3.0 and 3.1. Frozen: spread it to add keywords.
 */
const idSchema = Object.freeze({ type: 'string', pattern: ID_PATTERN })

/** A `JSON.stringify` replacer that writes each bigint as its decimal string. */
function replacer(_key, value) {
  return typeof value === 'bigint' ? value.toString() : value
}

/** `JSON.stringify(value, replacer, space)`: JSON with every bigint as its decimal string. */
function stringify(value, space) {
  return JSON.stringify(value, replacer, space)
}

function isPlain(value) {
  if (Array.isArray(value)) return true
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * `value` with every bigint in it, at any depth of plain objects and arrays, replaced by its decimal string. Objects
 * and arrays that hold no bigint are returned as they are, and so are all other objects (errors, dates, class
 * instances): they keep what their own serializers do with them. A reference cycle is left in place.
 */
function bigintsToStrings(value) {
  return convert(value, [])
}

function convert(value, path) {
  if (typeof value === 'bigint') return value.toString()
  if (value === null || typeof value !== 'object' || !isPlain(value) || path.includes(value)) return value
  path.push(value)
  try {
    let copy = null
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const next = convert(value[i], path)
        if (next !== value[i]) {
          copy ??= value.slice()
          copy[i] = next
        }
      }
    } else {
      for (const key of Object.keys(value)) {
        const next = convert(value[key], path)
        if (next !== value[key]) {
          copy ??= { ...value }
          copy[key] = next
        }
      }
    }
    return copy ?? value
  } finally {
    path.pop()
  }
}

// The six JSON types: a bigint is none of them, so a schema `if` of this type matches every value but a bigint.
const ANY_JSON_TYPE = Object.freeze({ type: ['number', 'string', 'boolean', 'null', 'object', 'array'] })
const BIGINT_AS_STRING = Object.freeze({ type: 'string' })
// What an integer node sends once a bigint may be written as a string, for documents (OpenAPI 3.0 has no `if`).
const BIGINT_DOCUMENTED = Object.freeze({ type: 'string', pattern: '^-?(0|[1-9][0-9]*)$' })

function hasInteger(type) {
  return type === 'integer' || (Array.isArray(type) && type.includes('integer'))
}

/**
 * A copy of the JSON schema `schema` in which every node of `type: 'integer'` writes a bigint as its decimal string,
 * for fast-json-stringify (Fastify's response schemas). Numbers and numeric strings in those nodes are written as
 * before. Each such node becomes `{ if: <any JSON type>, then: <the node>, else: { type: 'string' } }`: a bigint is
 * no JSON type, so it takes the `else`. Nodes reached through `$ref` are those of the schemas they name: pass shared
 * schemas through this too before `addSchema`.
 */
function integerBigintsAsStrings(schema) {
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's `if`/`then`/`else`, not a thenable
  return mapIntegerNodes(schema, node => ({ if: ANY_JSON_TYPE, then: node, else: BIGINT_AS_STRING }))
}

/**
 * A copy of `schema` in which every integer node says what it sends once a bigint is written as a string:
 * `{ anyOf: [<the node>, { type: 'string', pattern }] }`, which OpenAPI 3.0 and 3.1 both have.
 */
function integerBigintsDocumented(schema) {
  return mapIntegerNodes(schema, node => ({ anyOf: [node, BIGINT_DOCUMENTED] }))
}

/** A copy of `schema` with each node of `type: 'integer'` (copied first) replaced by `wrap(node)`. */
function mapIntegerNodes(schema, wrap) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema
  const map = node => mapIntegerNodes(node, wrap)
  const copy = { ...schema }
  for (const key of SCHEMA_MAPS) {
    if (copy[key] && typeof copy[key] === 'object') {
      copy[key] = Object.fromEntries(Object.entries(copy[key]).map(([k, v]) => [k, map(v)]))
    }
  }
  for (const key of SCHEMA_LISTS) {
    if (Array.isArray(copy[key])) copy[key] = copy[key].map(map)
  }
  for (const key of SCHEMAS) {
    if (Array.isArray(copy[key])) copy[key] = copy[key].map(map)
    else if (key in copy) copy[key] = map(copy[key])
  }
  return hasInteger(copy.type) ? wrap(copy) : copy
}

// The JSON Schema keywords whose values are schemas: maps of them, lists of them, and one schema (or, for `items`, a
// list) each.
const SCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas']
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems']
const SCHEMAS = [
  'items',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
]

// A status code's response schema, or a `content` map of them by media type (Fastify's two shapes).
function responseSchemas(response, map) {
  const out = {}
  for (const [status, schema] of Object.entries(response)) {
    if (schema && typeof schema === 'object' && schema.content && typeof schema.content === 'object') {
      const content = {}
      for (const [type, entry] of Object.entries(schema.content)) {
        content[type] = entry && entry.schema ? { ...entry, schema: map(entry.schema) } : entry
      }
      out[status] = { ...schema, content }
    } else {
      out[status] = map(schema)
    }
  }
  return out
}

function preSerialization(_request, _reply, payload, done) {
  done(null, bigintsToStrings(payload))
}

/**
 * Fastify: bigints reach clients as decimal strings. In a route with a response schema, each `type: 'integer'` node
 * writes a bigint as a string (see `integerBigintsAsStrings`); a route with none gets a `preSerialization` hook that
 * turns every bigint into its decimal string before `JSON.stringify`. It applies to the routes added after it:
 * call `fastifyBigintStrings(app)` first, or `app.register(fastifyBigintStrings)`, which applies to the instance it
 * is registered on, not to a new encapsulated context.
 *
 * The `if`/`then`/`else` that fast-json-stringify needs is no part of OpenAPI 3.0, so it is only what the route's
 * serializer is compiled from: once the app is ready (Fastify compiles each route's serializer before), the route's
 * `schema` becomes the documented form, in which each integer node is `{ anyOf: [<the node>, { type: 'string' }] }`,
 * valid in OpenAPI 3.0 and 3.1, and true to what is sent. Documentation plugins (@fastify/swagger) read it from
 * there, when asked for their document.
 */
function fastifyBigintStrings(app, _options, done) {
  const documented = []
  app.addHook('onRoute', route => {
    const response = route.schema && route.schema.response
    if (response && typeof response === 'object') {
      route.schema = { ...route.schema, response: responseSchemas(response, integerBigintsAsStrings) }
      documented.push([route, responseSchemas(response, integerBigintsDocumented)])
      return
    }
    const hooks = route.preSerialization
    route.preSerialization = hooks ? [].concat(hooks, preSerialization) : [preSerialization]
  })
  app.addHook('onReady', ready => {
    // Each route's context holds the schema object its serializer was compiled from; a new object replaces it here.
    for (const [route, response] of documented.splice(0)) route.schema = { ...route.schema, response }
    ready()
  })
  if (typeof done === 'function') done()
}

// What fastify-plugin sets: `app.register(fastifyBigintStrings)` changes the instance it is given.
fastifyBigintStrings[Symbol.for('skip-override')] = true

module.exports = { idSchema, replacer, stringify, bigintsToStrings, integerBigintsAsStrings, fastifyBigintStrings }
