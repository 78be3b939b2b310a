'use strict'

// npm run bench [-- --rounds N] [--json FILE] [--filter TEXT] [--starts N]
//
// Checks every generator's output first (duplicates in 1M ids, increasing, duplicates between 2 worker_threads with
// the same configuration), then times each case in its own process for several rounds, rotating the order of the
// cases every round, and prints markdown tables of medians with min and max. Then times the first id of new
// processes beside `node -e 0` (benchmark/startup.js), `--starts` times each (20 by default).

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { cases } = require('./cases.js')
const idle = require('./idle.js')
const startup = require('./startup.js')

const CAP = 4_096_000

function parseArgs(argv) {
  const args = { rounds: 5, json: null, filter: null, starts: 20 }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--rounds') args.rounds = Number(argv[++i])
    else if (a === '--json')
      args.json = argv[i + 1] && !argv[i + 1].startsWith('--') ? argv[++i] : 'benchmark/results.json'
    else if (a === '--filter') args.filter = argv[++i]
    else if (a === '--starts') args.starts = Number(argv[++i])
    else throw new Error(`unknown argument ${a}`)
  }
  if (!Number.isInteger(args.rounds) || args.rounds < 1) throw new Error('--rounds: expected a positive integer')
  if (!Number.isInteger(args.starts) || args.starts < 1) throw new Error('--starts: expected a positive integer')
  return args
}

function runCase(mode, id, env = {}) {
  const args = [path.join(__dirname, 'case.js'), mode]
  if (id !== undefined) args.push(String(id))
  const out = execFileSync(process.execPath, args, {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    timeout: 300_000,
    env: { ...process.env, ...env },
  })
  return JSON.parse(out.trim().split('\n').pop())
}

/** Runs a case, or gives `{ error }` when its process fails (a peer or build that cannot run here). */
function tryCase(mode, c) {
  try {
    return runCase(mode, c.id, c.env)
  } catch (e) {
    const why =
      String(e.stderr || e.message)
        .trim()
        .split('\n')
        .find(l => /Error/.test(l)) ?? 'failed'
    return { error: why.slice(0, 200) }
  }
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
  return { median, min: sorted[0], max: sorted[sorted.length - 1] }
}

function fmtRate(v) {
  return v >= 1e8 ? `${(v / 1e6).toFixed(0)}M` : `${(v / 1e6).toFixed(2)}M`
}

function machine() {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    napi: process.versions.napi,
    date: new Date().toISOString(),
  }
}

