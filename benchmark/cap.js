'use strict'

// At the rate cap: what a process that asks for ids faster than 4,096 per ms costs, and what several such processes
// on this machine's cores each get. Each process calls `nextId()` in a tight loop for the same span of wall time,
// from a common start, with a worker id of its own (host leases in a directory of this run's), and prints its ids,
// its CPU time (`process.cpuUsage`, user and system) and its wall time. Printed per case, as medians over the
// rounds: ids/s per process (and its share of the cap, 4.096M ids/s with the default layout), CPU ns per id, and
// the share of a core each process used.
//
//   node benchmark/cap.js [--rounds 5] [--seconds 2] [--procs 1,4] [--root DIR]...
//
// `--root` (repeatable) names a snowid tree to load instead of this one, so two builds compare in one run: the
// rounds alternate between the trees. A benchmark, not a test: it asserts nothing.

const os = require('node:os')
const path = require('node:path')
const { median, runChild } = require('./child.js')

const CAP = 4_096_000

const CHILD = `const snowid = require(process.env.CAP_ROOT)
let sink = snowid.nextId()
const wait = Number(process.env.CAP_START) - Date.now()
if (wait > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait)
const end = process.hrtime.bigint() + BigInt(Math.round(Number(process.env.CAP_SECONDS) * 1e9))
const c0 = process.cpuUsage()
const t0 = process.hrtime.bigint()
let ids = 0
let t1
do {
  for (let k = 0; k < 4096; k++) sink ^= snowid.nextId()
  ids += 4096
  t1 = process.hrtime.bigint()
} while (t1 < end)
const c = process.cpuUsage(c0)
process.stdout.write(JSON.stringify({ ids, wallNs: Number(t1 - t0), cpuNs: (c.user + c.system) * 1000, sink: String(sink) }))`

function args(argv) {
  const out = { rounds: 5, seconds: 2, procs: [1, 4], roots: [] }
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]]
    if (k === '--rounds') out.rounds = Number(v)
    else if (k === '--seconds') out.seconds = Number(v)
    else if (k === '--procs') out.procs = v.split(',').map(Number)
    else if (k === '--root') out.roots.push(path.resolve(v))
    else throw new Error(`unknown argument ${k}`)
  }
  if (out.roots.length === 0) out.roots.push(path.resolve(__dirname, '..'))
  return out
}

/** Runs `n` processes over `root` from a common start; resolves to their results. */
function round(root, n, seconds, env) {
  const start = Date.now() + 400 + 60 * n
  const one = () => runChild(CHILD, { ...env, CAP_ROOT: root, CAP_START: String(start), CAP_SECONDS: String(seconds) })
  return Promise.all(Array.from({ length: n }, one))
}

async function main() {
  const opt = args(process.argv.slice(2))
  const { tempLeaseDir, leaseEnv } = require('../scripts/lease-dir.js')
  const env = leaseEnv(tempLeaseDir('snowid-cap-'))
  const model = os.cpus()[0]?.model ?? 'unknown CPU'
  process.stdout.write(
    `Machine: ${model}, ${os.cpus().length} cores; ${os.type()} ${os.release()} ${os.arch()}; Node ${process.version}\n` +
      `Command: node benchmark/cap.js ${process.argv.slice(2).join(' ')}\n` +
      `Each figure: median over ${opt.rounds} rounds of ${opt.seconds} s (per process: the median of every process of every round).\n\n` +
      '| tree | processes | ids/s per process | of the cap | CPU ns/id | cores per process |\n|---|---|---|---|---|---|\n',
  )
  const results = new Map()
  for (let r = 0; r < opt.rounds; r++) {
    for (const n of opt.procs) {
      for (let t = 0; t < opt.roots.length; t++) {
        // Alternate the trees' order each round, so neither always runs first.
        const root = opt.roots[(t + r) % opt.roots.length]
        const key = `${root}\u0000${n}`
        const list = results.get(key) ?? []
        list.push(...(await round(root, n, opt.seconds, env)))
        results.set(key, list)
      }
    }
  }
  for (const n of opt.procs) {
    for (const root of opt.roots) {
      const list = results.get(`${root}\u0000${n}`)
      const rate = median(list.map(x => (x.ids / x.wallNs) * 1e9))
      const cpu = median(list.map(x => x.cpuNs / x.ids))
      const cores = median(list.map(x => x.cpuNs / x.wallNs))
      process.stdout.write(
        `| ${root} | ${n} | ${(rate / 1e6).toFixed(2)}M | ${((rate / CAP) * 100).toFixed(1)}% | ${cpu.toFixed(1)} | ${cores.toFixed(2)} |\n`,
      )
    }
  }
}

main().catch(err => {
  process.stderr.write(`${err.stack}\n`)
  process.exit(1)
})
