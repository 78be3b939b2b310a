'use strict'

// npm run bench:instr: instructions per call of snowid's hot calls and of the article's algorithm, counted by
// valgrind's callgrind. Counts are repeatable on a noisy machine, unlike times, so they are the regression gate:
// the script exits 1 when a call with a budget costs more than it.
//
// Each case runs twice under callgrind, with the same warm-up and N = 0 and N = 500,000 further calls; the
// difference divided by N is the cost of one call, including the JS loop around it and V8's call into the addon.
// Node runs with --single-threaded so that V8 compiles on the main thread and every run tiers up the same way.

const { execFileSync, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { leaseEnv } = require('../scripts/lease-dir.js')

const N = 500_000
// What is reached today, with a margin for the spread between runs of one tree (up to about 20 instructions): a
// change that costs more fails the gate.
const BUDGET = { 'nextId()': 500, 'nextIdString()': 680, 'decode(id)': 690, 'nextIds(2)': 850 }
const CASES = [
  'nextId()',
  'nextIdString()',
  'gen.nextId()',
  'decode(id)',
  'nextIds(2)',
  'article nextId()',
  'article nextId().toString()',
]

function hasValgrind() {
  return spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).status === 0
}

function instructions(name, n) {
  // The callgrind output and the run's lease directory, in one folder removed afterwards.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-cg-'))
  const out = path.join(dir, 'callgrind.out')
  try {
    return countIn(out, path.join(dir, 'leases'), name, n)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

function countIn(out, leaseDir, name, n) {
  execFileSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--single-threaded',
      path.join(__dirname, 'instr-case.js'),
      name,
      String(n),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 << 20, env: { ...process.env, ...leaseEnv(leaseDir) } },
  )
  const totals = fs.readFileSync(out, 'utf8').match(/^(?:summary|totals): (\d+)/m)
  if (!totals) throw new Error(`no totals in ${out}`)
  return Number(totals[1])
}

function main() {
  if (!hasValgrind()) {
    console.log('valgrind is not installed: skipping instruction counts (apt-get install valgrind)')
    return
  }
  const rows = []
  for (const name of CASES) {
    process.stderr.write(`${name}...\n`)
    const perCall = (instructions(name, N) - instructions(name, 0)) / N
    rows.push({ name, perCall })
  }
  const article = rows.find(r => r.name === 'article nextId()').perCall
  console.log(
    `Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}; below the cap (22-bit sequence); N = ${N.toLocaleString('en-US')}`,
  )
  console.log('')
  console.log('| call | instructions per call | vs the article nextId() | budget |')
  console.log('|---|---|---|---|')
  let failed = false
  for (const r of rows) {
    const budget = BUDGET[r.name]
    const verdict = budget === undefined ? '' : r.perCall <= budget ? `≤ ${budget}: ok` : `≤ ${budget}: **over**`
    if (budget !== undefined && r.perCall > budget) failed = true
    console.log(`| ${r.name} | ${r.perCall.toFixed(0)} | ${(r.perCall / article).toFixed(2)}× | ${verdict} |`)
  }
  if (failed) process.exitCode = 1
}

main()
