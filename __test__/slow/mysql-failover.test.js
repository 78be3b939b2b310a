'use strict'

// Slow tier (npm run test:slow, run by CI): snowid/mysql through the promotion of a MariaDB replica, on a real
// primary (binary log, server_id 1) and replica (server_id 2) on loopback. The replica reads the primary's binary log
// through a TCP proxy of the test's own (`link`), which the test cuts so that the replica falls behind by more than a
// TTL; the primary is killed, the replica promoted (STOP SLAVE, RESET SLAVE ALL), and a newcomer takes the slot from
// it while the holder's pool stays on the dead primary (the longest overlap, until its deadline). One slot
// (workerBits 0). Ids are counted by sorting: 0 duplicates.

const test = require('node:test')
const assert = require('node:assert/strict')
const { setTimeout: sleep } = require('node:timers/promises')

process.env.SNOWID_LEASE_DIR = require('../helpers.js').freshLeaseDir()

const { reportMissing, startMariadb, tcpProxy } = require('../servers.js')
const { holder, tally, until } = require('../holders.js')
const snowid = require('../..')

const TTL = 3000
const LAYOUT = new snowid.Snowflake({ workerBits: 0, workerId: 0, lease: false })

async function main() {
  const probe = await startMariadb()
  if (!probe) {
    reportMissing(test, 'MariaDB', "apt-get install mariadb-server (Debian's package)")
    return
  }
  await probe.stop()
  const mysql = require('mysql2/promise')

  test('a MariaDB replica promoted, the holder left on the dead primary: its stale row waits a TTL, 0 duplicates', async t => {
    const primary = await startMariadb({ args: ['--log-bin=primary-bin', '--server-id=1'] })
    t.after(() => primary.stop())
    const link = await tcpProxy(primary.port)
    t.after(() => link.close())
    const replica = await startMariadb({ args: ['--log-bin=replica-bin', '--server-id=2'] })
    t.after(() => replica.stop())
    const front = await tcpProxy(primary.port)
    t.after(() => front.close())
    const connect = server => mysql.createConnection({ host: server.host, port: server.port, user: server.user })
    const r = await connect(replica)
    t.after(() => r.end().catch(() => {}))
    await r.query(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${link.port}, MASTER_USER='root', MASTER_CONNECT_RETRY=1`,
    )
    await r.query('START SLAVE')
    const p = await connect(primary)
    await p.query('CREATE DATABASE snowid')
    await p.end()
    const settings = { store: 'mysql', client: 'mysql2', user: 'root', database: 'snowid', host: '127.0.0.1' }
    const lease = { ...settings, mode: 'stream', ttlMs: TTL, workerBits: 0, datacenterId: 2 }
    const h = holder({ ...lease, port: front.port })
    const holders = [h]
    t.after(() => Promise.all(holders.map(x => x.stop())))
    await h.waitFor(e => e.event === 'acquired', 60_000)
    // The replica has the table and H's row before it is cut off.
    await until(
      async () => {
        const [rows] = await r.query(
          "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = 'snowid' AND table_name = 'snowid_workers'",
        )
        return Number(rows[0].n) === 1
      },
      30_000,
      'the table on the replica',
    )
    await sleep(1000)
    const cutAt = Date.now()
    link.cut()
    await sleep(TTL + 1000)
    front.cut()
    await primary.kill()
    await r.query('STOP SLAVE')
    await r.query('RESET SLAVE ALL')
    const promotedAt = Date.now()
    const n = holder({ ...lease, port: replica.port, waitMs: 15_000 })
    holders.push(n)
    const acquired = await n.waitFor(e => e.event === 'acquired', 40_000)
    await sleep(TTL)
    await h.stop()
    await n.stop()
    const { total, dups, each } = tally([h, n], LAYOUT, cutAt)
    const lost = h.events.find(e => e.event === 'lost')
    t.diagnostic(
      `replica cut off at 0 ms, promoted at ${promotedAt - cutAt} ms; N used the slot at ${acquired.at - cutAt} ms`,
    )
    t.diagnostic(`H: ${each[0]}; 'lost' ${lost ? `at ${lost.at - cutAt} ms` : 'never'}; N: ${each[1]}`)
    t.diagnostic(`${dups} duplicate ids of ${total}`)
    assert.ok(n.ids().length > 0, 'N issued ids')
    assert.equal(dups, 0, `${dups} duplicate ids of ${total}`)
  })
}

main()
