'use strict'

// Ids in a real MariaDB through mysql2: 100k ids in a BIGINT primary key come back as lossy numbers by default, and
// exact with supportBigNumbers and bigNumberStrings, as the README's driver table says.

const test = require('node:test')
const assert = require('node:assert/strict')

const { Snowflake } = require('..')
const { reportMissing, startMariadb } = require('./servers.js')

const TOTAL = 100_000
const WORKERS = [0, 7, 12, 31]

/** TOTAL ids from one generator per worker id, in turns, so that they span several ms and worker ids. */
function generate() {
  const gens = WORKERS.map(workerId => new Snowflake({ datacenterId: 5, workerId, lease: false }))
  const ids = []
  for (let turn = 0; ids.length < TOTAL; turn++) {
    const g = gens[turn % gens.length]
    for (let i = 0, n = Math.min(TOTAL - ids.length, 1 + ((turn * 7919) % 900)); i < n; i++) ids.push(g.nextId())
  }
  return ids
}

async function main() {
  const server = await startMariadb()
  if (!server) {
    reportMissing(test, 'MariaDB', "apt-get install mariadb-server (Debian's package)")
    return
  }
  const clients = []
  test.after(async () => {
    await Promise.all(clients.map(c => c.end().catch(() => {})))
    await server.stop()
  })
  const mysql = require('mysql2/promise')
  const connect = async (options = {}) => {
    const c = await mysql.createConnection({ host: server.host, port: server.port, user: server.user, ...options })
    clients.push(c)
    return c
  }
  const ids = generate()

  test('100k ids go into a BIGINT primary key, sent as bigints and as strings', async () => {
    const c = await connect()
    await c.query('CREATE DATABASE snowid')
    await c.query('USE snowid')
    await c.query('CREATE TABLE ids (id BIGINT PRIMARY KEY, n INT NOT NULL)')
    for (let start = 0; start < TOTAL; start += 10_000) {
      // Half the chunks send ids as bigints, half as decimal strings: mysql2 writes both as the decimal literal.
      const rows = ids.slice(start, start + 10_000).map((id, i) => [start % 20_000 === 0 ? id : String(id), start + i])
      await c.query('INSERT INTO ids (id, n) VALUES ?', [rows])
    }
    const [[count]] = await c.query(
      'SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d, CAST(MIN(id) AS CHAR) AS lo, CAST(MAX(id) AS CHAR) AS hi FROM ids',
    )
    assert.deepEqual(count, {
      n: TOTAL,
      d: TOTAL,
      // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.min refuses
      lo: String(ids.reduce((a, b) => (a < b ? a : b))),
      // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max refuses
      hi: String(ids.reduce((a, b) => (a > b ? a : b))),
    })
  })

  test('by default mysql2 reads a BIGINT as a number, and most ids lose digits', async t => {
    const c = await connect({ database: 'snowid' })
    const [rows] = await c.query('SELECT id, n FROM ids')
    assert.equal(rows.length, TOTAL)
    let exact = 0
    for (const row of rows) {
      assert.equal(typeof row.id, 'number')
      if (BigInt(row.id) === ids[row.n]) exact++
    }
    t.diagnostic(`${exact} of ${TOTAL} ids came back exact without supportBigNumbers and bigNumberStrings`)
    assert.ok(ids[0] > 2n ** 53n, 'ids made now are above 2^53')
    assert.ok(exact < TOTAL / 10, `${exact} of ${TOTAL} exact`)
  })

  test('with supportBigNumbers and bigNumberStrings every id comes back as its exact decimal string', async () => {
    const c = await connect({ database: 'snowid', supportBigNumbers: true, bigNumberStrings: true })
    const [rows] = await c.query('SELECT id, n FROM ids')
    assert.equal(rows.length, TOTAL)
    for (const row of rows) {
      assert.equal(typeof row.id, 'string')
      if (row.id !== String(ids[row.n])) assert.equal(row.id, String(ids[row.n]))
    }
    // The same through a prepared statement (the binary protocol), with an id sent as a bigint.
    const [[one]] = await c.execute('SELECT id FROM ids WHERE id = ?', [ids[123]])
    assert.deepEqual(one, { id: String(ids[123]) })
  })
}

main()
