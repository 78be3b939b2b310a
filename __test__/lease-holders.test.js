'use strict'

// Who holds which slot of the host lease: workerSlots()'s holders (pid, since, host name, command line), live or
// gone, from real processes and from lease files written here independently of the Rust code (helpers.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const {
  ROOT,
  cleanEnv,
  encodeRecord,
  freshLeaseDir,
  leaseHostName,
  spawnChild,
  endChild,
  firstOutput,
  wasiSkip,
  EXIT_ON_STDIN,
} = require('./helpers.js')

const HOST_LEASE = wasiSkip('no flock, so no host lease')
const { workerSlots } = require('..')

// Takes an id, prints its slot, and holds the lease until stopped (SIGTERM, or on Windows a line on its stdin).
const HOLDER = `const d = require('.').decode(require('.').nextId()); console.log(JSON.stringify(d)); ${EXIT_ON_STDIN}`

test(
  'a process holding a slot is listed with its pid, host, command and since; once it exits, as gone',
  HOST_LEASE,
  async () => {
    const env = cleanEnv({ SNOWID_DATACENTER_ID: '2', SNOWID_SINGLE_INSTANCE: 'true' })
    const lease = { SNOWID_LEASE_DIR: env.SNOWID_LEASE_DIR, SNOWID_LEASE_NAMESPACE: env.SNOWID_LEASE_NAMESPACE }
    const before = Date.now()
    const run = spawnChild(process.execPath, ['-e', HOLDER], { cwd: ROOT, env })
    try {
      const id = JSON.parse(await firstOutput(run.child))
      const after = Date.now()
      const slots = workerSlots({ ...lease, SNOWID_DATACENTER_ID: '2' })
      const held = {
        datacenterId: 2,
        workerId: id.workerId,
        pid: run.child.pid,
        live: true,
        since: slots.recorded[0]?.since,
        host: leaseHostName(),
        command: `${process.execPath} -e ${HOLDER}`.slice(0, 256),
      }
      assert.deepEqual(slots.recorded, [held])
      assert.deepEqual(slots.gone, [])
      assert.ok(held.since >= before && held.since <= after, `since ${held.since} within [${before}, ${after}]`)
      assert.ok(await endChild(run), 'the holder ends when asked')
      const later = workerSlots({ ...lease, SNOWID_DATACENTER_ID: '2' })
      assert.deepEqual(later.recorded, [], 'a holder that has gone is never shown as live')
      assert.deepEqual(later.gone, [{ ...held, live: false }])
    } finally {
      await endChild(run)
      fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true })
    }
  },
)

test('lease files of both versions are read: version 2 with its holder, version 1 without', HOST_LEASE, () => {
  const dir = freshLeaseDir()
  try {
    const command = 'node app.js --name "é 50%"\n--next'
    fs.writeFileSync(
      path.join(dir, 'dc0-worker1.lease'),
      encodeRecord({ seq: 3, pid: 4242, marks: [[0, 1000]], since: 1795316400000, host: 'web 1', command }),
    )
    fs.writeFileSync(path.join(dir, 'dc0-worker2.lease'), encodeRecord({ version: 1, seq: 3, pid: 4343, marks: [] }))
    // Not a record: left out.
    fs.writeFileSync(path.join(dir, 'dc0-worker3.lease'), 'garbage')
    const slots = workerSlots({ SNOWID_LEASE_DIR: dir, SNOWID_DATACENTER_ID: '0', SNOWID_WORKER_ID: undefined })
    assert.deepEqual(slots.recorded, [])
    assert.deepEqual(slots.gone, [
      { datacenterId: 0, workerId: 1, pid: 4242, live: false, since: 1795316400000, host: 'web 1', command },
      { datacenterId: 0, workerId: 2, pid: 4343, live: false, since: null, host: null, command: null },
    ])
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
