'use strict'

// node benchmark/sql-ids.js [--seconds N]
//
// Ids made in PostgreSQL, per second, from 1, 4 and 16 sessions (pgbench, a custom script of one
// `SELECT snowid_next_id()` per transaction, --protocol=prepared), against `nextval()` of a bigserial's sequence
// and `gen_random_uuid()`, in one run on one server that this script starts on a free loopback port (as the tests
// do: fsync and synchronous_commit off). Each case runs --seconds (default 10) after a 2 s warm-up; pgbench's "tps"
// (without the initial connection time) times the ids per transaction is the figure. A second table makes a thousand
// ids per statement, which shows each function's own cost rather than a transaction's.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.resolve(__dirname, '..')
const { postgresBinDir, startPostgres } = require(path.join(root, '__test__', 'servers.js'))
const { postgresGenerator } = require(path.join(root, 'lib', 'sql.js'))
const { Snowflake } = require(root)
const { tableSql } = require(path.join(root, 'lib', 'postgres.js'))

const seconds = process.argv[2] === '--seconds' ? Number(process.argv[3]) : 10
if (!Number.isInteger(seconds) || seconds < 1) throw new Error('--seconds: expected a positive integer')

async function main() {
  const server = await startPostgres({ settings: { max_connections: 40 } })
  if (!server) throw new Error('PostgreSQL is not installed')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-pgbench-'))
  // Where and as whom psql and pgbench connect.
  const to = ['-h', server.host, '-p', String(server.port), '-U', server.user]
  try {
    const psql = sql => {
      const r = spawnSync(
        path.join(postgresBinDir(), 'psql'),
        [...to, '-d', server.database, '-v', 'ON_ERROR_STOP=1', '-q'],
        { input: sql, encoding: 'utf8' },
      )
      if (r.status !== 0) throw new Error(r.stderr)
    }
    const layout = new Snowflake({ workerId: 0, lease: false }).config()
    psql(`${tableSql()}\n${postgresGenerator(layout)}\nCREATE TABLE serial_ids (id bigserial PRIMARY KEY);`)
    const functions = {
      'snowid_next_id()': 'snowid_next_id()',
      "nextval (bigserial's sequence)": "nextval('serial_ids_id_seq')",
      'gen_random_uuid()': 'gen_random_uuid()',
    }
    console.log(
      `${os.cpus().length} × ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB; PostgreSQL ${spawnSync(path.join(postgresBinDir(), 'postgres'), ['--version'], { encoding: 'utf8' }).stdout.trim()}`,
    )
    for (const [perTx, title] of [
      [1, 'one id per transaction (SELECT f())'],
      [1000, 'a thousand ids per statement (SELECT count(f()) FROM generate_series(1, 1000))'],
    ]) {
      console.log(`\nids/s, ${title}:\n\n| function | 1 session | 4 sessions | 16 sessions |\n|---|---|---|---|`)
      for (const [name, f] of Object.entries(functions)) {
        const file = path.join(dir, 'case.sql')
        fs.writeFileSync(
          file,
          perTx === 1 ? `SELECT ${f};\n` : `SELECT count(${f}) FROM generate_series(1, ${perTx});\n`,
        )
        const figures = []
        for (const clients of [1, 4, 16]) {
          const bench = time =>
            spawnSync(
              'pgbench',
              [
                ...to,
                '-n',
                '-f',
                file,
                '-c',
                String(clients),
                '-j',
                String(Math.min(clients, 2)),
                '-T',
                String(time),
                '--protocol=prepared',
                server.database,
              ],
              { encoding: 'utf8' },
            )
          bench(2)
          const r = bench(seconds)
          const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(r.stdout)
          if (!tps) throw new Error(`pgbench: ${r.stdout}${r.stderr}`)
          const failed = /number of failed transactions: (\d+)/.exec(r.stdout)
          if (failed && failed[1] !== '0') throw new Error(`pgbench: ${failed[1]} failed transactions`)
          figures.push(Math.round(Number(tps[1]) * perTx).toLocaleString('en-US'))
        }
        console.log(`| ${name} | ${figures.join(' | ')} |`)
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
    server.stop()
  }
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
