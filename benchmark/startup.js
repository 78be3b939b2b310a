'use strict'

// Time to first id: how long a new process takes from start to its first id, beside `node -e 0`, as the median of
// `rounds` starts of each command (the commands rotate every round). Each first id is printed by its process and
// read here, so the work is never skipped. Also, inside the process (read off `process.hrtime`), how long
// `require('snowid')` took and how long the first `nextId()` took after it: the lease is taken by that call; the CPU
// time (`process.cpuUsage()`, user and system, which a shared machine moves less than the wall time) of the two
// together; and the process's CPU time, read as its last act. @sapphire/snowflake's `require` and first `generate()`
// run in the same rotation, for the CPU ratio.
//
//   node benchmark/startup.js [rounds] [--root DIR]...
//
// `--root` adds a row for another snowid tree (SNOWID_LEASE=off), so two builds compare in one run.

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { median } = require('./child.js')

const { leaseEnv } = require('../scripts/lease-dir.js')

const ROOT = path.resolve(__dirname, '..')

// Every command prints `<CPU ms of require and first id> <id> <require ms> <first id ms> <CPU ms of the process>` (0
// and `-` where it has no id).
const CPU = `const c = process.cpuUsage()
process.stdout.write(' ' + (c.user + c.system) / 1000)`
const CPU_SPAN = `const c1 = process.cpuUsage(c0)
process.stdout.write((c1.user + c1.system) / 1000 + ' ')`

const firstId = root => `const c0 = process.cpuUsage()
const t0 = process.hrtime.bigint()
const snowid = require(${JSON.stringify(root)})
const t1 = process.hrtime.bigint()
const id = snowid.nextId()
const t2 = process.hrtime.bigint()
${CPU_SPAN}
process.stdout.write(id + ' ' + Number(t1 - t0) / 1e6 + ' ' + Number(t2 - t1) / 1e6)
${CPU}`

const SAPPHIRE = `const c0 = process.cpuUsage()
const t0 = process.hrtime.bigint()
const { Snowflake } = require('@sapphire/snowflake')
const t1 = process.hrtime.bigint()
const id = new Snowflake(1420070400000n).generate()
const t2 = process.hrtime.bigint()
${CPU_SPAN}
process.stdout.write(id + ' ' + Number(t1 - t0) / 1e6 + ' ' + Number(t2 - t1) / 1e6)
${CPU}`

const SAPPHIRE_ROW = '@sapphire/snowflake: require, first generate()'

function commands(leaseDir, roots = []) {
  const lease = leaseEnv(leaseDir)
  const FIRST_ID = firstId(ROOT)
  const list = [
    { name: 'node -e 0', argv: ['-e', `process.stdout.write('0 - 0 0'); ${CPU}`], env: {} },
    { name: 'first nextId(), host lease (default)', argv: ['-e', FIRST_ID], env: lease },
    {
      name: 'first nextId(), host lease, SNOWID_MAX_LEAD_MS=500',
      argv: ['-e', FIRST_ID],
      env: { ...lease, SNOWID_MAX_LEAD_MS: '500' },
    },
    { name: 'first nextId(), SNOWID_LEASE=off', argv: ['-e', FIRST_ID], env: { SNOWID_LEASE: 'off' } },
    { name: SAPPHIRE_ROW, argv: ['-e', SAPPHIRE], env: {} },
  ]
  for (const root of roots) {
    list.push({
      name: `first nextId(), SNOWID_LEASE=off, ${root}`,
      argv: ['-e', firstId(root)],
      env: { SNOWID_LEASE: 'off' },
    })
  }
  return list
}

