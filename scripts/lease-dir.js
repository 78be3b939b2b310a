'use strict'

// Temporary lease directories for a process that takes leases in them itself (the test files, the benchmark's
// cases), removed when it exits, so a run leaves the OS temp dir as it was, and the lease namespace that goes with
// each: slots are claimed host-wide, whatever the directory (src/core/lease/unix/claim.rs), so a directory of its own keeps a
// run apart from the host's other processes only with a namespace of its own.
//
// A lease the process still holds keeps its marks where newcomers look while they reach past the clock: removed
// sooner, its directory would be made again by the holder's repair thread (src/core/lease/repair.rs) in the moments before
// the process ends. So each directory goes once its latest mark has passed and the repair thread has looked again.
// On Windows a process cannot remove a directory it holds a lease in (it holds the directory and the slot file open
// without sharing their deletion): such a directory is left, and scripts/test-windows.js sweeps what is left.

const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

/** How often a holder's repair thread looks at its leases (src/core/lease/repair.rs, REPAIR_EVERY_MS). */
const REPAIR_EVERY_MS = 10
/** The longest an exiting process waits for its marks to pass: longer leads are the caller's own to wait out. */
const MAX_EXIT_WAIT_MS = 6_000

const made = []
process.on('exit', () => {
  const until = Math.max(0, ...made.map(latestMark))
  const wait = Math.min(until - Date.now() + 3 * REPAIR_EVERY_MS, MAX_EXIT_WAIT_MS)
  if (wait > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait)
  for (const dir of made) {
    try {
      fs.rmSync(dir, { recursive: true, force: true })
    } catch (err) {
      if (process.platform !== 'win32' || !['EBUSY', 'EPERM'].includes(err.code)) throw err
    }
  }
})

/** A lease file's two records (its first RECORD_BYTES), or '' for anything but a regular file: tests put FIFOs,
 * links and huge files in lease directories, and reading a FIFO would block the exiting process for good. */
const RECORD_BYTES = 2 * 1024
function records(file) {
  let fd
  try {
    if (!fs.lstatSync(file).isFile()) return ''
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
    const buf = Buffer.alloc(RECORD_BYTES)
    return buf.toString('latin1', 0, fs.readSync(fd, buf, 0, RECORD_BYTES, 0))
  } catch {
    return ''
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** The latest Unix ms any lease file in `dir` reserves (0 for none), from the marks of both records. */
function latestMark(dir) {
  let latest = 0
  let names = []
  try {
    names = fs.readdirSync(dir)
  } catch {
    return 0
  }
  for (const name of names) {
    const text = records(path.join(dir, name))
    for (const [, marks] of text.matchAll(/ marks=([\d:,]*)/g)) {
      for (const [, ms] of marks.matchAll(/\d+:(\d+)/g)) latest = Math.max(latest, Number(ms))
    }
  }
  return latest
}

/** A new, empty directory in the OS temp dir named `prefix` plus random characters, removed when this process exits. */
function tempLeaseDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  made.push(dir)
  return dir
}

/** The lease namespace (SNOWID_LEASE_NAMESPACE) of the processes that use lease directory `dir`, as written: one
 * per directory, so processes pointed at one directory share their slots, and no others. */
function leaseNamespace(dir) {
  return `test-${crypto.createHash('sha256').update(String(dir)).digest('hex').slice(0, 16)}`
}

/** `SNOWID_LEASE_DIR` and `SNOWID_LEASE_NAMESPACE` for `dir`. */
function leaseEnv(dir) {
  return { SNOWID_LEASE_DIR: dir, SNOWID_LEASE_NAMESPACE: leaseNamespace(dir) }
}

module.exports = { tempLeaseDir, leaseNamespace, leaseEnv }
