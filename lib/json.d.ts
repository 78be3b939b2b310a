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
}

/**
 * Fastify: bigints reach clients as decimal strings, with or without a response schema. Call it (or
 * `app.register` it) before adding routes: `fastifyBigintStrings(app)`.
 */
export declare function fastifyBigintStrings(app: FastifyLike, options?: unknown, done?: (err?: Error) => void): void
