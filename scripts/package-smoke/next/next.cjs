'use strict'

// Run by `npm run test:package` (scripts/test-package.js) in a project with next, react and react-dom installed
// beside snowid, whose app/api/ids/route.js is route.mjs: `node next.cjs build|dev|start works|fails [--webpack]`.
// - build: `next build` (Turbopack, Next 16's default; webpack with --webpack) must succeed, or fail on snowid's .node
//   file.
// - dev, start: `next dev` or `next start` (after a build) on a free port of 127.0.0.1; `works`: three requests answer
//   200 with the ids the server printed, read back exactly; `fails`: the route answers 500 on snowid's .node file.
// Prints one line that says what it saw; exits 1 with the server's output when that is not what was expected.

const { spawn } = require('node:child_process')
const fs = require('node:fs')

const [mode, outcome, ...flags] = process.argv.slice(2)
const webpack = flags.includes('--webpack')
if (
  !['build', 'dev', 'start'].includes(mode) ||
  !['works', 'fails'].includes(outcome) ||
  flags.length > (mode === 'build' ? +webpack : 0)
) {
  console.error('usage: node next.cjs build|dev|start works|fails, and --webpack after build')
  process.exit(2)
}
const NEXT = require.resolve('next/dist/bin/next')
// What Turbopack, and webpack, say of the native addon that a route imports, with the platform package's file named.
const NOT_PLACEABLE = webpack
  ? /snowid\.[\w-]+\.node\nModule parse failed/
  : /non-ecmascript placeable asset\n.*snowid\.[\w-]+\.node \(node addon\) is not placeable in ESM chunks/
const READY_MS = 120_000
const REQUESTS = 3

let output = ''
function next(args) {
  // A group of its own, so that the servers `next dev` starts end with it.
  const child = spawn(process.execPath, [NEXT, ...args], {
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout.on('data', d => {
    output += d
  })
  child.stderr.on('data', d => {
    output += d
  })
  child.exited = new Promise(resolve => child.on('exit', code => resolve(code)))
  return child
}

function fail(why) {
  console.error(`${why}\n--- next's output:\n${output.slice(-6000)}`)
  process.exitCode = 1
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** Resolves when `pattern` is in the output (its match), or rejects after `ms`. */
async function waitFor(pattern, ms, what) {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) {
    const m = pattern.exec(output)
    if (m) return m
  }
  throw new Error(`no ${what} within ${ms / 1000} s`)
}

async function build() {
  fs.rmSync('.next', { recursive: true, force: true })
  const code = await next(['build', ...flags]).exited
  const failure = NOT_PLACEABLE.exec(output)
  if (outcome === 'works') {
    if (code !== 0) return fail(`next build: expected it to succeed, found exit code ${code}`)
    console.log(`next build${webpack ? ' --webpack' : ''}: built`)
  } else {
    if (code === 0) return fail('next build: expected it to fail on the addon, found it built')
    if (!failure)
      return fail(`next build: expected it to fail on the addon, found exit code ${code} for another reason`)
    console.log(`next build${webpack ? ' --webpack' : ''}: failed (${failure[0].replace('\n', ': ')})`)
  }
}

async function serve() {
  // A dev server starts afresh (a build's output is what `next start` serves).
  if (mode === 'dev') fs.rmSync('.next', { recursive: true, force: true })
  const server = next([mode, '--hostname', '127.0.0.1', '--port', '0'])
  try {
    const port = (
      await waitFor(/- Local:\s+http:\/\/127\.0\.0\.1:(\d+)/, READY_MS, `"- Local:" line from next ${mode}`)
    )[1]
    const url = `http://127.0.0.1:${port}/api/ids`
    if (outcome === 'fails') {
      const res = await fetch(url, { signal: AbortSignal.timeout(READY_MS) })
      await res.text()
      const failure = NOT_PLACEABLE.exec(output)
      if (res.status !== 500 || !failure) {
        return fail(`next ${mode}: expected 500 and the addon named in the log, found ${res.status}`)
      }
      console.log(`next ${mode}: GET /api/ids answered 500 (${failure[0].replace('\n', ': ')})`)
      return
    }
    const read = []
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(url, { signal: AbortSignal.timeout(READY_MS) })
      const text = await res.text()
      if (res.status !== 200) return fail(`next ${mode}: expected 200, found ${res.status}: ${text.slice(0, 500)}`)
      read.push(JSON.parse(text).id)
    }
    // The server's log line for each id, printed before it answered (a log may reach the pipe a little later).
    await waitFor(new RegExp(`made ${read.at(-1)}\\b`), 10_000, 'log line for the last id')
    const made = [...output.matchAll(/^made (\d+)$/gm)].map(m => m[1])
    const exact = read.every(id => typeof id === 'string' && /^[1-9]\d*$/.test(id))
    if (!exact || JSON.stringify(read) !== JSON.stringify(made)) {
      return fail(`next ${mode}: the server made ${JSON.stringify(made)}, the client read ${JSON.stringify(read)}`)
    }
    if (new Set(read).size !== REQUESTS) return fail(`next ${mode}: ids repeat: ${read}`)
    console.log(`next ${mode}: GET /api/ids answered the ids the server made, read back exactly: ${read.join(' ')}`)
  } finally {
    try {
      process.kill(-server.pid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
}

;(mode === 'build' ? build() : serve()).catch(err => fail(`next ${mode}: ${err.message}`))
