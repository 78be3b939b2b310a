'use strict'

// Threads below the cap: `worker_threads` of one process that share the process-wide generator of a layout with a
// sequence wider than the default 12 bits (so the cap, 2^bits ids per ms, is far above what the threads ask for).
// Each process configures the layout, starts its threads, lets each warm up, then starts them together; the figure
// is all their ids over the time from the start to the last one's end. Printed per case, as medians over the
// rounds: ids/s, and that figure against one thread of the same tree.
//
//   node benchmark/threads.js [--rounds 5] [--ids 2000000] [--threads 1,2,3,4] [--bits 16,22] [--root DIR]...
//
// `--root` (repeatable) names a snowid tree to load instead of this one, so two builds compare in one run: the
// rounds alternate between the trees. A benchmark, not a test: it asserts nothing.

const os = require('node:os')
const path = require('node:path')
const { median, runChild } = require('./child.js')

const CHILD = `const { Worker } = require('node:worker_threads')
const root = process.env.THREADS_ROOT
const threads = Number(process.env.THREADS_N)
const n = Number(process.env.THREADS_IDS)
const snowid = require(root)
snowid.configure({ datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: Number(process.env.THREADS_BITS) })
const WORKER = \`const { parentPort, workerData } = require('node:worker_threads')
const { nextId } = require(workerData.root)
let sink = 0
for (let i = 0; i < 100000; i++) sink ^= Number(nextId() & 1n)
parentPort.postMessage({ ready: true })
Atomics.wait(workerData.go, 0, 0)
let last = 0n
for (let i = 0; i < workerData.n; i++) last = nextId()
parentPort.postMessage({ sink: sink ^ Number(last & 0xffffn) })\`
const go = new Int32Array(new SharedArrayBuffer(4))
const ready = []
const done = []
for (let t = 0; t < threads; t++) {
  const w = new Worker(WORKER, { eval: true, workerData: { root, n, go } })
  ready.push(new Promise(resolve => w.once('message', resolve)))
  done.push(new Promise((resolve, reject) => {
    w.once('error', reject)
    w.on('message', m => m.sink !== undefined && resolve(m))
  }))
}
Promise.all(ready).then(async () => {
  const t0 = process.hrtime.bigint()
  Atomics.store(go, 0, 1)
  Atomics.notify(go, 0)
  const results = await Promise.all(done)
  const ns = Number(process.hrtime.bigint() - t0)
  process.stdout.write(JSON.stringify({ ids: threads * n, ns, sink: results.reduce((x, r) => x ^ r.sink, 0) }))
})`

function args(argv) {
  const out = { rounds: 5, ids: 2_000_000, threads: [1, 2, 3, 4], bits: [16, 22], roots: [] }
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]]
    if (k === '--rounds') out.rounds = Number(v)
    else if (k === '--ids') out.ids = Number(v)
    else if (k === '--threads') out.threads = v.split(',').map(Number)
    else if (k === '--bits') out.bits = v.split(',').map(Number)
    else if (k === '--root') out.roots.push(path.resolve(v))
    else throw new Error(`unknown argument ${k}`)
  }
  if (out.roots.length === 0) out.roots.push(path.resolve(__dirname, '..'))
  return out
}

/** One process over `root`: `threads` threads of `ids` ids each, on a layout of `bits` sequence bits. */
function round(root, bits, threads, ids, env) {
  return runChild(CHILD, {
    ...env,
    THREADS_ROOT: root,
    THREADS_BITS: String(bits),
    THREADS_N: String(threads),
    THREADS_IDS: String(ids),
  })
}

async function main() {
  const opt = args(process.argv.slice(2))
  const { tempLeaseDir, leaseEnv } = require('../scripts/lease-dir.js')
  const env = leaseEnv(tempLeaseDir('snowid-threads-'))
  const model = os.cpus()[0]?.model ?? 'unknown CPU'
  process.stdout.write(
    `Machine: ${model}, ${os.cpus().length} cores; ${os.type()} ${os.release()} ${os.arch()}; Node ${process.version}; ` +
      `load average ${os.loadavg()[0].toFixed(1)}\n` +
      `Command: node benchmark/threads.js ${process.argv.slice(2).join(' ')}\n` +
      `Each figure: median over ${opt.rounds} rounds (a process each) of ${opt.ids.toLocaleString('en')} ids per thread.\n\n` +
      '| tree | sequence bits | threads | ids/s | against 1 thread |\n|---|---|---|---|---|\n',
  )
  const results = new Map()
  for (let r = 0; r < opt.rounds; r++) {
    for (const bits of opt.bits) {
      for (const n of opt.threads) {
        for (let t = 0; t < opt.roots.length; t++) {
          // Alternate the trees' order each round, so neither always runs first.
          const root = opt.roots[(t + r) % opt.roots.length]
          const key = `${root}\u0000${bits}\u0000${n}`
          const x = await round(root, bits, n, opt.ids, env)
          results.set(key, [...(results.get(key) ?? []), (x.ids / x.ns) * 1e9])
        }
      }
    }
  }
  for (const bits of opt.bits) {
    for (const root of opt.roots) {
      const one = median(results.get(`${root}\u0000${bits}\u00001`) ?? [Number.NaN])
      for (const n of opt.threads) {
        const rate = median(results.get(`${root}\u0000${bits}\u0000${n}`))
        process.stdout.write(
          `| ${root} | ${bits} | ${n} | ${(rate / 1e6).toFixed(2)}M | ${(rate / one).toFixed(2)}× |\n`,
        )
      }
    }
  }
  process.stdout.write(`\nLoad average at the end: ${os.loadavg()[0].toFixed(1)}\n`)
}

main().catch(err => {
  process.stderr.write(`${err.stack}\n`)
  process.exit(1)
})
