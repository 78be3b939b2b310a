'use strict'

// Slow tier (npm run test:slow, run by CI): snowid/postgres through the promotion of a standby, on a real PostgreSQL
// primary and a pg_basebackup standby on loopback. The standby streams from the primary through a TCP proxy of the
// test's own (`link`), which the test cuts so that the standby falls behind; the holders reach the primary through
// another (`front`, the service's address).
//
// - An asynchronous standby promoted, the front switched to it: the holder follows it, a newcomer takes the slot.
// - The same, with the holder's pool left on the dead primary (the front answers nothing): the longest overlap.
// - Synchronous replication whose waits an operator cancels (pg_cancel_backend on the sessions in SyncRep): each
//   renewal committed on the primary only, with a warning.
// - Synchronous replication with the standby unreachable: acquire says the standby did not confirm.
//
// One slot (workerBits 0), so the newcomer must take the holder's. Ids are counted by sorting: 0 duplicates.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { postgresBinDir, postgresQuery, reportMissing, startPostgresWithStandby, tcpProxy } = require('../servers.js')
const { holder, tally, until } = require('../holders.js')
const { acquireWorkerId } = require('../../lib/postgres.js')
const snowid = require('../..')

const { Pool } = require('pg')

const TTL = 3000
const LAYOUT = new snowid.Snowflake({ workerBits: 0, workerId: 0, lease: false })
const timeOf = id => LAYOUT.decode(id).timestamp

/**
 * A primary (with `settings`), the proxies `link` (the standby's way to it) and `front` (the holders'), and a standby
 * streaming through `link`, in sync; all stopped after `t`. `sql(server, text)` runs one statement as the superuser.
 */
async function primaryAndStandby(t, settings = {}) {
  const { primary, link, standby } = await startPostgresWithStandby(t, { synchronous_commit: 'on', ...settings })
  const front = await tcpProxy(primary.port)
  t.after(() => front.close())
  const sql = postgresQuery
  await until(
    async () =>
      (await sql(primary, "SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming'"))[0].n === 1,
    30_000,
    'the standby streaming',
  )
  return { primary, standby, link, front, sql }
}

const lease = (port, extra = {}) => ({
  store: 'postgres',
  client: 'pg',
  host: '127.0.0.1',
  port,
  user: 'snowid',
  database: 'postgres',
  mode: 'stream',
  ttlMs: TTL,
  workerBits: 0,
  datacenterId: 2,
  ...extra,
})

/**
 * The failover most scenarios share: H holds the slot through `front`; `beforeKill(cutAt)` runs once the standby is cut
 * off and falls behind; then the primary crashes, the standby is promoted, and `follow` says whether the front
 * switches to it (else it answers nothing: H's pool stays on the dead primary). N takes the slot through the front or
 * straight from the standby. Returns the holders, the time of the cut and that of the promotion.
 */
async function failover(t, { settings, follow, beforeKill = () => sleep(TTL + 1000) }) {
  const { primary, standby, link, front, sql } = await primaryAndStandby(t, settings)
  const h = holder(lease(front.port))
  const holders = [h]
  t.after(() => Promise.all(holders.map(x => x.stop())))
  await h.waitFor(e => e.event === 'acquired', 30_000)
  // The standby has the table and H's row before it is cut off.
  await until(
    async () => (await sql(standby, "SELECT to_regclass('snowid_workers') IS NOT NULL AS ok"))[0].ok,
    30_000,
    'the table on the standby',
  )
  await sleep(1000)
  const cutAt = Date.now()
  link.cut()
  await beforeKill({ cutAt, primary, sql })
  if (!follow) front.cut()
  primary.kill()
  standby.promote()
  const promotedAt = Date.now()
  if (follow) {
    front.retarget(standby.port)
    front.drop()
  }
  const n = holder(lease(follow ? front.port : standby.port, { waitMs: 15_000 }))
  holders.push(n)
  const first = await Promise.race([
    n.waitFor(e => e.event === 'acquired', 40_000).then(e => ({ who: 'N', at: e.at })),
    h.waitFor(e => e.event === 'reacquired', 40_000).then(e => ({ who: 'H', at: e.at })),
  ])
  await sleep(TTL)
  await h.stop()
  await n.stop()
  return { h, n, cutAt, promotedAt, first }
}

