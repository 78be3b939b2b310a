'use strict'

// snowid/json: ids as exact decimal strings in JSON and in logs, for code that keeps them as bigints. JSON.stringify
// throws on a bigint, and the libraries that do write one (safe-stable-stringify under pino, fast-json-stringify
// under a Fastify schema of `type: 'integer'`) write it as a bare number, which every JSON.parse of a client or log
// reader rounds to a double. Nothing here patches BigInt.prototype: each function is given to a library explicitly.

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
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema
  const copy = { ...schema }
  for (const key of SCHEMA_MAPS) {
    if (copy[key] && typeof copy[key] === 'object') {
      copy[key] = Object.fromEntries(Object.entries(copy[key]).map(([k, v]) => [k, integerBigintsAsStrings(v)]))
    }
  }
  for (const key of SCHEMA_LISTS) {
    if (Array.isArray(copy[key])) copy[key] = copy[key].map(integerBigintsAsStrings)
  }
  for (const key of SCHEMAS) {
    if (Array.isArray(copy[key])) copy[key] = copy[key].map(integerBigintsAsStrings)
    else if (key in copy) copy[key] = integerBigintsAsStrings(copy[key])
  }
  if (!hasInteger(copy.type)) return copy
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's `if`/`then`/`else`, not a thenable
  return { if: ANY_JSON_TYPE, then: copy, else: BIGINT_AS_STRING }
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
function responseSchemas(response) {
  const out = {}
  for (const [status, schema] of Object.entries(response)) {
    if (schema && typeof schema === 'object' && schema.content && typeof schema.content === 'object') {
      const content = {}
      for (const [type, entry] of Object.entries(schema.content)) {
        content[type] = entry && entry.schema ? { ...entry, schema: integerBigintsAsStrings(entry.schema) } : entry
      }
      out[status] = { ...schema, content }
    } else {
      out[status] = integerBigintsAsStrings(schema)
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
 */
function fastifyBigintStrings(app, _options, done) {
  app.addHook('onRoute', route => {
    const response = route.schema && route.schema.response
    if (response && typeof response === 'object') {
      route.schema = { ...route.schema, response: responseSchemas(response) }
      return
    }
    const hooks = route.preSerialization
    route.preSerialization = hooks ? [].concat(hooks, preSerialization) : [preSerialization]
  })
  if (typeof done === 'function') done()
}

// What fastify-plugin sets: `app.register(fastifyBigintStrings)` changes the instance it is given.
fastifyBigintStrings[Symbol.for('skip-override')] = true

module.exports = { replacer, stringify, bigintsToStrings, integerBigintsAsStrings, fastifyBigintStrings }
