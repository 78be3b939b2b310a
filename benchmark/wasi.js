'use strict'

// The WASI build's `nextId()` and `nextIdString()` against the native ones: CPU ns per id (`process.cpuUsage`, user
// and system) below the cap (a 22-bit sequence, so no call waits), each case in its own process, the median of
// `--rounds` processes, each the median of 5 runs of 1M calls after a warm-up. Needs `npm run build:wasm` first.
//
//   node benchmark/wasi.js [--rounds 3] [--root DIR]...
//
// `--root` (repeatable) names a snowid tree to load instead of this one, so two builds compare in one run. A
// benchmark, not a test: it asserts nothing.

const { spawnSync } = require('node:child_process')
const os = require('node:os')
const path = require('node:path')
const { median } = require('./child.js')

const CHILD = `const s = require(process.env.W_ROOT)
s.configure({ datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 22 })
const f = s[process.env.W_FN]
let sink = 0
const fold = v => (typeof v === 'string' ? v.charCodeAt(v.length - 1) : Number(v & 0xffn))
for (let i = 0; i < 200000; i++) sink ^= fold(f())
const runs = []
for (let r = 0; r < 5; r++) {
  const c0 = process.cpuUsage()
  for (let i = 0; i < 1e6; i++) sink ^= fold(f())
  const c = process.cpuUsage(c0)
  runs.push((c.user + c.system) / 1000)
}
runs.sort((a, b) => a - b)
process.stdout.write(JSON.stringify({ ns: runs[2], sink }))`

const BUILDS = {
  native: {},
  WASI: { NAPI_RS_FORCE_WASI: 'error', NODE_OPTIONS: '--disable-warning=ExperimentalWarning' },
}

function main() {
  const argv = process.argv.slice(2)
  let rounds = 3
  const roots = []
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--rounds') rounds = Number(argv[i + 1])
    else if (argv[i] === '--root') roots.push(path.resolve(argv[i + 1]))
    else throw new Error(`unknown argument ${argv[i]}`)
  }
  if (roots.length === 0) roots.push(path.resolve(__dirname, '..'))
  const cases = []
  for (const root of roots) {
    for (const fn of ['nextId', 'nextIdString']) {
      for (const build of Object.keys(BUILDS)) cases.push({ root, fn, build, ns: [] })
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const env = {
        ...process.env,
        ...BUILDS[c.build],
        SNOWID_LEASE: 'off',
        SNOWID_WORKER_ID: '0',
        W_ROOT: c.root,
        W_FN: c.fn,
      }
      const out = spawnSync(process.execPath, ['-e', CHILD], { env, encoding: 'utf8', timeout: 120_000 })
      if (out.status !== 0) throw new Error(`${c.build} ${c.fn} (${c.root}): exited ${out.status}: ${out.stderr}`)
      c.ns.push(JSON.parse(out.stdout).ns)
    }
  }
  process.stdout.write(
    `Machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores; Node ${process.version}\n` +
      `Command: node benchmark/wasi.js ${argv.join(' ')}\n\n` +
      '| tree | call | native CPU ns/id | WASI CPU ns/id | WASI × native |\n|---|---|---|---|---|\n',
  )
  for (const root of roots) {
    for (const fn of ['nextId', 'nextIdString']) {
      const [native, wasi] = ['native', 'WASI'].map(b =>
        median(cases.find(c => c.root === root && c.fn === fn && c.build === b).ns),
      )
      process.stdout.write(
        `| ${root} | ${fn}() | ${native.toFixed(1)} | ${wasi.toFixed(1)} | ${(wasi / native).toFixed(2)}× |\n`,
      )
    }
  }
}

main()
