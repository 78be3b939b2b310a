#!/usr/bin/env node
'use strict'

// npm test: every check a change needs (docs/development.md#test-tiers).
// First, one after the other, what keeps both cores busy or writes the build: `cargo test` (it compiles the tests),
// the lints (rustfmt, clippy, biome) and the package checks (attw runs `npm pack`, whose `prepare` rebuilds the addon,
// so nothing may load it meanwhile). Then, at the same time, what mostly waits (on servers, TTLs and the processes the
// tests start): the JS tests, the doc examples and the TypeScript check. The JS tests print as they run; the others
// print after them. Each step's exit and time are listed at the end, and any step that fails fails the run.
// Each step is also an npm script of its own (test:rust, test:lint, test:published, test:js, test:docs, test:types).
//
// `node scripts/test.js js` (npm run test:js) runs the JS tests alone, through node:test's run(), which keeps the
// order it is given (node --test sorts its files): JS_CONCURRENCY files at a time, LONGEST_FILES first, then the
// others that start servers, then the rest, so that the last files to start are short ones. After `js` may come test
// file names (`ids.test.js`: only those), `--test-name-pattern=P` (repeatable) and `--test-only`
// (`npm run test:js -- --test-name-pattern=decode`). It reports as node --test does: spec on a terminal, else TAP.

const path = require('node:path')
const { spawn } = require('node:child_process')
const { LONGEST_FILES, SERVER_FILES, testFiles } = require('./test-files.js')

const ROOT = path.resolve(__dirname, '..')
/** How many JS test files run at once: they mostly wait, so more than the cores. */
const JS_CONCURRENCY = 6
/** The npm that runs this script (`npm_execpath`, with this Node), else the one on the PATH. */
const NPM = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm']
const npmScript = name => ({ name, cmd: NPM[0], args: [...NPM.slice(1), 'run', '--silent', name] })

const SERIAL = [npmScript('test:rust'), npmScript('test:lint'), npmScript('test:published')]
const TOGETHER = [{ ...npmScript('test:js'), live: true }, npmScript('test:docs'), npmScript('test:types')]

/** The suite's files in the order they start: LONGEST_FILES, then the other SERVER_FILES, then the rest. */
function orderedFiles() {
  const files = testFiles()
  const stale = LONGEST_FILES.filter(f => !files.includes(f))
  if (stale.length) throw new Error(`LONGEST_FILES in scripts/test-files.js names no test file: ${stale.join(', ')}`)
  const servers = files.filter(f => SERVER_FILES.includes(f) && !LONGEST_FILES.includes(f))
  return [...LONGEST_FILES, ...servers, ...files.filter(f => !LONGEST_FILES.includes(f) && !servers.includes(f))]
}

/** An error in the arguments: printed as one line, exit 2. */
function usage(message) {
  return Object.assign(new Error(`npm run test:js: ${message}`), { usage: true })
}

/** run()'s options from the arguments after `js`; throws on one it does not know. */
function jsOptions(args) {
  const files = []
  const testNamePatterns = []
  let only = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (arg === '--test-only') only = true
    else if (arg.startsWith('--test-name-pattern=')) testNamePatterns.push(arg.slice('--test-name-pattern='.length))
    else if (arg === '--test-name-pattern' && i + 1 < args.length) testNamePatterns.push(args[++i])
    else if (!arg.startsWith('-')) files.push(path.basename(arg))
    else throw usage(`unknown argument ${arg}: test file names, --test-name-pattern=P, --test-only`)
  }
  const all = orderedFiles()
  const unknown = files.filter(f => !all.includes(f))
  if (unknown.length) throw usage(`no test file ${unknown.join(', ')} in __test__`)
  return {
    files: all.filter(f => !files.length || files.includes(f)).map(f => path.join(ROOT, '__test__', f)),
    concurrency: JS_CONCURRENCY,
    only,
    ...(testNamePatterns.length ? { testNamePatterns } : {}),
  }
}

/** Runs the JS tests in this process; resolves to whether none failed (a todo that fails does not count). */
function runJs(args) {
  const { run } = require('node:test')
  const { spec, tap } = require('node:test/reporters')
  let failed = false
  const stream = run(jsOptions(args))
  stream.on('test:fail', data => {
    if (data.todo === undefined || data.todo === false) failed = true
  })
  const out = stream.compose(process.stdout.isTTY ? new spec() : tap)
  out.pipe(process.stdout)
  return new Promise((resolve, reject) => {
    out.on('error', reject)
    out.on('end', () => resolve(!failed))
  })
}

/** Runs a step; resolves to `{ name, status, seconds, output }` (`output` only when it was kept back). */
function run(step, live) {
  const started = Date.now()
  return new Promise(resolve => {
    const chunks = []
    const child = spawn(step.cmd, step.args, { cwd: ROOT, stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'] })
    if (!live) {
      child.stdout.on('data', c => chunks.push(c))
      child.stderr.on('data', c => chunks.push(c))
    }
    const done = (status, why) =>
      resolve({
        name: step.name,
        status,
        why,
        seconds: Math.round((Date.now() - started) / 1000),
        output: live ? null : Buffer.concat(chunks).toString(),
      })
    child.on('error', e => done(null, e.message))
    child.on('close', (code, signal) => done(code, signal ? `signal ${signal}` : `exit ${code}`))
  })
}

async function main() {
  if (process.argv[2] === 'js') {
    process.exitCode = (await runJs(process.argv.slice(3))) ? 0 : 1
    return
  }
  const results = []
  for (const step of SERIAL) {
    process.stdout.write(`\n== npm test: ${step.name}\n`)
    const r = await run(step, true)
    results.push(r)
    if (r.status !== 0) return report(results)
  }
  process.stdout.write(`\n== npm test: ${TOGETHER.map(s => s.name).join(', ')}, at the same time\n`)
  const together = await Promise.all(TOGETHER.map(step => run(step, step.live)))
  for (const r of together)
    if (r.output !== null) process.stdout.write(`\n== npm test: ${r.name} (${r.why})\n${r.output}`)
  results.push(...together)
  report(results)
}

function report(results) {
  process.stdout.write('\n== npm test: steps\n')
  for (const r of results) process.stdout.write(`${r.name.padEnd(16)} ${r.why.padEnd(10)} ${r.seconds} s\n`)
  const failed = results.filter(r => r.status !== 0)
  if (failed.length) {
    process.stdout.write(`npm test: failed: ${failed.map(r => r.name).join(', ')}\n`)
    process.exitCode = 1
  }
}

main().catch(e => {
  process.stderr.write(e.usage ? `${e.message}\n` : `npm test: ${e.stack}\n`)
  process.exitCode = e.usage ? 2 : 1
})
