'use strict'

// snowid/json without any framework: the replacer, bigintsToStrings and the schema rewrite. The frameworks
// themselves (Express, Fastify, NestJS, pino) run against these in `npm run test:ecosystem`.

const test = require('node:test')
const assert = require('node:assert/strict')
const {
  idSchema,
  replacer,
  stringify,
  bigintsToStrings,
  integerBigintsAsStrings,
  fastifyBigintStrings,
} = require('snowid/json')
const { nextId } = require('..')

// An id above 2^53 whose double differs from it: what JSON.parse of a bare number would read.
const ID = 902340232630763744n

test('replacer and stringify write bigints as their exact decimal strings', () => {
  assert.notEqual(BigInt(Number(ID)), ID, 'the id is one a double cannot hold')
  const id = nextId()
  const text = stringify({ id, ids: [ID, 1n], total: 12.5, nested: { id: ID } })
  assert.deepEqual(JSON.parse(text), {
    id: id.toString(),
    ids: [ID.toString(), '1'],
    total: 12.5,
    nested: { id: ID.toString() },
  })
  assert.equal(JSON.stringify({ id: ID }, replacer), `{"id":"${ID}"}`)
  assert.equal(stringify([ID], 2), `[\n  "${ID}"\n]`)
  assert.equal(typeof BigInt.prototype.toJSON, 'undefined', 'BigInt.prototype is left alone')
})

test('bigintsToStrings copies only what holds a bigint, and leaves other objects and cycles alone', () => {
  const error = Object.assign(new Error('boom'), { id: ID })
  const date = new Date(0)
  const untouched = { a: [1, 'x', { b: null }] }
  const value = { id: ID, list: [1, ID], untouched, error, date, nested: { deeper: { id: ID } } }
  const out = bigintsToStrings(value)
  assert.deepEqual(out.list, [1, ID.toString()])
  assert.equal(out.id, ID.toString())
  assert.equal(out.nested.deeper.id, ID.toString())
  assert.equal(out.untouched, untouched, 'an object with no bigint is the same object')
  assert.equal(out.error, error, 'an Error is left for its serializer')
  assert.equal(out.date, date)
  assert.equal(value.id, ID, 'the input is not changed')
  assert.equal(bigintsToStrings(untouched), untouched)
  assert.equal(bigintsToStrings(ID), ID.toString())
  assert.equal(bigintsToStrings('text'), 'text')
  const cyclic = { id: ID }
  cyclic.self = cyclic
  const copy = bigintsToStrings(cyclic)
  assert.equal(copy.id, ID.toString())
  assert.equal(copy.self, cyclic, 'a cycle is left in place, not followed')
  const nullProto = Object.assign(Object.create(null), { id: ID })
  assert.equal(bigintsToStrings(nullProto).id, ID.toString())
})

test('integerBigintsAsStrings wraps every integer node, and only those, without changing the input', () => {
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      maybe: { type: ['integer', 'null'] },
      name: { type: 'string' },
      enum: { type: 'integer' },
      list: { type: 'array', items: { type: 'integer' } },
      either: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
    },
    additionalProperties: { type: 'integer' },
  }
  const before = JSON.stringify(schema)
  const out = integerBigintsAsStrings(schema)
  assert.equal(JSON.stringify(schema), before, 'the input schema is not changed')
  const wrapped = node => assert.deepEqual(Object.keys(node).sort(), ['else', 'if', 'then'])
  for (const key of ['id', 'maybe', 'enum']) wrapped(out.properties[key])
  wrapped(out.properties.list.items)
  wrapped(out.properties.either.anyOf[0])
  wrapped(out.additionalProperties)
  assert.deepEqual(out.properties.name, { type: 'string' })
  assert.deepEqual(out.properties.id.then, { type: 'integer' })
  assert.deepEqual(out.properties.id.else, { type: 'string' })
  // A bigint is no JSON type: only it fails the `if`.
  assert.ok(!out.properties.id.if.type.includes('integer') && out.properties.id.if.type.length === 6)
})

test('fastifyBigintStrings rewrites response schemas and hooks routes without one', () => {
  const hooks = []
  let done = false
  fastifyBigintStrings({ addHook: (name, fn) => hooks.push([name, fn]) }, {}, () => {
    done = true
  })
  assert.ok(done)
  assert.equal(fastifyBigintStrings[Symbol.for('skip-override')], true)
  assert.deepEqual(
    hooks.map(([name]) => name),
    ['onRoute', 'onReady'],
  )
  const onRoute = hooks[0][1]
  const withSchema = { schema: { response: { 200: { type: 'object', properties: { id: { type: 'integer' } } } } } }
  onRoute(withSchema)
  assert.ok('if' in withSchema.schema.response[200].properties.id)
  assert.equal(withSchema.preSerialization, undefined)
  const compiled = withSchema.schema
  const content = {
    schema: { response: { 200: { content: { 'application/json': { schema: { type: 'integer' } } } } } },
  }
  onRoute(content)
  assert.ok('if' in content.schema.response[200].content['application/json'].schema)
  const own = () => {}
  const bare = { preSerialization: own }
  onRoute(bare)
  assert.equal(bare.preSerialization.length, 2)
  assert.equal(bare.preSerialization[0], own)
  let sent
  bare.preSerialization[1]({}, {}, { id: ID }, (err, payload) => {
    sent = [err, payload]
  })
  assert.deepEqual(sent, [null, { id: ID.toString() }])
  // Once the app is ready (its serializers compiled), the routes' schemas are the documented form, in new objects.
  let ready = false
  hooks[1][1](() => {
    ready = true
  })
  assert.ok(ready)
  assert.deepEqual(withSchema.schema.response[200].properties.id, {
    anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?(0|[1-9][0-9]*)$' }],
  })
  assert.ok('if' in compiled.response[200].properties.id, 'the compiled schema object is left as it was')
  assert.ok('anyOf' in content.schema.response[200].content['application/json'].schema)
})

test('idSchema: Ajv (draft-07 and 2020-12) accepts exactly the ids from 0 to 2^63 - 1 as canonical strings', () => {
  const Ajv = require('ajv')
  const Ajv2020 = require('ajv/dist/2020')
  const good = ['0', '7', '903550410143301632', '9223372036854775807', '9223372036854775806', '1000000000000000000']
  const bad = [
    '',
    ' 1',
    '1 ',
    '-5',
    '+5',
    '0x10',
    '00012',
    '1e3',
    '9223372036854775808',
    '9999999999999999999',
    5,
    null,
  ]
  for (const A of [Ajv, Ajv2020]) {
    const validate = new A({ strict: true }).compile(idSchema)
    for (const v of good) assert.equal(validate(v), true, v)
    for (const v of bad) assert.equal(validate(v), false, String(v))
  }
  assert.ok(Object.isFrozen(idSchema))
  assert.deepEqual(Object.keys(idSchema), ['type', 'pattern'])
})