function main() {
  const args = parseArgs(process.argv.slice(2))
  const selected = cases.filter(c => !args.filter || `${c.regime} ${c.name}`.includes(args.filter))
  const m = machine()
  process.stderr.write(`checking ${selected.length} cases...\n`)
  const results = selected.map(c => ({ case: c, check: tryCase('check', c), rounds: [] }))
  let threads = null
  const includeThreads = !args.filter || 'cap snowid nextId() in 2 worker_threads'.includes(args.filter)
  const threadRounds = []
  const scalingRounds = []
  for (let r = 0; r < args.rounds; r++) {
    process.stderr.write(`round ${r + 1}/${args.rounds}\n`)
    const order = results.map((_, i) => results[(i + r) % results.length])
    for (const res of order) if (!res.check.error) res.rounds.push(tryCase('time', res.case))
    if (includeThreads) {
      threadRounds.push(runCase('threads'))
      scalingRounds.push({ one: runCase('scaling', 1), two: runCase('scaling', 2) })
    }
  }
  const memory = includeThreads ? runCase('instances', 1) : null
  const memory32 = includeThreads ? runCase('instances', 32) : null
  if (includeThreads) {
    threads = {
      rate: stats(threadRounds.map(t => t.idsPerSec)),
      duplicates: threadRounds.reduce((n, t) => n + t.duplicates, 0),
      ids: threadRounds.reduce((n, t) => n + t.ids, 0),
    }
  }

  const rows = results.map(res => {
    const ok = res.rounds.filter(x => !x.error)
    const error = res.check.error ?? res.rounds.find(x => x.error)?.error ?? null
    const rate = ok.length ? stats(ok.map(x => x.idsPerSec)) : { median: NaN, min: NaN, max: NaN }
    const cpu = ok.length ? stats(ok.map(x => x.cpuNsPerId)) : { median: NaN, min: NaN, max: NaN }
    return { ...res, error, rate, cpu, nsPerId: 1e9 / rate.median, cpuNsPerId: cpu.median }
  })

  const out = []
  out.push(
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node} (N-API ${m.napi}); ${m.date}`,
  )
  out.push(
    `Command: npm run bench -- --rounds ${args.rounds}. Each figure: median of ${args.rounds} rounds, each in its own process (min–max in brackets).`,
  )
  const table = (title, regime, note) => {
    const mine = rows.filter(r => r.case.regime === regime)
    if (mine.length === 0) return
    out.push('', `### ${title}`, '')
    if (note) out.push(note, '')
    out.push('| generator | ids/s | ns/id | CPU ns/id | dups in 1M | increasing | dups across 2 threads |')
    out.push('|---|---|---|---|---|---|---|')
    for (const r of mine) {
      if (r.error) {
        out.push(`| ${r.case.name} | not run: ${r.error} | | | | | |`)
        continue
      }
      const inc = r.check.increasing === null ? 'n/a' : r.check.increasing ? 'yes' : '**no**'
      const dup = n => (n === null ? 'n/a' : n === 0 ? '0' : `**${n.toLocaleString('en-US')}**`)
      out.push(
        `| ${r.case.name} | ${fmtRate(r.rate.median)} (${fmtRate(r.rate.min)}–${fmtRate(r.rate.max)}) | ${r.nsPerId.toFixed(1)} | ${r.cpuNsPerId.toFixed(1)} | ${dup(r.check.duplicates)} | ${inc} | ${dup(r.check.threadDuplicates)} |`,
      )
    }
    if (regime === 'cap' && threads) {
      out.push(
        `| snowid nextId() in 2 worker_threads, together | ${fmtRate(threads.rate.median)} (${fmtRate(threads.rate.min)}–${fmtRate(threads.rate.max)}) | ${(1e9 / threads.rate.median).toFixed(1)} | – | ${threads.duplicates} in ${threads.ids.toLocaleString('en-US')} | – | – |`,
      )
    }
  }
  table(
    'At the cap: default layout (4,096 ids per ms per generator, 4.096M ids/s)',
    'cap',
    'A correct generator cannot pass 4.096M ids/s here. A faster figure comes with duplicates.',
  )
  table(
    'Reference: not snowflakes',
    'ref',
    'uuid v7 is 128-bit; hyperid and randomUUID are not time-sorted. Listed for their cost, not as peers.',
  )
  table('Below the cap: the cost of a call (22-bit sequence, so no generator waits)', 'below')
  table('Bulk: batches of 4,096 ids (maxLeadMs 60000, so no batch waits)', 'bulk')
  const calls = rows.filter(r => r.case.regime === 'call')
  if (calls.length) {
    out.push('', '### Reading ids and making generators: the cost of one call', '')
    out.push('| call | calls/s | ns/call | CPU ns/call |', '|---|---|---|---|')
    for (const r of calls) {
      out.push(
        r.error
          ? `| ${r.case.name} | not run: ${r.error} | | |`
          : `| ${r.case.name} | ${fmtRate(r.rate.median)} (${fmtRate(r.rate.min)}–${fmtRate(r.rate.max)}) | ${r.nsPerId.toFixed(1)} | ${r.cpuNsPerId.toFixed(1)} |`,
      )
    }
  }
  let scalingRatio = null
  if (scalingRounds.length) {
    const one = stats(scalingRounds.map(x => x.one.idsPerSec))
    const two = stats(scalingRounds.map(x => x.two.idsPerSec))
    scalingRatio = two.median / one.median
    out.push('', '### Threads below the cap: the shared default generator (22-bit sequence)', '')
    out.push(
      "Each thread warms up, then all start together; ids/s is all their ids over the time to the last one's end.",
      '',
    )
    out.push('| threads | ids/s together |', '|---|---|')
    out.push(`| 1 | ${fmtRate(one.median)} (${fmtRate(one.min)}–${fmtRate(one.max)}) |`)
    out.push(`| 2 | ${fmtRate(two.median)} (${fmtRate(two.min)}–${fmtRate(two.max)}) |`)
  }
  if (memory) {
    out.push(
      '',
      `1M \`new Snowflake()\` in one synchronous loop: RSS ${(memory.before / 2 ** 20).toFixed(0)} MiB before, ${(memory.rss / 2 ** 20).toFixed(0)} MiB after.`,
      `1M \`new Snowflake({ workerId: i % 32, lease: false })\` (32 configurations) in one synchronous loop: RSS ${(memory32.before / 2 ** 20).toFixed(0)} MiB before, ${(memory32.rss / 2 ** 20).toFixed(0)} MiB after.`,
    )
  }

  const find = (regime, name) => rows.find(r => r.case.regime === regime && r.case.name === name)
  const ratio = (a, b) => (a && b ? a.rate.median / b.rate.median : null)
  const targets = []
  const pct = r => (r ? `${((r.rate.median / CAP) * 100).toFixed(1)}% of 4.096M` : 'not run')
  const x = v => (v === null ? 'not run' : `${v.toFixed(2)}×`)
  targets.push(['at the cap: nextId() ≥ 99% of 4.096M ids/s', pct(find('cap', 'snowid nextId()'))])
  targets.push(['at the cap: nextIdString() ≥ 99% of 4.096M ids/s', pct(find('cap', 'snowid nextIdString()'))])
  targets.push([
    'below the cap: nextId() ≥ 2× the article (BigInt)',
    x(ratio(find('below', 'snowid nextId()'), find('below', 'article nextId() (BigInt, pure JS)'))),
  ])
  targets.push([
    'below the cap: nextIdString() ≥ 1.8× the article with .toString()',
    x(ratio(find('below', 'snowid nextIdString()'), find('below', 'article nextId().toString()'))),
  ])
  const inst = find('below', 'snowid gen.nextId()')
  const mod = find('below', 'snowid nextId()')
  targets.push([
    'below the cap: gen.nextId() within 1.3× of nextId() (time per call)',
    inst && mod ? `${(mod.rate.median / inst.rate.median).toFixed(2)}×` : 'not run',
  ])
  const per = (a, b) => (a && b && !a.error && !b.error ? a.rate.median / b.rate.median : null)
  const cost = (a, b) => (a && b && !a.error && !b.error ? b.rate.median / a.rate.median : null)
  targets.push([
    'below the cap: nextId() at most 1.2× the N-API floor (time per call)',
    x(cost(mod, find('below', 'N-API floor: one call, one clock read, one BigInt'))),
  ])
  targets.push(['decode(id) at most 2× nextId() (time per call)', x(cost(find('call', 'snowid decode(id)'), mod))])
  targets.push([
    'decode(id) faster than @sapphire/snowflake deconstruct(id)',
    x(per(find('call', 'snowid decode(id)'), find('call', '@sapphire/snowflake deconstruct(id)'))),
  ])
  const us = r => (r && !r.error ? `${(r.cpuNsPerId / 1000).toFixed(2)} µs` : 'not run')
  targets.push(['new Snowflake() at most 3 µs (CPU time)', us(find('call', 'snowid new Snowflake()'))])
  targets.push([
    'new Snowflake() of 32 configurations at most 3 µs (CPU time)',
    us(find('call', 'snowid new Snowflake({ workerId: i % 32, lease: false })')),
  ])
  targets.push([
    '1M new Snowflake() in a synchronous loop within 100 MiB RSS',
    memory ? `${(memory.rss / 2 ** 20).toFixed(0)} MiB` : 'not run',
  ])
  targets.push([
    '1M new Snowflake() of 32 configurations within 100 MiB RSS',
    memory32 ? `${(memory32.rss / 2 ** 20).toFixed(0)} MiB` : 'not run',
  ])
  // CPU time per id (or per call) of `a` over that of `b`, both from this run.
  const cpuRatio = (a, b) => (a && b && !a.error && !b.error ? a.cpuNsPerId / b.cpuNsPerId : null)
  for (const n of [1, 2, 4]) {
    targets.push([
      `nextIds(${n}) at most ${n} nextId() calls (CPU time per id)`,
      x(cpuRatio(find('below', `snowid nextIds(${n}), per id`), mod)),
    ])
  }
  for (const n of [1, 2, 4, 8]) {
    targets.push([
      `nextIdStrings(${n}) at most ${n} nextIdString() calls (CPU time per id)`,
      x(cpuRatio(find('below', `snowid nextIdStrings(${n}), per id`), find('below', 'snowid nextIdString()'))),
    ])
  }
  targets.push([
    "encode(id, 'hex') at most 1.2× the plain-JS hex (CPU time per call)",
    x(cpuRatio(find('call', "snowid encode(id, 'hex')"), find('call', "plain JS id.toString(16).padStart(16, '0')"))),
  ])
  targets.push([
    "parse(text, 'hex') at most 1.2× the plain-JS hex (CPU time per call)",
    x(cpuRatio(find('call', "snowid parse(text, 'hex')"), find('call', "plain JS BigInt('0x' + text)"))),
  ])
  targets.push(['nextIds(2) beats 2 nextId() calls (ids/s)', x(per(find('below', 'snowid nextIds(2), per id'), mod))])
  targets.push([
    'nextIdStrings(100) at least 1.5× 100 nextIdString() calls (ids/s)',
    x(per(find('below', 'snowid nextIdStrings(100), per id'), find('below', 'snowid nextIdString()'))),
  ])
  targets.push([
    '2 threads on the shared default generator below the cap: at least 0.9× one thread, together',
    x(scalingRatio),
  ])
  const bulk = find('bulk', 'snowid nextIds(4096)')
  targets.push(['bulk: nextIds(4096) ≥ 100M ids/s', bulk ? `${fmtRate(bulk.rate.median)} ids/s` : 'not run'])
  const bulkS = find('bulk', 'snowid nextIdStrings(4096)')
  targets.push(['bulk: nextIdStrings(4096) ≥ 10M ids/s', bulkS ? `${fmtRate(bulkS.rate.median)} ids/s` : 'not run'])
  targets.push([
    '2 worker_threads at the cap ≥ 95% of 4.096M, 0 duplicates',
    threads ? `${((threads.rate.median / CAP) * 100).toFixed(1)}%, ${threads.duplicates} duplicates` : 'not run',
  ])
  if (!args.filter || 'idle lease'.includes(args.filter)) {
    process.stderr.write('an idle process, with a lease and without...\n')
    const rows = idle.idle(5)
    out.push(...idle.table(rows))
    targets.push([
      'an idle process with a lease makes no periodic wake-ups (lease thread wake-ups per second)',
      rows[0].wakesPerSec === null ? 'no lease thread' : `${rows[0].wakesPerSec.toFixed(1)}/s`,
    ])
  }
  let first = null
  if (!args.filter || 'startup first id'.includes(args.filter)) {
    process.stderr.write(`time to first id: ${args.starts} starts of each command...\n`)
    first = startup.timeToFirstId(args.starts)
    out.push(...startup.table(first.rows, args.starts), '', `(xor of the first ids: ${first.sink})`)
    const lease = first.rows[1]
    targets.push([
      'startup: the first nextId() (host lease) returns within 5 ms of require',
      `${lease.firstIdMs.toFixed(3)} ms (+${lease.overNodeMs.toFixed(1)} ms wall over node -e 0)`,
    ])
    const vs = startup.cpuVsSapphire(first.rows)
    targets.push([
      "startup: require + first id at most 1.5× @sapphire/snowflake's (CPU time, in the process; the process's over node -e 0)",
      `${vs.span.toFixed(2)}×; ${vs.process.toFixed(2)}×`,
    ])
  }
  out.push('', '### Targets', '', '| target | measured |', '|---|---|')
  for (const [t, v] of targets) out.push(`| ${t} | ${v} |`)
  process.stdout.write(out.join('\n') + '\n')

  if (args.json) {
    const raw = {
      machine: m,
      rounds: args.rounds,
      cases: rows.map(r => ({
        name: r.case.name,
        regime: r.case.regime,
        check: r.check,
        rounds: r.rounds,
        idsPerSec: r.rate,
      })),
      threads: threadRounds,
      scaling: scalingRounds,
      memory,
      memory32,
      firstId: first && first.rows,
    }
    fs.writeFileSync(args.json, JSON.stringify(raw, null, 2) + '\n')
    process.stderr.write(`raw figures written to ${args.json}\n`)
  }
}

main()
