'use strict'

// snowid/graphql, executed: queries and mutations with graphql-js 16, Apollo Server 5 and Mercurius. Ids go out as
// exact decimal strings, come in (string and int literals, variables) as bigints, and whatever is not an id is a
// GraphQL error with extensions.code ERR_SNOWID_INVALID_ID. Plain `ID` fields fail on a bigint without the one-liner
// of docs/graphql.md, and work with it.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const {
  graphql,
  buildSchema,
  defaultFieldResolver,
  GraphQLID,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLList,
  GraphQLString,
} = require('graphql')
const { GraphQLSnowflakeId } = require('snowid/graphql')

const ID = 903550410143301632n
const MAX = 9223372036854775807n

// One schema in SDL for the three servers: a query by id, a list, and a mutation that echoes its input.
const typeDefs = /* GraphQL */ `
  scalar SnowflakeId
  type User {
    id: SnowflakeId!
    name: String!
    friendIds: [SnowflakeId!]!
  }
  type Query {
    user(id: SnowflakeId!): User
    idType(id: SnowflakeId!): String!
  }
  type Mutation {
    rename(id: SnowflakeId!, name: String!): User!
  }
`
const users = new Map([[ID, { id: ID, name: 'ada', friendIds: [MAX, '12', 7] }]])
const resolvers = {
  SnowflakeId: GraphQLSnowflakeId,
  Query: {
    user: (_, { id }) => users.get(id) ?? null,
    idType: (_, { id }) => typeof id,
  },
  Mutation: {
    rename: (_, { id, name }) => ({ id, name, friendIds: [] }),
  },
}

// What each case sends, and what it must get back: data, or the code of its first error.
const CASES = [
  {
    name: 'a query with a string literal',
    query: `{ user(id: "${ID}") { id name friendIds } }`,
    data: { user: { id: `${ID}`, name: 'ada', friendIds: [`${MAX}`, '12', '7'] } },
  },
  { name: 'an int literal', query: `{ idType(id: ${ID}) }`, data: { idType: 'bigint' } },
  { name: 'the largest id', query: `{ idType(id: "${MAX}") }`, data: { idType: 'bigint' } },
  {
    name: 'a mutation with variables',
    query: 'mutation ($id: SnowflakeId!) { rename(id: $id, name: "b") { id name } }',
    variables: { id: `${ID}` },
    data: { rename: { id: `${ID}`, name: 'b' } },
  },
  {
    name: 'a safe integer variable',
    query: 'query ($id: SnowflakeId!) { idType(id: $id) }',
    variables: { id: 42 },
    data: { idType: 'bigint' },
  },
  ...['00012', '-5', '0x10', '', ' 1', '9223372036854775808', '9999999999999999999'].map(bad => ({
    name: `the variable ${JSON.stringify(bad)}`,
    query: 'query ($id: SnowflakeId!) { idType(id: $id) }',
    variables: { id: bad },
    error: 'ERR_SNOWID_INVALID_ID',
  })),
  {
    name: 'a variable of 2^63 as a JSON number',
    query: 'query ($id: SnowflakeId!) { idType(id: $id) }',
    variables: { id: 2 ** 63 },
    error: 'ERR_SNOWID_INVALID_ID',
  },
  ...['"00012"', '-5', '"-5"', '9223372036854775808', '1.5', 'true', '"0x10"'].map(literal => ({
    name: `the literal ${literal}`,
    query: `{ idType(id: ${literal}) }`,
    error: 'ERR_SNOWID_INVALID_ID',
  })),
]

/**
 * Checks a result `{ data, errors }` against a case. `literalCode` is the code a server gives the errors of its
 * validation phase (Apollo replaces their extensions with GRAPHQL_VALIDATION_FAILED), where literals are read.
 */
function check(c, result, literalCode = c.error) {
  if (c.error) {
    assert.ok(result.errors?.length, `${c.name}: expected an error, found ${JSON.stringify(result)}`)
    const code = c.variables ? c.error : literalCode
    assert.equal(result.errors[0].extensions?.code, code, `${c.name}: ${JSON.stringify(result.errors)}`)
    assert.match(result.errors[0].message, /SnowflakeId/, c.name)
  } else {
    assert.equal(result.errors, undefined, `${c.name}: ${JSON.stringify(result.errors)}`)
    assert.deepEqual(JSON.parse(JSON.stringify(result.data)), c.data, c.name)
  }
}

