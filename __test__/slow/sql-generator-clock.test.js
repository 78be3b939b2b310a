'use strict'

// snowid_next_id() in a PostgreSQL whose wall clock steps back (the server runs under libfaketime, which reads the
// offset file at every clock read): a step within maxLeadMs carries on from the last id; a larger one is refused
// with SQLSTATE SN001 until the clock catches up; no id is ever returned twice, and ids only grow.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const { Snowflake, decode } = require('../..')
const { postgresFunctions, postgresGenerator } = require('../../lib/sql.js')
const { tableSql } = require('../../lib/postgres.js')
const { reportMissing, startPostgres } = require('../servers.js')

const LIBFAKETIME = ['x86_64-linux-gnu', 'aarch64-linux-gnu', '']
  .map(dir => path.join('/usr/lib', dir, 'faketime', 'libfaketime.so.1'))
  .find(file => fs.existsSync(file))
// The default layout and epoch, datacenter 0.
const LAYOUT = new Snowflake({ workerId: 0, lease: false }).config()

async function main() {
  if (!LIBFAKETIME) {
    if (process.env.CI) throw new Error('libfaketime is not installed (apt-get install faketime)')
    test('snowid_next_id() under a clock stepped back', t =>
      t.skip('libfaketime is not installed (apt-get install faketime)'))
    return
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-pgclock-'))
  fs.chmodSync(dir, 0o755)
  const offset = path.join(dir, 'offset')
  fs.writeFileSync(offset, '+0\n')
  fs.chmodSync(offset, 0o644)
  const env = {
    LD_PRELOAD: LIBFAKETIME,
    FAKETIME_TIMESTAMP_FILE: offset,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  }
  // The server (pg_ctl and postgres) inherits these; this process, loaded already, does not.
  Object.assign(process.env, env)
  let server
  try {
    server = await startPostgres()
  } finally {
    for (const key of Object.keys(env)) delete process.env[key]
  }
  if (!server) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    fs.rmSync(dir, { recursive: true, force: true })
    return
  }
  const { Client } = require('pg')
  const c = new Client({ host: server.host, port: server.port, user: server.user, database: server.database })
  test.after(async () => {
    await c.end().catch(() => {})
    server.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  test('a step back within maxLeadMs carries on; a larger one is refused (SN001) until the clock catches up', async t => {
    await c.connect()
    await c.query(
      `${tableSql()}\n${postgresFunctions(LAYOUT)}\n${postgresGenerator(LAYOUT, { maxLeadMs: 1000, ttlMs: 100 })}`,
    )
    const ids = []
    const take = async n => {
      const { rows } = await c.query('SELECT snowid_next_id()::text AS id FROM generate_series(1, $1)', [n])
      for (const r of rows) ids.push(BigInt(r.id))
    }
    // A TTL of 100 ms: the slot of the table just made is held that long, within maxLeadMs, so nothing is refused.
    // Past the server's start plus maxLeadMs, so the ids are stamped by the clock.
    await sleep(1500)
    await take(2000)
    const {
      rows: [now0],
    } = await c.query('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms')
    assert.ok(Math.abs(Number(now0.ms) - Date.now()) < 200, 'the server clock reads true before the step')
    // 400 ms back: within maxLeadMs, the ids carry on from the last.
    fs.writeFileSync(offset, '-0.4s\n')
    const {
      rows: [stepped],
    } = await c.query('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms')
    assert.ok(
      Date.now() - Number(stepped.ms) > 300,
      `the server clock stepped back: ${Date.now() - Number(stepped.ms)} ms`,
    )
    const before = ids.length
    await take(2000)
    const last = decode(ids.at(-1)).timestamp
    assert.ok(last >= decode(ids[before - 1]).timestamp, 'carried on from the last id')
    // 5 s back: refused with SN001, and no id comes out.
    fs.writeFileSync(offset, '-5s\n')
    await assert.rejects(c.query('SELECT snowid_next_id()'), err => {
      assert.equal(err.code, 'SN001', err.message)
      assert.match(
        err.message,
        /^snowid_next_id: expected the clock within 1001 ms \(maxLeadMs \+ 1\) of the next id, found it \d+ ms behind/,
      )
      return true
    })
    // The clock back where it was: ids go on, past every earlier one.
    fs.writeFileSync(offset, '+0\n')
    await take(2000)
    const sorted = BigInt64Array.from(ids)
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `ids only grow (at ${i})`)
    sorted.sort()
    let dups = 0
    for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) dups++
    assert.equal(dups, 0)
    t.diagnostic(`${ids.length} ids across the steps, 0 duplicates`)
  })
}

main()
