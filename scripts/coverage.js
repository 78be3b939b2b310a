#!/usr/bin/env node
'use strict'

// npm run coverage: how much of the code the tests run, with a floor. Not part of npm test (it runs the suites again,
// instrumented). CI runs it in one of its lanes (.ci/run).
//   JS: the files of npm run test:js (`__test__/*.test.*`), two at a time, under c8, over index.js, lib/ and bin/
//       (files no test loads count as 0%). The processes the tests start are measured too, as long as they inherit
//       the environment (NODE_V8_COVERAGE).
//   Rust: `cargo test` under cargo-llvm-cov, over src/ but src/js/: the binding runs only inside Node, so no Rust
//       test reaches it (the JS suite does). When `cargo llvm-cov` is missing or not the pinned version, it is
//       installed (`cargo install cargo-llvm-cov --version CARGO_LLVM_COV --locked`, into cargo's bin directory:
//       18 minutes on two busy cores), and rustup's llvm-tools-preview component is added when missing.
// Each prints its table and a summary, and fails when its lines % is under its floor (FLOORS); a test that fails
// under coverage is reported (npm test is what the tests must pass).
// `--js` or `--rust` runs one; `--install` only installs what Rust coverage needs (CI times it as a step of its own).
// Arguments after `--` go to node --test (`-- --test-name-pattern=decode`).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { testFiles } = require('./test-files.js')

/** The floors, as lines %: a few points under what the suites reach, so a change that leaves code untested fails. */
const FLOORS = { js: 90, rust: 89 }
const CARGO_LLVM_COV = '0.9.1'
/** What `cargo test` cannot run: the napi binding (see above). */
const RUST_IGNORED = String.raw`src[/\\]js[/\\]`

const ROOT = path.resolve(__dirname, '..')

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', ...options })
  if (r.error) console.error(`coverage: ${cmd}: ${r.error.message}`)
  return r
}

/** Checks one figure against its floor, and says how it went. */
function verdict(name, totals) {
  const { lines, functions } = totals
  const ok = lines >= FLOORS[name]
  console.log(
    `coverage ${name}: lines ${lines.toFixed(2)}%, functions ${functions.toFixed(2)}% (floor: lines ${FLOORS[name]}%)${ok ? '' : ': UNDER THE FLOOR'}`,
  )
  return ok
}

function js(tmp, testArgs) {
  const report = path.join(tmp, 'js')
  const files = testFiles().map(f => path.join('__test__', f))
  const c8 = require.resolve('c8/bin/c8.js')
  const r = run(process.execPath, [
    c8,
    '--all',
    ...['index.js', 'lib/**', 'bin/**'].flatMap(p => ['--include', p]),
    '--reporter=text',
    '--reporter=json-summary',
    `--report-dir=${report}`,
    `--temp-directory=${path.join(tmp, 'v8')}`,
    process.execPath,
    '--test',
    '--test-concurrency=2',
    ...testArgs,
    ...files,
  ])
  const summary = path.join(report, 'coverage-summary.json')
  if (!fs.existsSync(summary)) {
    console.error('coverage js: c8 wrote no summary')
    return false
  }
  const { total } = JSON.parse(fs.readFileSync(summary, 'utf8'))
  const ok = verdict('js', { lines: total.lines.pct, functions: total.functions.pct })
  // The suite itself is npm test's to pass; here, in a lane beside others, a test that fails on the machine's load
  // is reported, and the floor decides.
  if (r.status !== 0)
    console.error(`coverage js: the suite failed under c8 (${r.signal ?? `exit ${r.status}`}); see above`)
  return ok
}

/** rustup's llvm-tools-preview and cargo-llvm-cov CARGO_LLVM_COV: installs what is missing; false if it cannot. */
function install() {
  const components = spawnSync('rustup', ['component', 'list', '--installed'], { encoding: 'utf8' }).stdout ?? ''
  if (!/^llvm-tools/m.test(components) && run('rustup', ['component', 'add', 'llvm-tools-preview']).status !== 0) {
    console.error('coverage rust: could not add llvm-tools-preview')
    return false
  }
  const version = spawnSync('cargo', ['llvm-cov', '--version'], { encoding: 'utf8' }).stdout ?? ''
  if (version.trim() === `cargo-llvm-cov ${CARGO_LLVM_COV}`) return true
  const args = ['install', 'cargo-llvm-cov', '--version', CARGO_LLVM_COV, '--locked']
  console.log(`coverage rust: cargo ${args.join(' ')} (found: ${version.trim() || 'none'})`)
  if (run('cargo', args).status === 0) return true
  console.error(`coverage rust: could not install cargo-llvm-cov ${CARGO_LLVM_COV}`)
  return false
}

function rust(tmp) {
  if (!install()) return false
  const tests = run('cargo', ['llvm-cov', '--locked', '--no-report'])
  // As for JS: cargo test is npm test's to pass; a failure here is reported, and the floor decides.
  if (tests.status !== 0) console.error(`coverage rust: cargo test failed (${tests.signal ?? `exit ${tests.status}`})`)
  const json = path.join(tmp, 'rust.json')
  const report = ['llvm-cov', 'report', '--summary-only', `--ignore-filename-regex=${RUST_IGNORED}`]
  if (run('cargo', report).status !== 0) return false
  if (run('cargo', [...report, '--json', `--output-path=${json}`]).status !== 0) return false
  const totals = JSON.parse(fs.readFileSync(json, 'utf8')).data?.[0]?.totals
  if (!totals) {
    console.error('coverage rust: no totals in the report')
    return false
  }
  return verdict('rust', { lines: totals.lines.percent, functions: totals.functions.percent })
}

function main() {
  const dash = process.argv.indexOf('--')
  const own = dash < 0 ? process.argv.slice(2) : process.argv.slice(2, dash)
  const testArgs = dash < 0 ? [] : process.argv.slice(dash + 1)
  const unknown = own.filter(a => a !== '--js' && a !== '--rust' && a !== '--install')
  if (unknown.length > 0) {
    console.error(
      `coverage: unknown argument ${unknown[0]} (--js, --rust, --install, then -- and node --test's arguments)`,
    )
    return 2
  }
  if (own.includes('--install')) return install() ? 0 : 1
  const both = !own.includes('--js') && !own.includes('--rust')
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-coverage-'))
  try {
    const results = []
    if (both || own.includes('--js')) results.push(js(tmp, testArgs))
    if (both || own.includes('--rust')) results.push(rust(tmp))
    return results.every(Boolean) ? 0 : 1
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

process.exitCode = main()
