'use strict'

const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')

/** A new, empty lease directory. */
function freshLeaseDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-test-'))
}

/**
 * The test process's environment without any variable snowid reads, plus a lease directory of its own (so tests
 * never meet each other's leases), plus `extra`.
 */
function cleanEnv(extra = {}) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) {
    if (key.startsWith('SNOWID_') || key === 'datacenterId' || key === 'workerId' || key === 'NODE_APP_INSTANCE') {
      delete env[key]
    }
  }
  return { ...env, SNOWID_LEASE_DIR: freshLeaseDir(), ...extra }
}

/** Runs `code` in a new Node process with `require('snowid')` resolving to this package. */
function runNode(code, extraEnv = {}, args = []) {
  const result = spawnSync(process.execPath, ['-e', code, ...args], {
    cwd: ROOT,
    env: cleanEnv(extraEnv),
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr }
}

/** Runs the CLI with `args`. */
function runCli(args, extraEnv = {}) {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'snowid.js'), ...args], {
    cwd: ROOT,
    env: cleanEnv(extraEnv),
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr }
}

/** Asserts that `fn` throws an error of the class named `name`, with `code`, and a message matching `message`. */
function expectError(fn, { name, code, message }) {
  assert.throws(fn, (err) => {
    assert.equal(err.constructor.name, name, err.message)
    assert.equal(err.code, code)
    if (message) assert.match(err.message, message)
    return true
  })
}

module.exports = { ROOT, cleanEnv, freshLeaseDir, runNode, runCli, expectError }
