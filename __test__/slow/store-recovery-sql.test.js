'use strict'

// Slow tier (npm run test:slow, run by CI): a store down for two TTLs, then back with its data, under a holder of
// each SQL client (pg, postgres.js, mysql2). The holder stops at its deadline, reports each failed take with the
// driver's own error, and issues ids again once the store is back: before a take could time out (5 s), as a take
// left hanging in the client would. The figures are printed; docs/across-hosts.md gives them.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { reportMissing, startMariadb, startPostgres } = require('../servers.js')
const { holder, assertNoDuplicates } = require('../holders.js')

// A fresh table holds each slot one TTL, renewed meanwhile: 2 s leaves that renewal margin on a busy machine.
const TTL = 2000
// The shortest time after which the lease gives up on a take: max(ttlMs, 5000).
const TAKE_TIMEOUT = 5000

/** A holder of `base` through `restart(downMs)`: how long after the store was back it issued again. */
async function throughAnOutage(tt, base, restart) {
  const p = holder({ ...base, mode: 'stream', ttlMs: TTL, datacenterId: 1 })
  try {
    await p.waitFor(e => e.event === 'acquired', 60_000)
    await sleep(300)
    const backAt = await restart(2 * TTL)
    const back = await p.waitFor(e => e.event === 'reacquired', 60_000)
    await sleep(200)
    await p.stop()
    const failed = p.events.filter(e => e.event === 'renewFailed')
    tt.diagnostic(`${base.client}: issued again ${back.at - backAt} ms after the store was back`)
    tt.diagnostic(`${base.client}: ${failed.at(-1)?.message}`)
    assert.ok(
      back.at - backAt < TAKE_TIMEOUT,
      `${base.client}: issued again ${back.at - backAt} ms after the store was back`,
    )
    // Each failed take names the driver's error (its code and message), not only "is it up".
    assert.ok(failed.length > 0)
    for (const e of failed)
      assert.match(
        e.message,
        /found an error: [^.]*(ECONNREFUSED|ECONNRESET|CONNECTION_CLOSED|CONNECTION_ENDED|57P0\d|PROTOCOL_CONNECTION_LOST|EPIPE|terminat|shut)/i,
        e.message,
      )
    assertNoDuplicates(p.ids(), 'across the outage')
  } finally {
    await p.stop()
  }
}

async function main() {
  const pg = await startPostgres()
  if (!pg) reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
  else {
    test.after(() => pg.stop())
    const base = { store: 'postgres', host: pg.host, port: pg.port, user: pg.user, database: pg.database }
    test('PostgreSQL down for two TTLs, then back: a pg holder issues again before a take could time out', tt =>
      throughAnOutage(tt, { ...base, client: 'pg', table: 'rec_pg' }, ms => pg.restart(ms)))
    // postgres.js waits between reconnection attempts by its `backoff` option, whose default grows to 20 s during an
    // outage: docs/across-hosts.md tells to shorten it, as here.
    test('PostgreSQL down for two TTLs, then back: a postgres.js holder (backoff 0.1 s) issues again as soon', tt =>
      throughAnOutage(tt, { ...base, client: 'postgres', table: 'rec_pjs', backoffS: 0.1 }, ms => pg.restart(ms)))
  }
  const maria = await startMariadb()
  if (!maria) reportMissing(test, 'MariaDB', "apt-get install mariadb-server (Debian's package)")
  else {
    test.after(() => maria.stop())
    const mysql = require('mysql2/promise')
    const setup = await mysql.createConnection({ host: maria.host, port: maria.port, user: maria.user })
    await setup.query('CREATE DATABASE snowid')
    await setup.end()
    test('MariaDB down for two TTLs, then back: a mysql2 holder issues again before a take could time out', tt =>
      throughAnOutage(
        tt,
        { store: 'mysql', client: 'mysql2', host: maria.host, port: maria.port, user: maria.user, database: 'snowid' },
        ms => maria.restart(ms),
      ))
  }
}

main()
