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
// `node scripts/test.js js` (npm run test:js) runs the JS tests alone: JS_CONCURRENCY files at a time, those that
// start servers first (the longest, so that the last files to start are short ones). Arguments after `js` go to
// node --test (`npm run test:js -- --test-name-pattern=decode`).

const path = require('node:path')
const { spawn } = require('node:child_process')
const { SERVER_FILES, testFiles } = require('./test-files.js')

const ROOT = path.resolve(__dirname, '..')
/** How many JS test files run at once: they mostly wait, so more than the cores. */
const JS_CONCURRENCY = 6
/** The npm that runs this script (`npm_execpath`, with this Node), else the one on the PATH. */
const NPM = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm']
const npmScript = name => ({ name, cmd: NPM[0], args: [...NPM.slice(1), 'run', '--silent', name] })

const SERIAL = [npmScript('test:rust'), npmScript('test:lint'), npmScript('test:published')]
const TOGETHER = [{ ...npmScript('test:js'), live: true }, npmScript('test:docs'), npmScript('test:types')]

/** The JS tests, with `args` for node --test. */
function jsTests(args) {
  const files = testFiles()
  const first = files.filter(f => SERVER_FILES.includes(f))
  const ordered = [...first, ...files.filter(f => !first.includes(f))]
  return {
    name: 'test:js',
    cmd: process.execPath,
    args: ['--test', `--test-concurrency=${JS_CONCURRENCY}`, ...args, ...ordered.map(f => path.join('__test__', f))],
  }
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
    const r = await run(jsTests(process.argv.slice(3)), true)
    process.exitCode = r.status === 0 ? 0 : 1
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
  process.stderr.write(`npm test: ${e.stack}\n`)
  process.exitCode = 1
})
