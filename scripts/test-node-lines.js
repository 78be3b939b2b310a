#!/usr/bin/env node
'use strict'

// npm run test:lines: the JS suite (`__test__/*.test.*`, what `npm run test:js` runs) on each supported Node line
// but the host's, with the pinned official binaries (scripts/tools.js). Each line's `node` comes first on PATH, so
// the processes the tests start run on it too. `--lines 22,24` picks lines. Prints one line per Node line and exits
// non-zero if any failed.
// `--wasi` runs it on the WASI build instead (npm run test:wasi): NAPI_RS_FORCE_WASI=error, so no native binary
// loads, and leases off (WASI has no flock); the tests WASI cannot run skip themselves, naming why (helpers.js
// wasiSkip). Node's ExperimentalWarning for node:wasi is silenced, as tests check what the CLI writes to stderr.
// `--no-servers` leaves out the files that start PostgreSQL, Redis, MariaDB or etcd (npm run test:wasi, for CI's time: the
// stores' code is the same JS on either build); `--servers 24` runs them on the lines named only (npm run test:lines:
// the stores' code is the same JS on every line, and npm test runs it on Node 20).

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { NODE_VERSIONS, cachedNode } = require('./tools.js')
const { testFiles: suiteFiles } = require('./test-files.js')

const ROOT = path.resolve(__dirname, '..')
// The suite of one line may take several minutes: it starts PostgreSQL, Redis and MariaDB, and forks clusters.
const TIMEOUT_MS = 30 * 60_000

/** The suite's files for Node `line`: the files that start servers only when `--no-servers` and `--servers` allow. */
function testFiles(line) {
  const at = process.argv.indexOf('--servers')
  const servers =
    !process.argv.includes('--no-servers') && (at < 0 || (process.argv[at + 1] ?? '').split(',').includes(line))
  return suiteFiles({ servers }).map(f => path.join('__test__', f))
}

async function main() {
  const at = process.argv.indexOf('--lines')
  const host = process.versions.node.split('.')[0]
  const wasi = process.argv.includes('--wasi')
  const lines = at > 0 ? process.argv[at + 1].split(',') : Object.keys(NODE_VERSIONS).filter(l => wasi || l !== host)
  const extra = wasi
    ? { NAPI_RS_FORCE_WASI: 'error', SNOWID_LEASE: 'off', NODE_OPTIONS: '--disable-warning=ExperimentalWarning' }
    : {}
  const results = []
  for (const line of lines) {
    const node = await cachedNode(line)
    const env = { ...process.env, ...extra, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}` }
    const started = Date.now()
    const files = testFiles(line)
    console.log(`\n=== Node ${NODE_VERSIONS[line]}${wasi ? ' (WASI)' : ''}: node --test ${files.length} files ===`)
    const r = spawnSync(node, ['--test', ...files], { cwd: ROOT, env, stdio: 'inherit', timeout: TIMEOUT_MS })
    const s = Math.round((Date.now() - started) / 1000)
    const ok = r.status === 0
    results.push(
      `Node ${NODE_VERSIONS[line]}${wasi ? ' (WASI)' : ''}: ${ok ? 'passed' : `FAILED (${r.signal ?? `exit ${r.status}`})`} in ${s} s`,
    )
  }
  console.log(`\n${results.join('\n')}`)
  if (results.some(r => r.includes('FAILED'))) process.exitCode = 1
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
