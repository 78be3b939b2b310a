'use strict'

// snowid/graphql: `GraphQLSnowflakeId`, a graphql-js scalar for ids. graphql-js's `ID` refuses a bigint ("ID cannot
// represent value"), and its `Int` is 32 bits; this scalar sends an id as its decimal string, and reads one from a
// string or int literal or a variable with the checks of `isId`, into a bigint. graphql is the app's own (an
// optional peer, 16 or later): the scalar must be made by the copy of graphql-js that runs the schema.

const { codedError } = require('./codes.js')
const { inRange, isCanonical } = require('./ids.js')

function peer() {
  let graphql
  try {
    graphql = require('graphql')
  } catch (cause) {
    throw codedError(
      Error,
      'ERR_SNOWID_PEER_MISSING',
      'snowid/graphql: expected the graphql package (16 or later) installed beside snowid, found none: ' +
        'npm install graphql. The loader error is the cause.',
      cause,
    )
  }
  const major = graphql.versionInfo && graphql.versionInfo.major
  if (!(major >= 16)) {
    throw codedError(
      Error,
      'ERR_SNOWID_PEER_MISSING',
      `snowid/graphql: expected graphql 16 or later, found ${graphql.version ?? 'a graphql without a version'}`,
    )
  }
  return graphql
}

const { GraphQLError, GraphQLScalarType, Kind, print } = peer()

const EXPECTED = 'a bigint, a decimal string (digits only, no leading zeros) or a safe integer from 0 to 2^63 - 1'

function describe(value) {
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`
  if (typeof value === 'number' || typeof value === 'bigint') return `the ${typeof value} ${String(value)}`
  if (value === null) return 'null'
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`
}

function invalid(message, nodes) {
  return new GraphQLError(message, { nodes, extensions: { code: 'ERR_SNOWID_INVALID_ID' } })
}

const GraphQLSnowflakeId = new GraphQLScalarType({
  name: 'SnowflakeId',
  description:
    'A snowid id: a 64-bit integer from 0 to 9223372036854775807, sent as its decimal string (JSON numbers lose ' +
    'digits above 2^53). As input, a decimal string or an int literal.',
  serialize(value) {
    if (!inRange(value)) throw invalid(`SnowflakeId cannot represent ${describe(value)}: expected ${EXPECTED}`)
    return typeof value === 'string' ? value : String(value)
  },
  parseValue(value) {
    if (!inRange(value)) throw invalid(`SnowflakeId variable: expected ${EXPECTED}, found ${describe(value)}`)
    return BigInt(value)
  },
  parseLiteral(ast) {
    if ((ast.kind === Kind.STRING || ast.kind === Kind.INT) && isCanonical(ast.value)) return BigInt(ast.value)
    const found = ast.kind === Kind.STRING || ast.kind === Kind.INT ? describe(ast.value) : `the literal ${print(ast)}`
    throw invalid(`SnowflakeId literal: expected a decimal string or an int from 0 to 2^63 - 1, found ${found}`, ast)
  },
})

module.exports = { GraphQLSnowflakeId }
