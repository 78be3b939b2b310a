import type { GraphQLScalarType } from 'graphql'

/**
 * A graphql-js scalar named `SnowflakeId` for snowid ids. It sends an id (a `bigint`, a canonical decimal string or
 * a safe integer `number`, as resolvers return it) as its decimal string, and reads a string literal, an int literal
 * or a variable (a decimal string, or a safe integer) with the checks of `isId`, into a `bigint`. Anything else is a
 * `GraphQLError` with `extensions.code` `'ERR_SNOWID_INVALID_ID'`. Made by the app's own graphql (16 or later).
 *
 * In SDL, declare `scalar SnowflakeId` and give `{ SnowflakeId: GraphQLSnowflakeId }` in the resolvers map.
 * @example
 * new GraphQLObjectType({ name: 'User', fields: { id: { type: new GraphQLNonNull(GraphQLSnowflakeId) } } })
 */
export declare const GraphQLSnowflakeId: GraphQLScalarType<bigint, string>
