#!/usr/bin/env node
'use strict'

// npm run test:slow: the slow tier. CI runs it after npm test (.ci/run). First the Rust tests marked
// #[ignore] (stress: `cargo test -- --ignored`), then __test__/slow/*.test.*, one file at a time (many processes,
// servers at scale). The files are listed here, as Node 20's `node --test` takes no glob ("Could not find
// '__test__/slow/*.test.*'") and Node 22 and 24 take no directory; with none, it says so and passes.
// Arguments go to node --test, e.g. `npm run test:slow -- --test-name-pattern=redis`.

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.resolve(__dirname, '..')
const DIR = path.join('__test__', 'slow')

const rust = spawnSync('cargo', ['test', '--locked', '--', '--ignored'], { cwd: ROOT, stdio: 'inherit' })
if (rust.status !== 0) {
  console.error(`test:slow: cargo test -- --ignored: ${rust.error ?? rust.signal ?? `exit ${rust.status}`}`)
  process.exit(1)
}

const files = (fs.existsSync(path.join(ROOT, DIR)) ? fs.readdirSync(path.join(ROOT, DIR)) : [])
  .filter(f => /\.test\.[cm]?[jt]s$/.test(f))
  .sort()
  .map(f => path.join(DIR, f))
if (files.length === 0) {
  console.log(`test:slow: no test files in ${DIR}/`)
} else {
  const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...process.argv.slice(2), ...files], {
    cwd: ROOT,
    stdio: 'inherit',
  })
  process.exitCode = r.status ?? 1
}