function report(t, { h, n, cutAt, promotedAt, first }) {
  const { total, dups, each } = tally([h, n], LAYOUT, cutAt)
  const lost = h.events.find(e => e.event === 'lost')
  t.diagnostic(
    `standby cut off at 0 ms, promoted at ${promotedAt - cutAt} ms; ${first.who} used the slot after it at ${first.at - cutAt} ms`,
  )
  t.diagnostic(`H: ${each[0]}; 'lost' ${lost ? `at ${lost.at - cutAt} ms` : 'never'}; N: ${each[1]}`)
  t.diagnostic(`${dups} duplicate ids of ${total}`)
  // H's events in order, a run of the same one told once with its count.
  const runs = []
  for (const e of h.events.filter(e => e.event !== 'ids')) {
    const name = e.at ? `${e.event} at ${e.at - cutAt} ms` : e.code ? `${e.event} ${e.code}` : e.event
    if (runs.length && runs.at(-1)[0] === name) runs.at(-1)[1]++
    else runs.push([name, 1])
  }
  t.diagnostic(`H's events: ${runs.map(([name, k]) => (k > 1 ? `${name} ×${k}` : name)).join(', ')}`)
  assert.ok(
    [...h.ids(), ...n.ids()].some(id => timeOf(id) > promotedAt),
    'ids were issued on the promoted standby',
  )
  assert.equal(dups, 0, `${dups} duplicate ids of ${total}`)
}

async function main() {
  const bin = postgresBinDir()
  if (!bin) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }

  test('an asynchronous standby promoted, the holder following the front to it: 0 duplicates', async t => {
    report(t, await failover(t, { follow: true }))
  })

  test("an asynchronous standby promoted, the holder's pool left on the dead primary: 0 duplicates", async t => {
    report(t, await failover(t, { follow: false }))
  })

  test('synchronous replication whose waits are cancelled: those renewals do not count, 0 duplicates', async t => {
    let cancelled = 0
    const result = await failover(t, {
      settings: { synchronous_standby_names: "'*'" },
      follow: false,
      // For a TTL and more, every renewal that waits for the standby is cancelled, and commits on the primary only.
      async beforeKill({ primary, sql }) {
        const end = Date.now() + TTL + 1000
        while (Date.now() < end) {
          const rows = await sql(
            primary,
            "SELECT pg_cancel_backend(pid) AS ok FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND application_name = 'snowid-holder'",
          )
          cancelled += rows.filter(r => r.ok).length
          await sleep(50)
        }
      },
    })
    const refused = result.h.events.filter(
      e => e.event === 'renewFailed' && e.code === 'ERR_SNOWID_STORE_NOT_REPLICATED',
    )
    t.diagnostic(`${cancelled} waits cancelled; H: ${refused.length} renewals refused as not replicated`)
    report(t, result)
    assert.ok(cancelled > 0, 'some waits were cancelled')
    assert.ok(refused.length > 0, 'the holder refused the renewals whose wait was cancelled')
    assert.match(refused[0].message, /the synchronous standby did not confirm/)
  })

  test('synchronous replication with the standby unreachable: acquire says the standby did not confirm', async t => {
    const { primary, link, sql } = await primaryAndStandby(t, { synchronous_standby_names: "'*'" })
    // The table is made while the standby confirms; then it is cut off, and the take's commit waits for it.
    const pool = new Pool({
      host: primary.host,
      port: primary.port,
      user: primary.user,
      database: primary.database,
      max: 3,
    })
    pool.on('error', () => {})
    // The sessions still waiting for the standby are ended, so that the pool can close (unless the primary is already
    // stopped).
    t.after(async () => {
      await sql(primary, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'").catch(
        () => {},
      )
      await Promise.race([pool.end(), sleep(5000)])
    })
    const options = { client: pool, datacenterId: 3, ttlMs: 1000, snowflake: { workerBits: 1 } }
    await (await acquireWorkerId(options)).release()
    link.cut()
    const started = Date.now()
    await assert.rejects(acquireWorkerId(options), err => {
      t.diagnostic(`after ${Date.now() - started} ms: ${err.code}: ${err.message}`)
      assert.equal(err.code, 'ERR_SNOWID_STORE_NOT_REPLICATED')
      assert.match(err.message, /the synchronous standby did not confirm/)
      assert.doesNotMatch(err.message, /Check that PostgreSQL is up/)
      return true
    })
  })
}

main()