test('graphql-js 16: SnowflakeId in a schema made in code and in SDL', async () => {
  const schema = buildSchema(typeDefs)
  Object.assign(schema.getType('SnowflakeId'), {
    serialize: GraphQLSnowflakeId.serialize,
    parseValue: GraphQLSnowflakeId.parseValue,
    parseLiteral: GraphQLSnowflakeId.parseLiteral,
  })
  const rootValue = {
    user: ({ id }) => users.get(id) ?? null,
    idType: ({ id }) => typeof id,
    rename: ({ id, name }) => ({ id, name, friendIds: [] }),
  }
  for (const c of CASES) {
    check(c, await graphql({ schema, source: c.query, rootValue, variableValues: c.variables }))
  }
  // The same scalar in a schema built with the type classes.
  const User = new GraphQLObjectType({
    name: 'User',
    fields: { id: { type: new GraphQLNonNull(GraphQLSnowflakeId) }, name: { type: GraphQLString } },
  })
  const coded = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        user: {
          type: User,
          args: { id: { type: new GraphQLNonNull(GraphQLSnowflakeId) } },
          resolve: (_, { id }) => users.get(id),
        },
        broken: { type: GraphQLSnowflakeId, resolve: () => -1n },
      },
    }),
  })
  const r = await graphql({ schema: coded, source: `{ user(id: "${ID}") { id name } broken }` })
  assert.deepEqual(JSON.parse(JSON.stringify(r.data)), { user: { id: `${ID}`, name: 'ada' }, broken: null })
  // A resolver that returns what is no id is the server's error, with the code.
  assert.equal(r.errors[0].extensions.code, 'ERR_SNOWID_INVALID_ID')
  assert.match(r.errors[0].message, /SnowflakeId cannot represent the bigint -1/)
})

test("graphql-js 16: an ID field that returns a bigint fails, and the docs' one-liners make it a string", async () => {
  const fields = resolve => ({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: { node: { type: new GraphQLObjectType({ name: 'Node', fields: { id: { type: GraphQLID, resolve } } }) } },
    }),
  })
  const rootValue = { node: { id: ID } }
  const source = '{ node { id } }'
  const failing = await graphql({ schema: new GraphQLSchema(fields(undefined)), source, rootValue })
  assert.match(failing.errors[0].message, /ID cannot represent value: 903550410143301632/)
  // Per field: the resolver returns the string.
  const perField = await graphql({
    schema: new GraphQLSchema(fields(({ id }) => String(id))),
    source,
    rootValue,
  })
  assert.deepEqual(JSON.parse(JSON.stringify(perField)), { data: { node: { id: `${ID}` } } })
  // For every field at once: a default field resolver that turns a bigint into its string.
  const everywhere = await graphql({
    schema: new GraphQLSchema(fields(undefined)),
    source,
    rootValue,
    fieldResolver: (...args) => {
      const value = defaultFieldResolver(...args)
      return typeof value === 'bigint' ? String(value) : value
    },
  })
  assert.deepEqual(JSON.parse(JSON.stringify(everywhere)), { data: { node: { id: `${ID}` } } })
  // A list of ids too.
  const list = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: { ids: { type: new GraphQLList(GraphQLSnowflakeId), resolve: () => new BigInt64Array([ID, MAX]) } },
    }),
  })
  assert.deepEqual((await graphql({ schema: list, source: '{ ids }' })).data.ids, [`${ID}`, `${MAX}`])
})

test('Apollo Server 5: queries and mutations with SnowflakeId', async () => {
  const { ApolloServer } = require('@apollo/server')
  const server = new ApolloServer({ typeDefs, resolvers })
  await server.start()
  try {
    for (const c of CASES) {
      const response = await server.executeOperation({ query: c.query, variables: c.variables })
      assert.equal(response.body.kind, 'single')
      check(c, response.body.singleResult, 'GRAPHQL_VALIDATION_FAILED')
      // A bad id from the client is a 400, not Apollo's 200 with INTERNAL_SERVER_ERROR.
      assert.equal(response.http.status, c.error ? 400 : undefined, `${c.name}: HTTP status`)
    }
  } finally {
    await server.stop()
  }
})

test('Mercurius: queries and mutations with SnowflakeId over HTTP', async t => {
  const Fastify = require('fastify')
  const mercurius = require('mercurius')
  const app = Fastify()
  t.after(() => app.close())
  app.register(mercurius, { schema: typeDefs, resolvers })
  await app.ready()
  for (const c of CASES) {
    const r = await app.inject({ method: 'POST', url: '/graphql', payload: { query: c.query, variables: c.variables } })
    check(c, r.json())
  }
})

test('snowid/graphql without graphql, or with graphql 15, is a coded error that says what to install', () => {
  const script = version => `
    const Module = require('node:module')
    const resolve = Module._resolveFilename
    Module._resolveFilename = function (request, ...rest) {
      if (request === 'graphql') {
        if (${JSON.stringify(version)} === null) {
          const e = new Error("Cannot find module 'graphql'")
          e.code = 'MODULE_NOT_FOUND'
          throw e
        }
        return require.resolve('./package.json')
      }
      return resolve.call(this, request, ...rest)
    }
    require.cache[require.resolve('./package.json')] = { id: 'x', loaded: true,
      exports: { version: ${JSON.stringify(version)}, versionInfo: { major: 15 } } }
    try { require('./lib/graphql.js') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }
  `
  for (const [version, message] of [
    [null, /expected the graphql package \(16 or later\) installed beside snowid, found none: npm install graphql/],
    ['15.8.0', /expected graphql 16 or later, found 15\.8\.0/],
  ]) {
    const r = spawnSync(process.execPath, ['-e', script(version)], {
      cwd: path.join(__dirname, '..'),
      encoding: 'utf8',
      timeout: 60_000,
    })
    const out = JSON.parse(r.stdout)
    assert.equal(out.code, 'ERR_SNOWID_PEER_MISSING', r.stderr)
    assert.match(out.message, message)
  }
})
