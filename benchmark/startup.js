'use strict'

// Time to first id: how long a new process takes from start to its first id, beside `node -e 0`, as the median of
// `rounds` starts of each command (the commands rotate every round). Each first id is printed by its process and
// read here, so the work is never skipped. Also, inside the process (read off `process.hrtime`), how long
// `require('snowid')` took and how long the first `nextId()` took after it: the lease is taken by that call.

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { leaseEnv } = require('../scripts/lease-dir.js')

const ROOT = path.resolve(__dirname, '..')

const FIRST_ID = `const t0 = process.hrtime.bigint()
const snowid = require(${JSON.stringify(ROOT)})
const t1 = process.hrtime.bigint()
const id = snowid.nextId()
const t2 = process.hrtime.bigint()
process.stdout.write(id + ' ' + Number(t1 - t0) / 1e6 + ' ' + Number(t2 - t1) / 1e6)`

function commands(leaseDir) {
  const lease = leaseEnv(leaseDir)
  return [
    { name: 'node -e 0', argv: ['-e', '0'], env: {} },
    { name: 'first nextId(), host lease (default)', argv: ['-e', FIRST_ID], env: lease },
    {
      name: 'first nextId(), host lease, SNOWID_MAX_LEAD_MS=500',
      argv: ['-e', FIRST_ID],
      env: { ...lease, SNOWID_MAX_LEAD_MS: '500' },
    },
    { name: 'first nextId(), SNOWID_LEASE=off', argv: ['-e', FIRST_ID], env: { SNOWID_LEASE: 'off' } },
  ]
}

function median(values) {
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** Runs every command `rounds` times and returns { rows, sink }: per command the median wall and in-process ms. */
function timeToFirstId(rounds) {
  const leaseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-bench-'))
  try {
    const list = commands(leaseDir)
    const wall = list.map(() => [])
    const loads = list.map(() => [])
    const firsts = list.map(() => [])
    let sink = 0n
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < list.length; k++) {
        const i = (k + r) % list.length
        const c = list[i]
        const env = { ...process.env, ...c.env }
        const t0 = process.hrtime.bigint()
        const out = spawnSync(process.execPath, c.argv, { env, encoding: 'utf8', timeout: 60_000 })
        wall[i].push(Number(process.hrtime.bigint() - t0) / 1e6)
        if (out.status !== 0) throw new Error(`${c.name}: exited ${out.status}: ${out.stderr}`)
        if (out.stdout) {
          const [id, load, first] = out.stdout.split(' ')
          sink ^= BigInt(id)
          loads[i].push(Number(load))
          firsts[i].push(Number(first))
        }
      }
    }
    const base = median(wall[0])
    const rows = list.map((c, i) => ({
      name: c.name,
      wallMs: median(wall[i]),
      overNodeMs: median(wall[i]) - base,
      ratio: median(wall[i]) / base,
      requireMs: loads[i].length ? median(loads[i]) : null,
      firstIdMs: firsts[i].length ? median(firsts[i]) : null,
    }))
    return { rows, sink }
  } finally {
    fs.rmSync(leaseDir, { recursive: true, force: true })
  }
}

/** The markdown table of `timeToFirstId`'s rows. */
function table(rows, rounds) {
  const out = ['', `### Time to first id (median of ${rounds} process starts each)`, '']
  out.push('| command | wall ms | over `node -e 0` | × `node -e 0` | `require` | first `nextId()` after it |')
  out.push('|---|---|---|---|---|---|')
  const ms = (v, digits) => (v === null ? '–' : `${v.toFixed(digits)} ms`)
  for (const r of rows) {
    const over = `${r.overNodeMs >= 0 ? '+' : ''}${r.overNodeMs.toFixed(1)} ms`
    out.push(
      `| ${r.name} | ${r.wallMs.toFixed(1)} | ${over} | ${r.ratio.toFixed(2)} | ${ms(r.requireMs, 2)} | ${ms(r.firstIdMs, 3)} |`,
    )
  }
  return out
}

module.exports = { timeToFirstId, table }

if (require.main === module) {
  const rounds = Number(process.argv[2] ?? 20)
  const { rows, sink } = timeToFirstId(rounds)
  process.stdout.write(table(rows, rounds).join('\n') + `\n\n(xor of the first ids: ${sink})\n`)
}
