'use strict'

// The benchmark's own cases run (`npm run bench` prints "not run" for a case whose process fails, and goes on): each
// of snowid's makes its generator and 1,000 results, in a process of its own, and for a generator the benchmark
// checks across threads, in a worker_thread too. The peers' cases are left to the benchmark: a peer that cannot run
// here is reported there.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { ROOT, spawnNode } = require('./helpers.js')
const { cases } = require('../benchmark/cases.js')

const WASM = path.join(ROOT, 'npm', 'wasm32-wasi', 'snowid.wasm32-wasi.wasm')
const WASI = process.env.NAPI_RS_FORCE_WASI === 'error'

test('every snowid case of the benchmark runs, in its process and across threads', {
  skip: (WASI || process.platform === 'win32') && 'the benchmark runs on the native build, on Linux and macOS',
}, t => {
  const ours = cases.map((c, id) => ({ ...c, id })).filter(c => c.name.startsWith('snowid '))
  assert.ok(ours.length >= 20, `${ours.length} cases`)
  for (const c of ours) {
    if (c.env?.NAPI_RS_FORCE_WASI && !fs.existsSync(WASM)) {
      t.diagnostic(`${c.name}: skipped, the WASI build is not built (npm run build:wasm)`)
      continue
    }
    const r = spawnNode([path.join(ROOT, 'benchmark', 'case.js'), 'smoke', String(c.id)], c.env ?? {})
    assert.equal(r.status, 0, `${c.name}: ${r.stderr}`)
    const out = JSON.parse(r.stdout.trim().split('\n').pop())
    assert.ok(out.results >= 1000 / (c.batch ?? 1), `${c.name}: ${r.stdout}`)
  }
})
