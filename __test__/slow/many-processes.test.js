'use strict'

// 64 processes at once on one host, with the default configuration (only a lease directory of the test's own, shared
// by all 64): each takes its slot from the automatic lease and writes its ids for about 1 s to a file, and all 64
// hold their slots at the same time. With no datacenter id and no worker id configured, the lease chooses both, so
// the 33rd process takes datacenterId 1's first slot instead of failing. Slow (64 Node processes on a busy host):
// not in `npm test`'s glob.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { ROOT, cleanEnv, freshLeaseDir, wasiSkip } = require('../helpers.js')
const { WRITER, waitForSummaries, leaseSlots, checkIds } = require('./id-files.js')

const PROCESSES = 64

const children = []
let out

test.after(async () => {
  await Promise.all(
    children.map(
      child =>
        new Promise(resolve => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.once('exit', resolve)
          child.kill('SIGTERM')
        }),
    ),
  )
  if (out) fs.rmSync(out, { recursive: true, force: true })
})

test(`${PROCESSES} processes at once with the default configuration: every one gets its own slot, 0 duplicates`, {
  ...wasiSkip('no flock, so no host lease'),
  timeout: 300_000,
}, async t => {
  const leaseDir = freshLeaseDir()
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-many-'))
  const env = cleanEnv({ SNOWID_LEASE_DIR: leaseDir, IDS_OUT_DIR: out })
  const exits = []
  for (let i = 0; i < PROCESSES; i++) {
    const child = spawn(process.execPath, [WRITER], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', d => (stderr += d))
    child.once('exit', (code, signal) => exits.push({ pid: child.pid, code, signal, stderr }))
    children.push(child)
  }
  // A process that dies before its summary is a failure at once, with its stderr.
  const alive = () => assert.deepEqual(exits, [], 'a process exited before writing its summary')
  const found = await waitForSummaries(out, PROCESSES, 180_000, alive)
  const all = [...found.values()]

  const failed = all.filter(s => s.error)
  t.diagnostic(
    `${all.length - failed.length} of ${all.length} processes took a slot; errors: ${JSON.stringify([...new Set(failed.map(s => s.error.code))])}`,
  )
  assert.equal(
    failed.length,
    0,
    `every process gets a slot; ${failed.length} failed, the first with ${JSON.stringify(failed[0]?.error)}`,
  )
  const slots = leaseSlots(all, PROCESSES, 'the lease chose both ids')
  // The slots are filled in order: datacenterId 0's 32 worker ids, then datacenterId 1's.
  const expected = Array.from({ length: PROCESSES }, (_, i) => `${i >> 5}:${i & 31}`)
  assert.deepEqual([...slots].sort(), expected.sort())

  const { total, dups } = checkIds(out, found)
  t.diagnostic(`${PROCESSES} processes, ${slots.size} slots, ${total} ids, ${dups} duplicates`)
  assert.equal(dups, 0)
  assert.ok(total >= PROCESSES * 512)
})