/** Runs every command `rounds` times and returns { rows, sink }: per command the median wall and in-process ms. */
function timeToFirstId(rounds, roots = []) {
  const leaseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-bench-'))
  try {
    const list = commands(leaseDir, roots)
    const wall = list.map(() => [])
    const loads = list.map(() => [])
    const firsts = list.map(() => [])
    const cpus = list.map(() => [])
    const spans = list.map(() => [])
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
        const [span, id, load, first, cpu] = out.stdout.trim().split(' ')
        cpus[i].push(Number(cpu))
        spans[i].push(Number(span))
        if (id !== '-') {
          sink ^= BigInt(id)
          loads[i].push(Number(load))
          firsts[i].push(Number(first))
        }
      }
    }
    const base = median(wall[0])
    const baseCpu = median(cpus[0])
    const rows = list.map((c, i) => ({
      name: c.name,
      wallMs: median(wall[i]),
      overNodeMs: median(wall[i]) - base,
      ratio: median(wall[i]) / base,
      requireMs: loads[i].length ? median(loads[i]) : null,
      firstIdMs: firsts[i].length ? median(firsts[i]) : null,
      cpuMs: median(cpus[i]),
      spanCpuMs: median(spans[i]),
      cpuOverNodeMs: median(cpus[i]) - baseCpu,
    }))
    return { rows, sink }
  } finally {
    fs.rmSync(leaseDir, { recursive: true, force: true })
  }
}

/** The markdown table of `timeToFirstId`'s rows. */
function table(rows, rounds) {
  const out = ['', `### Time to first id (median of ${rounds} process starts each)`, '']
  out.push(
    '| command | wall ms | over `node -e 0` | × `node -e 0` | `require` | first `nextId()` after it | CPU of both | process CPU ms | over `node -e 0` |',
  )
  out.push('|---|---|---|---|---|---|---|---|---|')
  const ms = (v, digits) => (v === null ? '–' : `${v.toFixed(digits)} ms`)
  for (const r of rows) {
    const over = `${r.overNodeMs >= 0 ? '+' : ''}${r.overNodeMs.toFixed(1)} ms`
    out.push(
      `| ${r.name} | ${r.wallMs.toFixed(1)} | ${over} | ${r.ratio.toFixed(2)} | ${ms(r.requireMs, 2)} | ${ms(r.firstIdMs, 3)} | ${ms(r.spanCpuMs || null, 2)} | ${r.cpuMs.toFixed(1)} | ${r.cpuOverNodeMs >= 0 ? '+' : ''}${r.cpuOverNodeMs.toFixed(1)} ms |`,
    )
  }
  return out
}

/** The CPU time of `require('snowid')` and its first id (no lease), as a multiple of @sapphire/snowflake's `require`
 * and first id, from `timeToFirstId`'s rows: measured in the process, and as the process's CPU time over
 * `node -e 0`. */
function cpuVsSapphire(rows) {
  const snowid = rows.find(r => r.name === 'first nextId(), SNOWID_LEASE=off')
  const sapphire = rows.find(r => r.name === SAPPHIRE_ROW)
  return { span: snowid.spanCpuMs / sapphire.spanCpuMs, process: snowid.cpuOverNodeMs / sapphire.cpuOverNodeMs }
}

/** The line that states `cpuVsSapphire`. */
function vsSapphire(rows) {
  const r = cpuVsSapphire(rows)
  return (
    `require + first id, snowid (SNOWID_LEASE=off) against @sapphire/snowflake, in CPU time: ${r.span.toFixed(2)}× ` +
    `measured in the process, ${r.process.toFixed(2)}× as the process's CPU over \`node -e 0\``
  )
}

module.exports = { timeToFirstId, table, cpuVsSapphire, vsSapphire }

if (require.main === module) {
  const args = process.argv.slice(2)
  const roots = []
  for (let i = args.indexOf('--root'); i !== -1; i = args.indexOf('--root'))
    roots.push(path.resolve(args.splice(i, 2)[1]))
  const rounds = Number(args[0] ?? 20)
  const { rows, sink } = timeToFirstId(rounds, roots)
  const machine = `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores; Node ${process.version}`
  process.stdout.write(
    `${machine}\n${table(rows, rounds).join('\n')}\n\n${vsSapphire(rows)}\n(xor of the first ids: ${sink})\n`,
  )
}
