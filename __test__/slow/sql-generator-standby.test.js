'use strict'

// snowid_next_id() on an asynchronous standby that is promoted after it was cut off from its primary: the primary
// made ids the standby never received, then crashed. On the promoted standby (a new WAL timeline) the function first
// refuses (SQLSTATE SN001) for one TTL, then makes ids past every id the old primary made: none is returned twice.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

const { Snowflake } = require('../..')
const { postgresFunctions, postgresGenerator } = require('../../lib/sql.js')
const { tableSql } = require('../../lib/postgres.js')
const { until } = require('../holders.js')
const { postgresQuery: sql, reportMissing, startPostgresWithStandby } = require('../servers.js')

// The default layout and epoch, datacenter 0.
const LAYOUT = new Snowflake({ workerId: 0, lease: false }).config()
const TTL = 3000

test('a promoted asynchronous standby never makes an id the old primary made', async t => {
  const started = await startPostgresWithStandby(t, { synchronous_commit: 'on' })
  if (!started) {
    reportMissing(test, 'PostgreSQL', "apt-get install postgresql (Debian's package)")
    return
  }
  const { primary, link, standby } = started
  await sql(primary, `${tableSql()}\n${postgresFunctions(LAYOUT)}\n${postgresGenerator(LAYOUT, { ttlMs: TTL })}`)
  const ids = []
  const take = async (server, n) => {
    for (const r of await sql(server, 'SELECT snowid_next_id()::text AS id FROM generate_series(1, $1)', [n]))
      ids.push(BigInt(r.id))
  }
  // The lease table was just made, so its rows record no incarnation: the database's slot is held one TTL first.
  await until(
    () =>
      sql(primary, 'SELECT snowid_next_id()').then(
        () => true,
        err => {
          if (err.code !== 'SN001') throw err
          return false
        },
      ),
    TTL * 5,
    'the first id after the install',
  )
  await take(primary, 1000)
  await until(
    async () => (await sql(standby, "SELECT to_regprocedure('snowid_next_id()') IS NOT NULL AS ok"))[0].ok,
    30_000,
    'the function on the standby',
  )
  await sleep(500)
  // Cut off: the primary goes on, in transactions of its own that the standby never receives, then crashes.
  link.cut()
  for (let i = 0; i < 30; i++) await take(primary, 100)
  const primaryLast = ids.at(-1)
  primary.kill()
  standby.promote()
  const promotedAt = Date.now()
  // The first call on the new timeline holds the slot for one TTL.
  await assert.rejects(sql(standby, 'SELECT snowid_next_id()'), err => {
    assert.equal(err.code, 'SN001', err.message)
    return true
  })
  let firstAt
  await until(
    async () => {
      try {
        await take(standby, 1)
        firstAt = Date.now()
        return true
      } catch (err) {
        if (err.code !== 'SN001') throw err
        return false
      }
    },
    TTL * 5,
    'an id on the promoted standby',
  )
  await take(standby, 2000)
  t.diagnostic(`promoted; first id ${firstAt - promotedAt} ms later; ${ids.length} ids in all`)
  // The fence: the standby's first id is stamped one TTL past its first call, itself after the primary's last id,
  // which was stamped at most maxLeadMs + 1 (1,001 ms by default) past the primary's clock (it borrows ahead, as it
  // does while its slot is held after the install).
  const timeOf = id => Number(id >> 22n) + LAYOUT.epoch
  assert.ok(
    timeOf(ids.at(-2001)) - timeOf(primaryLast) >= TTL - 1001,
    `the first id on the new timeline is ${timeOf(ids.at(-2001)) - timeOf(primaryLast)} ms past the old primary's last`,
  )
  const sorted = BigInt64Array.from(ids).sort()
  let dups = 0
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) dups++
  assert.equal(dups, 0)
  assert.ok(ids.at(-2001) > primaryLast, 'the standby starts past every id of the old primary')
})
