'use strict'

// Two PM2 apps on one host, with the default configuration: two single-instance apps in fork mode (PM2's default),
// and two apps of 2 instances each in cluster mode. PM2 numbers every app's instances from 0 in NODE_APP_INSTANCE;
// snowid does not read it, so every process takes its slot from the host lease like any other. Each process writes
// its ids for about 1 s to a file. Every process gets its own slot, 0 duplicates, and `pm2 jlist` shows every one of
// them online with 0 restarts. A real PM2 (npm `pm2`) with a daemon of the test's own (PM2_HOME in a temp dir).
// Slow (a PM2 daemon, two rounds of apps): not in `npm test`'s glob.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: sleep } = require('node:timers/promises')

const { ROOT, cleanEnv, freshLeaseDir, wasiSkip } = require('../helpers.js')
const { WRITER, waitForSummaries, leaseSlots, checkIds } = require('./id-files.js')

const PM2 = path.join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2')
const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-pm2-'))
const home = path.join(temp, 'home')

/** Runs the pm2 CLI against the test's own daemon. */
function pm2(args, timeout = 120_000) {
  // No SNOWID_ variable reaches the daemon: the apps are configured by their ecosystem entries only.
  const env = cleanEnv({ PM2_HOME: home, SNOWID_LEASE_DIR: undefined })
  const r = spawnSync(process.execPath, [PM2, ...args], { cwd: temp, env, encoding: 'utf8', timeout })
  assert.equal(r.status, 0, `pm2 ${args.join(' ')}: ${r.error ?? ''}${r.stderr}${r.stdout}`)
  return r.stdout
}

/** `pm2 jlist`, the processes of the apps named in `names`. */
function listed(names) {
  const text = pm2(['jlist'])
  // pm2 may print a notice before the JSON.
  const list = JSON.parse(text.slice(text.indexOf('[')))
  return list.filter(p => names.includes(p.name))
}

test.after(() => {
  if (fs.existsSync(home))
    spawnSync(process.execPath, [PM2, 'kill'], { env: cleanEnv({ PM2_HOME: home }), timeout: 60_000 })
  fs.rmSync(temp, { recursive: true, force: true })
})

/** Starts `apps` (ecosystem entries), waits for every process's summary, checks them, and deletes the apps. */
async function round(t, label, apps) {
  const out = fs.mkdtempSync(path.join(temp, 'ids-'))
  const leaseDir = freshLeaseDir()
  const env = { SNOWID_LEASE_DIR: leaseDir, IDS_OUT_DIR: out }
  const ecosystem = path.join(temp, `${label}.config.js`)
  const entries = apps.map(a => ({ script: WRITER, cwd: ROOT, autorestart: true, env, ...a }))
  fs.writeFileSync(ecosystem, `module.exports = ${JSON.stringify({ apps: entries }, null, 2)}\n`)
  const names = apps.map(a => a.name)
  const processes = apps.reduce((n, a) => n + (a.instances ?? 1), 0)
  try {
    pm2(['start', ecosystem])
    const found = await waitForSummaries(out, processes, 120_000)
    // Every process has written its summary; PM2's view of them now (a process that exited would show restarts).
    await sleep(500)
    const shown = listed(names)
    const all = [...found.values()]
    const failed = all.filter(s => s.error)
    const restarts = shown.reduce((n, p) => n + p.pm2_env.restart_time, 0)
    t.diagnostic(
      `${label}: ${all.length - failed.length} of ${all.length} processes took a slot ` +
        `(errors: ${JSON.stringify(failed.map(s => s.error.code))}); pm2 shows ` +
        `${shown.filter(p => p.pm2_env.status === 'online').length} of ${shown.length} online, ${restarts} restarts`,
    )
    assert.equal(
      failed.length,
      0,
      `every process gets a slot; ${failed.length} failed, the first with ${JSON.stringify(failed[0]?.error)}`,
    )
    assert.equal(shown.length, processes, 'pm2 lists every process')
    for (const p of shown) {
      assert.equal(p.pm2_env.status, 'online', `${p.name} online`)
      assert.equal(p.pm2_env.restart_time, 0, `${p.name}: no restart`)
    }
    assert.deepEqual(
      shown.map(p => p.pid).sort(),
      [...found.keys()].sort(),
      'the processes pm2 shows are the ones that wrote ids',
    )
    const slots = leaseSlots(all, processes, 'NODE_APP_INSTANCE is not a worker id: the lease chose both ids')
    const { total, dups } = checkIds(out, found)
    t.diagnostic(`${label}: ${processes} processes, ${slots.size} slots, ${total} ids, ${dups} duplicates`)
    assert.equal(dups, 0)
  } finally {
    pm2(['delete', ecosystem])
  }
}

const options = { ...wasiSkip('no flock, so no host lease'), timeout: 300_000 }

test(
  'two PM2 apps in fork mode, one instance each, default configuration: distinct slots, 0 duplicates, online, 0 restarts',
  options,
  async t => {
    await round(t, 'fork', [
      { name: 'snowid-a', exec_mode: 'fork' },
      { name: 'snowid-b', exec_mode: 'fork' },
    ])
  },
)

test(
  'two PM2 apps in cluster mode, 2 instances each, default configuration: distinct slots, 0 duplicates, online, 0 restarts',
  options,
  async t => {
    await round(t, 'cluster', [
      { name: 'snowid-c', exec_mode: 'cluster', instances: 2 },
      { name: 'snowid-d', exec_mode: 'cluster', instances: 2 },
    ])
  },
)
