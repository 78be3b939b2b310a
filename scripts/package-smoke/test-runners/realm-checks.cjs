'use strict'

// What a test file checks under Jest and Vitest, each of which runs it in a `vm` realm of its own: the setup file's
// variables are the ones snowid reads, object literals are options, and snowid's errors are of the test file's
// classes. `test` and `expect` are the runner's, `snowid` the package as the test file imported it.

const { Pool } = require('pg')

module.exports = function realmChecks({ test, expect }, snowid, { acquireWorkerId }) {
  const { Snowflake, SnowflakeLayout, configure, config, decode, nextId, isSnowidError } = snowid

  test('configure() takes an object literal, before the first id', () => {
    configure({ workerBits: 5 })
    expect(config().sources.workerBits).toBe('option')
  })

  test("the setup file's variables are read", () => {
    expect(process.env.SNOWID_WORKER_ID).toBe('11')
    const c = config()
    expect([c.workerId, c.sources.workerId, c.lease]).toEqual([11, 'env', false])
    expect(decode(nextId()).workerId).toBe(11)
  })

  test('object literals are options', () => {
    const generator = new Snowflake({ datacenterId: 1, workerId: 3, lease: false })
    expect(generator.decode(generator.nextId())).toMatchObject({ datacenterId: 1, workerId: 3 })
    expect(new SnowflakeLayout({ epoch: 0 }).layout().epoch).toBe(0)
  })

  test("snowid's errors are of the test file's classes", () => {
    expect(() => decode('x')).toThrow(TypeError)
    expect(() => new SnowflakeLayout({ epoch: 1700000000 })).toThrow(RangeError)
    expect(() => new Snowflake({ workerId: -1 })).toThrow(RangeError)
    expect(() => configure({ workerId: 1 })).toThrow(Error)
    let caught
    try {
      decode(-1n)
    } catch (e) {
      caught = e
    }
    expect(caught).toBeInstanceOf(RangeError)
    expect(caught.code).toBe('ERR_SNOWID_INVALID_ID')
    expect(isSnowidError(caught)).toBe(true)
  })

  test('a store lease takes its options: an unreachable PostgreSQL is reported as such', async () => {
    const client = new Pool({ host: '127.0.0.1', port: 9, connectionTimeoutMillis: 500 })
    try {
      const taken = acquireWorkerId({ client, ttlMs: 500 })
      await expect(taken).rejects.toThrow(Error)
      await expect(taken).rejects.toMatchObject({ code: 'ERR_SNOWID_POSTGRES_UNAVAILABLE' })
    } finally {
      await client.end()
    }
  })
}
