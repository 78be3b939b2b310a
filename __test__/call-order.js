'use strict'

// The property test of the order of configuration calls, for __test__/call-order.test.js (a few rounds) and
// __test__/slow/call-order.test.js (many): in each round two processes start together, each with a random sequence of
// config(), configure(), new Snowflake() and its ids, the default generator's ids and (with a Redis) snowid/redis's
// configureWorkerId, over layouts of different id spaces, with a lease directory each or one between them. Every id is
// counted by its id space: none may appear twice, and every call either works or refuses with one of the codes that
// say why (another code is a failure). A seed makes a round again: SNOWID_CALL_ORDER_SEED=<seed> reruns a failure.

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const crypto = require('node:crypto')

const { ROOT, cleanEnv, countDuplicates, freshLeaseDir, readIds } = require('./helpers.js')

const FIXTURE = path.join(__dirname, 'fixtures', 'call-order.js')

// A: the default layout; E: the same with an epoch 3 ms later (the same id space: its ids are A's of 3 ms before);
// B: one slot; C: two slots; D: for the store leases only (its slots come from Redis, so no host lease may make ids in
// it).
const LAYOUTS = {
  A: {},
  E: { epoch: 1580486400003 },
  B: { datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 22 },
  C: { datacenterBits: 0, workerBits: 1, clockBackBits: 0, sequenceBits: 21 },
  D: { datacenterBits: 1, workerBits: 3, clockBackBits: 0, sequenceBits: 18 },
}
const HOST = ['A', 'E', 'B', 'C']

// The refusals a sequence may meet: the default generator configured after its first id; a slot leased in one id
// space, asked for in another; every slot of a layout held (by the other process, or by this one in another space).
const REFUSALS = ['ERR_SNOWID_ALREADY_CONFIGURED', 'ERR_SNOWID_ID_SPACE_CHANGED', 'ERR_SNOWID_NO_FREE_WORKER_ID']

/** mulberry32: a small seeded generator of numbers in [0, 1). */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A random sequence of calls: 3 to 7, the calls that set a configuration before those that make ids, mostly. */
function sequence(next, store) {
  const pick = list => list[Math.floor(next() * list.length)]
  const calls = []
  const n = 3 + Math.floor(next() * 5)
  for (let i = 0; i < n; i++) {
    const r = next()
    // With a store, the last 15% of the draws are its leases.
    const x = store ? r / 0.85 : r
    if (x < 0.25) calls.push({ call: 'config' })
    else if (x < 0.45) calls.push({ call: 'configure', layout: pick(HOST) })
    else if (x < 0.75) calls.push({ call: 'snowflake', layout: pick(HOST) })
    else if (x < 1) calls.push({ call: 'nextIds' })
    else calls.push({ call: 'configureWorkerId', layout: 'D' })
  }
  return calls
}

/** Starts one process of a round; resolves once it is ready, to `{ child, done }`, `done` resolving to its outcomes. */
function start(calls, env, out) {
  const child = spawn(process.execPath, [FIXTURE], {
    cwd: ROOT,
    env: { ...env, CALLS: JSON.stringify(calls), LAYOUTS: JSON.stringify(LAYOUTS), OUT: out, GEN_MS: '20' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', d => (stderr += d))
  const exited = new Promise(resolve => child.on('exit', code => resolve(code)))
  const line = prefix =>
    new Promise((resolve, reject) => {
      const look = () => {
        const at = stdout.split('\n').find(l => l.startsWith(prefix))
        if (at !== undefined) {
          child.stdout.off('data', onData)
          resolve(at.slice(prefix.length))
        }
      }
      const onData = d => {
        stdout += d
        look()
      }
      child.stdout.on('data', onData)
      exited.then(code => reject(new Error(`the process exited (${code}) before '${prefix}': ${stderr}`)))
      look()
    })
  return line('ready').then(() => ({ child, exited, done: line('done ').then(JSON.parse), stderr: () => stderr }))
}

/** One round of `seed`: two random sequences, with a lease directory each or one between them (see `pair`). */
function round(seed, { redisPort, namespace }) {
  const next = random(seed)
  const shared = next() < 0.5
  const plans = [sequence(next, redisPort !== undefined), sequence(next, redisPort !== undefined)]
  return pair(plans, { shared, redisPort, namespace })
}

/**
 * Runs the two sequences of calls `plans` in two processes at once, with one lease directory between them when
 * `shared`, else one each, in the lease namespace `namespace`. Returns `{ shared, plans, outcomes, dups }`, `dups` being
 * the duplicates found in each id space (by its widths).
 */
async function pair(
  plans,
  { shared, redisPort, namespace = `call-order-${process.pid}-${crypto.randomInt(2 ** 31)}` },
) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-order-'))
  const dirs = shared ? [freshLeaseDir(), null] : [freshLeaseDir(), freshLeaseDir()]
  const env = i =>
    cleanEnv({
      SNOWID_LEASE_DIR: dirs[i] ?? dirs[0],
      SNOWID_LEASE_NAMESPACE: namespace,
      // This machine may be a container: the warning of an identity no one chose is not what is tested here.
      SNOWID_SINGLE_INSTANCE: 'true',
      REDIS_PORT: redisPort === undefined ? '' : String(redisPort),
    })
  const runs = []
  try {
    for (let i = 0; i < 2; i++) runs.push(await start(plans[i], env(i), path.join(tmp, String(i))))
    for (const r of runs) r.child.stdin.write('go\n')
    const outcomes = []
    for (const r of runs) outcomes.push(await r.done)
    for (const r of runs) r.child.stdin.end()
    for (const r of runs) assert.equal(await r.exited, 0, r.stderr())
    const spaces = {}
    for (const name of fs.readdirSync(tmp).filter(n => n.endsWith('.ids'))) {
      const space = name.split('.')[1]
      spaces[space] = [...(spaces[space] ?? []), readIds(path.join(tmp, name))]
    }
    const dups = Object.fromEntries(Object.entries(spaces).map(([s, lists]) => [s, countDuplicates(lists).dups]))
    return { shared, plans, outcomes, dups }
  } finally {
    for (const r of runs) if (r.child.exitCode === null) r.child.kill('SIGKILL')
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

/**
 * Runs `rounds` rounds, from `seed` (SNOWID_CALL_ORDER_SEED, or a random one) on, and asserts 0 duplicates in every id
 * space and no outcome but a value or one of REFUSALS; the seed of a failing round is in the message.
 */
async function runRounds(rounds, { redisPort } = {}) {
  const first = Number(process.env.SNOWID_CALL_ORDER_SEED || crypto.randomInt(2 ** 31))
  const namespace = `call-order-${process.pid}-${first}`
  let made = 0
  for (let i = 0; i < rounds; i++) {
    const seed = (first + i) >>> 0
    const r = await round(seed, { redisPort, namespace })
    const context = `seed ${seed} (SNOWID_CALL_ORDER_SEED=${seed} reruns it): ${JSON.stringify(r)}`
    for (const [space, dups] of Object.entries(r.dups))
      assert.equal(dups, 0, `duplicates in id space ${space}, ${context}`)
    for (const o of r.outcomes.flat()) {
      if ('code' in o) assert.ok(REFUSALS.includes(o.code), `an unexpected outcome ${JSON.stringify(o)}, ${context}`)
      else made++
    }
  }
  return made
}

module.exports = { runRounds, pair, LAYOUTS }
