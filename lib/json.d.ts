/**
 * The JSON Schema of an id as a string: `{ type: 'string', pattern }`, whose pattern accepts exactly the decimal
 * strings from 0 to 9223372036854775807, with no sign, no leading zeros and no spaces (the strings `isId` accepts).
 * Valid in JSON Schema draft 4 to 2020-12 and OpenAPI 3.0 and 3.1: for Fastify, Ajv, TypeBox (`Type.Unsafe`) and
 * OpenAPI documents. Frozen: spread it to add keywords (`{ ...idSchema, description: 'the order id' }`).
 */
export declare const idSchema: { readonly type: 'string'; readonly pattern: string }

/**
 * A `JSON.stringify` replacer that writes each bigint as its decimal string: `JSON.stringify(value, replacer)`,
 * or Express's `app.set('json replacer', replacer)`.
 */
export declare function replacer(key: string, value: unknown): unknown

/** `JSON.stringify(value, replacer, space)`: JSON with every bigint as its decimal string. */
export declare function stringify(value: unknown, space?: string | number): string

/**
 * `value` with every bigint in it, at any depth of plain objects and arrays, replaced by its decimal string. Objects
 * and arrays that hold no bigint are returned as they are, and so are other objects (errors, dates, class
 * instances). For pino: `pino({ formatters: { log: bigintsToStrings, bindings: bigintsToStrings } })`.
 */
export declare function bigintsToStrings<T>(value: T): T

/**
 * A copy of a JSON schema in which every `type: 'integer'` node writes a bigint as its decimal string under
 * fast-json-stringify (Fastify's response schemas), and numbers as before. Pass shared schemas (`addSchema`)
 * through it; `fastifyBigintStrings` does it for each route's response schemas.
 */
export declare function integerBigintsAsStrings<T>(schema: T): T

/** The part of a Fastify instance that `fastifyBigintStrings` uses. */
export interface FastifyLike {
  addHook(name: 'onRoute', hook: (route: any) => void): unknown
  addHook(name: 'onReady', hook: (done: (err?: Error) => void) => void): unknown
}

/**
 * Fastify: bigints reach clients as decimal strings, with or without a response schema. Call it (or
 * `app.register` it) before adding routes: `fastifyBigintStrings(app)`. Once the app is ready, each route's
 * response schema reads as documentation tools (@fastify/swagger) need it, valid in OpenAPI 3.0 and 3.1: each
 * `type: 'integer'` node becomes `{ anyOf: [<the node>, { type: 'string', pattern }] }`, which is what it sends.
 */
export declare function fastifyBigintStrings(app: FastifyLike, options?: unknown, done?: (err?: Error) => void): void
