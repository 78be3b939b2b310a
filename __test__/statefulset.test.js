'use strict'

// The worker id from a StatefulSet pod's host name: SNOWID_WORKER_ID_FROM=statefulset reads the ordinal of HOSTNAME.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const fs = require('node:fs')

const { ROOT, cleanEnv, firstOutput, probeFirstId: probe, runCli, runNode, wasiSkip } = require('./helpers.js')

const FROM = { SNOWID_WORKER_ID_FROM: 'statefulset' }

test('the default generator takes its worker id from the pod name, and config() says so', () => {
  for (const [host, workerId] of [
    ['web-0', 0],
    ['web-3', 3],
    ['my-app-12', 12],
    ['a-b-c-7', 7],
    ['web-31', 31],
    ['db-5.db.prod.svc.cluster.local', 5],
  ]) {
    const out = probe({ ...FROM, HOSTNAME: host, SNOWID_DATACENTER_ID: '2' })
    assert.equal(out.error, undefined, `${host}: ${JSON.stringify(out.error)}`)
    assert.equal(out.decoded.workerId, workerId, host)
    assert.equal(out.decoded.datacenterId, 2)
    assert.equal(out.config.workerId, workerId)
    assert.equal(out.config.sources.workerId, 'statefulset')
  }
})

test('a Snowflake reads it too, and a worker id given as a number wins', () => {
  const r = runNode(
    `const { Snowflake } = require('.')
     const a = new Snowflake({ lease: false })
     const b = new Snowflake({ lease: false, workerId: 1 })
     console.log(JSON.stringify([a.decode(a.nextId()).workerId, a.config().sources.workerId, b.decode(b.nextId()).workerId, b.config().sources.workerId]))`,
    { ...FROM, HOSTNAME: 'orders-9' },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [9, 'statefulset', 1, 'option'])
  // SNOWID_WORKER_ID beats it (a cluster fork sets that), PM2's instance number does not.
  assert.equal(probe({ ...FROM, HOSTNAME: 'orders-9', SNOWID_WORKER_ID: '4' }).decoded.workerId, 4)
  const pm2 = probe({ ...FROM, HOSTNAME: 'orders-9', NODE_APP_INSTANCE: '1' })
  assert.deepEqual([pm2.decoded.workerId, pm2.config.sources.workerId], [9, 'statefulset'])
})

test('a host name without an ordinal, or with one out of range, fails the first id with a coded error', () => {
  const cases = [
    ['web', 'TypeError'],
    ['web-', 'TypeError'],
    ['web-3a', 'TypeError'],
    ['web--1', 'TypeError'],
    ['-3', 'TypeError'],
    ['web-03', 'TypeError'],
    ['', 'TypeError'],
    ['web-32', 'RangeError'],
    ['web-18446744073709551616', 'RangeError'],
    [`web-${'9'.repeat(2000)}`, 'RangeError'],
  ]
  for (const [host, name] of cases) {
    const out = probe({ ...FROM, HOSTNAME: host })
    assert.ok(out.error, `${host}: expected an error, got id ${out.id}`)
    assert.equal(out.error.code, 'ERR_SNOWID_INVALID_CONFIG', host)
    assert.equal(out.error.name, name, `${host}: ${out.error.message}`)
    assert.ok(out.error.message.startsWith('HOSTNAME: expected a StatefulSet pod name'), out.error.message)
    // A name past 40 characters is cut there in the message, with its length.
    const shown =
      host.length <= 40 ? JSON.stringify(host) : `${JSON.stringify(host.slice(0, 40))}... (${host.length} characters)`
    assert.ok(out.error.message.endsWith(`found ${shown}`), out.error.message)
  }
  const wide = probe({ ...FROM, HOSTNAME: 'web-32', SNOWID_WORKER_BITS: '6', SNOWID_DATACENTER_BITS: '2' })
  assert.equal(wide.decoded.workerId, 32, 'the range follows workerBits')
  const bad = probe({ SNOWID_WORKER_ID_FROM: 'hostname', HOSTNAME: 'web-3' })
  assert.equal(bad.error.code, 'ERR_SNOWID_INVALID_CONFIG')
  assert.match(bad.error.message, /^SNOWID_WORKER_ID_FROM: expected "statefulset"/)
})

test('snowid config shows where the worker id came from', () => {
  const r = runCli(['config', '--json'], { ...FROM, HOSTNAME: 'web-6' })
  assert.equal(r.status, 0, r.stderr)
  const c = JSON.parse(r.stdout)
  assert.deepEqual([c.workerId, c.sources.workerId], [6, 'statefulset'])
})

test(
  'a second process in the pod that reads the same ordinal gets ERR_SNOWID_WORKER_ID_IN_USE',
  wasiSkip('no flock, so no host lease to find the first process by'),
  async () => {
    const env = cleanEnv({ ...FROM, HOSTNAME: 'web-4' })
    const holder = spawn(
      process.execPath,
      ['-e', "require('.').nextId(); console.log('ready'); setInterval(() => {}, 1000)"],
      {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    try {
      assert.equal((await firstOutput(holder)).trim(), 'ready')
      const out = probe({ ...FROM, HOSTNAME: 'web-4', SNOWID_LEASE_DIR: env.SNOWID_LEASE_DIR })
      assert.equal(out.error?.code, 'ERR_SNOWID_WORKER_ID_IN_USE', JSON.stringify(out))
      assert.match(out.error.message, /statefulset/)
    } finally {
      if (holder.exitCode === null && holder.signalCode === null) {
        const exited = once(holder, 'exit')
        holder.kill()
        await exited
      }
      fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true })
    }
  },
)
