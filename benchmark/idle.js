'use strict'

// An idle process: what a process with a host lease spends while it makes no ids, beside one with leases off. Each
// process takes one id, waits a second (its marks reach 100 ms past the clock, so its lease thread works for that
// long), then idles for `seconds` more, and reports over that idle time: its CPU time (user + system), and how often
// its `snowid-lease` thread woke (voluntary context switches, from /proc; Linux only).
//   node benchmark/idle.js [seconds]

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { leaseEnv } = require('../scripts/lease-dir.js')

const ROOT = path.resolve(__dirname, '..')

const IDLE = `const fs = require('node:fs')
const seconds = Number(process.argv[1])
const id = require(${JSON.stringify(ROOT)}).nextId()
/** The voluntary context switches of the thread named snowid-lease, or null when there is none. */
function wakes() {
  for (const tid of fs.readdirSync('/proc/self/task')) {
    if (fs.readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim() !== 'snowid-lease') continue
    return Number(/voluntary_ctxt_switches:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/task/' + tid + '/status', 'utf8'))[1])
  }
  return null
}
setTimeout(() => {
  const cpu = process.cpuUsage()
  const w = wakes()
  setTimeout(() => {
    const used = process.cpuUsage(cpu)
    const w2 = wakes()
    process.stdout.write(JSON.stringify({ id: String(id), cpuMs: (used.user + used.system) / 1000, wakes: w === null ? null : w2 - w }))
  }, seconds * 1000)
}, 1000)`

/** Each command's figures over `seconds` of idle time. */
function idle(seconds) {
  const leaseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-bench-'))
  try {
    const list = [
      { name: 'host lease (default)', env: leaseEnv(leaseDir) },
      { name: 'SNOWID_LEASE=off', env: { SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '0' } },
    ]
    return list.map(c => {
      const out = spawnSync(process.execPath, ['-e', IDLE, String(seconds)], {
        env: { ...process.env, ...c.env },
        encoding: 'utf8',
        timeout: (seconds + 30) * 1000,
      })
      if (out.status !== 0) throw new Error(`${c.name}: exited ${out.status}: ${out.stderr}`)
      const r = JSON.parse(out.stdout)
      return { name: c.name, seconds, cpuMs: r.cpuMs, wakesPerSec: r.wakes === null ? null : r.wakes / seconds }
    })
  } finally {
    fs.rmSync(leaseDir, { recursive: true, force: true })
  }
}

/** The markdown table of `idle`'s rows. */
function table(rows) {
  const out = ['', `### An idle process (${rows[0].seconds} s after its first id and a second more)`, '']
  out.push('| process | CPU ms | lease thread wake-ups per second |', '|---|---|---|')
  for (const r of rows) {
    out.push(
      `| ${r.name} | ${r.cpuMs.toFixed(1)} | ${r.wakesPerSec === null ? 'no lease thread' : r.wakesPerSec.toFixed(1)} |`,
    )
  }
  return out
}

module.exports = { idle, table }

if (require.main === module) {
  process.stdout.write(table(idle(Number(process.argv[2] ?? 5))).join('\n') + '\n')
}
