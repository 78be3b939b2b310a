'use strict'

// npm run bench:instr [-- --rounds N] [--cases 'nextId(),N-API floor()']: instructions per call of snowid's hot calls and of the article's algorithm,
// counted by valgrind's callgrind. Counts are repeatable on a noisy machine, unlike times, so they are the regression
// gate: the script exits 1 when a call with a budget costs more than it in every round (3 by default). One round in
// a few can count about twice as much for `decode(id)`: V8 drops its optimized code at a moment that depends on the
// collector ("code dependencies"), and runs the rest unoptimized. So the gate reads the lowest count of the rounds.
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
// The highest count of each call in MEASURED_ROUNDS rounds of this tree (a doubled count aside), on the machine
// docs/performance.md names. Its budget is that plus MARGIN: the spread between runs of one tree (up to 31
// instructions, 5% of a count, in those rounds) stays inside it, and a change that costs more fails the gate.
// decode(id) keeps an earlier run's 684: its highest count in the last run (833) was a round run partly unoptimized
// (docs/performance.md, Instruction counts). nextIds(1)'s is from a run of its own, beside the tree of 2026-11-27
// (768 per call there, 766 here).
const MEASURED = { 'nextId()': 428, 'nextIdString()': 607, 'decode(id)': 684, 'nextIds(1)': 774, 'nextIds(2)': 786 }
const MEASURED_ROUNDS = 3
const MARGIN = 0.05
const BUDGET = Object.fromEntries(Object.entries(MEASURED).map(([k, v]) => [k, Math.ceil(v * (1 + MARGIN))]))
const CASES = [
  'N-API floor()',
  'nextId()',
  'nextIdString()',
  'gen.nextId()',
  'decode(id)',
  'nextIds(1)',
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

function parseRounds(argv) {
  const i = argv.indexOf('--rounds')
  const rounds = i < 0 ? 3 : Number(argv[i + 1])
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds: expected a positive integer')
  return rounds
}

/** The cases `--cases` names (comma-separated), or all of them. */
function parseCases(argv) {
  const i = argv.indexOf('--cases')
  if (i < 0) return CASES
  const names = String(argv[i + 1]).split(',')
  const unknown = names.filter(n => !CASES.includes(n))
  if (unknown.length) throw new Error(`--cases: unknown ${unknown.join(', ')}; expected some of ${CASES.join(', ')}`)
  return names
}

function main() {
  if (!hasValgrind()) {
    console.log('valgrind is not installed: skipping instruction counts (apt-get install valgrind)')
    return
  }
  const rounds = parseRounds(process.argv.slice(2))
  const rows = parseCases(process.argv.slice(2)).map(name => ({ name, counts: [] }))
  for (let r = 0; r < rounds; r++) {
    for (const row of rows) {
      process.stderr.write(`round ${r + 1}/${rounds}: ${row.name}...\n`)
      row.counts.push((instructions(row.name, N) - instructions(row.name, 0)) / N)
    }
  }
  const median = counts => [...counts].sort((a, b) => a - b)[counts.length >> 1]
  const base = name => {
    const row = rows.find(r => r.name === name)
    return row ? median(row.counts) : null
  }
  const [article, floor] = [base('article nextId()'), base('N-API floor()')]
  const times = (v, of) => (of === null ? '–' : `${(v / of).toFixed(2)}×`)
  console.log(
    `Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}; below the cap (22-bit sequence); N = ${N.toLocaleString('en-US')}; ${rounds} round${rounds > 1 ? 's' : ''}`,
  )
  console.log('')
  console.log(
    `| call | instructions per call (median) | lowest–highest | vs the article nextId() | vs the N-API floor | budget (highest of ${MEASURED_ROUNDS} rounds + ${MARGIN * 100}%), for the lowest |`,
  )
  console.log('|---|---|---|---|---|---|')
  let failed = false
  for (const r of rows) {
    const budget = BUDGET[r.name]
    const low = Math.min(...r.counts)
    const verdict = budget === undefined ? '' : low <= budget ? `≤ ${budget}: ok` : `≤ ${budget}: **over**`
    if (budget !== undefined && low > budget) failed = true
    console.log(
      `| ${r.name} | ${median(r.counts).toFixed(0)} | ${low.toFixed(0)}–${Math.max(...r.counts).toFixed(0)} | ${times(median(r.counts), article)} | ${times(median(r.counts), floor)} | ${verdict} |`,
    )
  }
  if (failed) process.exitCode = 1
}

main()
