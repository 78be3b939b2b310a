'use strict'

// Every loaded copy of snowid in one process makes unique ids and decodes correctly, used in turn with another copy:
// the package required again after a purge of `require.cache`, loaded in two `vm` realms, and installed twice (each
// copy with its own binary, or with one binary file for both). Each case runs fixtures/reload-copies.js in a child
// process, which writes every id to files; here they are counted by sorting.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { countDuplicates, readIds, spawnNode, runNode, wasiSkip } = require('./helpers.js')

const ROOT = path.resolve(__dirname, '..')
const FIXTURE = path.join(__dirname, 'fixtures', 'reload-copies.js')
// The copies are made of the native binary: the WASI build has no such file.
const NATIVE = wasiSkip('the copies are made of the native binary')

const temps = []
test.after(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true })
})

function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-reload-'))
  temps.push(dir)
  return dir
}

/** The native binary this package loads here. */
let binary = null
function nativeFile() {
  if (binary !== null) return binary
  const found = spawnNode(['-p', "require('.'); Object.keys(require.cache).find((k) => k.endsWith('.node'))"])
  assert.equal(found.status, 0, found.stderr)
  binary = found.stdout.trim()
  return binary
}

/** A copy of the package's files in `dir`, with the binary beside them when `withBinary`. */
function copyPackage(dir, withBinary) {
  fs.mkdirSync(dir, { recursive: true })
  for (const f of ['package.json', 'index.js', 'binding.js']) fs.copyFileSync(path.join(ROOT, f), path.join(dir, f))
  fs.cpSync(path.join(ROOT, 'lib'), path.join(dir, 'lib'), { recursive: true })
  const file = nativeFile()
  if (withBinary) fs.copyFileSync(file, path.join(dir, path.basename(file)))
  return dir
}

/** Runs the fixture for `how` (with the copies' folders `dirs`), and reads what it wrote. */
function run(how, ...dirs) {
  const out = tempDir()
  const r = spawnNode([FIXTURE, how, out, ...dirs])
  assert.equal(r.status, 0, `the child failed (${r.signal ?? r.status}):\n${r.stderr}`)
  const read = source => new BigInt64Array(new Uint8Array(fs.readFileSync(path.join(out, `${source}.bin`))).buffer)
  const ids = { a: read('a'), b: read('b'), snowflakeA: read('snowflakeA'), snowflakeB: read('snowflakeB') }
  const decodes = JSON.parse(fs.readFileSync(path.join(out, 'decodes.json'), 'utf8'))
  const configs = JSON.parse(fs.readFileSync(path.join(out, 'configs.json'), 'utf8'))
  return { ids, decodes, configs }
}

/** The worker and datacenter ids the layout of `config` puts in `id`. */
function identityOf(config, id) {
  const low = BigInt(config.sequenceBits + config.clockBackBits)
  const workerId = Number((id >> low) & ((1n << BigInt(config.workerBits)) - 1n))
  const datacenterId = Number((id >> (low + BigInt(config.workerBits))) & ((1n << BigInt(config.datacenterBits)) - 1n))
  return { datacenterId, workerId }
}

function check({ ids, decodes, configs }) {
  // Every source made ids: 20 rounds of nextIds(3), nextIds(1..64) and the rest, at least.
  for (const [source, list] of Object.entries(ids)) assert.ok(list.length > 40_000, `${source}: ${list.length} ids`)
  const all = new BigInt64Array(Object.values(ids).reduce((n, l) => n + l.length, 0))
  let at = 0
  for (const list of Object.values(ids)) {
    all.set(list, at)
    at += list.length
  }
  all.sort()
  let duplicates = 0
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) duplicates++
  assert.equal(duplicates, 0, `${duplicates} duplicates in ${all.length} ids`)
  // Each source's ids are its own generator's.
  const [a, b] = configs
  const expected = {
    a: { datacenterId: a.datacenterId, workerId: a.workerId },
    b: { datacenterId: b.datacenterId, workerId: b.workerId },
    snowflakeA: { datacenterId: a.snowflake.datacenterId, workerId: 9 },
    snowflakeB: { datacenterId: b.snowflake.datacenterId, workerId: 10 },
  }
  for (const [source, list] of Object.entries(ids)) {
    const wrong = list.find(id => {
      const found = identityOf(a, id)
      return found.workerId !== expected[source].workerId || found.datacenterId !== expected[source].datacenterId
    })
    assert.equal(
      wrong,
      undefined,
      `${source}: an id of another generator, ${wrong} (${JSON.stringify(wrong === undefined ? null : identityOf(a, wrong))})`,
    )
  }
  // Every decode, by each copy's module and Snowflake, of a bigint and of a string, gave the id's fields.
  assert.ok(decodes.length >= 40)
  for (const d of decodes) assert.deepEqual(d.got, d.want, `${d.copy}'s ${d.by} of a ${d.form}`)
}

test('a copy loaded before a purge of require.cache and the copy loaded after it, used in turn', NATIVE, () => {
  check(run('purge'))
})

test('copies loaded in two vm realms of one thread, each by its own require, used in turn', NATIVE, () => {
  check(run('realms'))
})

test('two installed copies of the package, each with its own binary, used in turn', NATIVE, () => {
  const dir = tempDir()
  const r = run('copies', copyPackage(path.join(dir, 'a'), true), copyPackage(path.join(dir, 'b'), true))
  check(r)
  // Two binaries: two default generators, which took two slots of the one lease directory.
  assert.notEqual(r.configs[0].workerId, r.configs[1].workerId)
})

test(
  'two installed copies of the package whose binaries are one file (hard links, as a store of packages makes them), used in turn',
  NATIVE,
  () => {
    const dir = tempDir()
    const a = copyPackage(path.join(dir, 'a'), true)
    const b = copyPackage(path.join(dir, 'b'), false)
    const name = path.basename(nativeFile())
    fs.linkSync(path.join(a, name), path.join(b, name))
    const r = run('copies', a, b)
    check(r)
    // One binary, opened once: one default generator, whatever copy asks it.
    assert.equal(r.configs[0].workerId, r.configs[1].workerId)
  },
)

test(
  'three generations loaded by the hot-reload snippet, in the main thread and in a worker_thread at once, used in turn',
  NATIVE,
  () => {
    const file = path.join(tempDir(), 'ids.bin')
    const r = spawnNode([path.join(__dirname, 'fixtures', 'reload-generations.js'), file])
    assert.equal(r.status, 0, `the child failed (${r.signal ?? r.status}):\n${r.stderr}`)
    const out = JSON.parse(r.stdout)
    assert.deepEqual(out.wrong, [], `${out.wrongCount} wrong results`)
    const ids = new BigInt64Array(new Uint8Array(fs.readFileSync(file)).buffer)
    // Per thread: 6 rounds (generation 0 thrice, 1 twice, 2 once) of 2 * (1 + ... + 64) ids and one more.
    assert.equal(ids.length, 2 * 6 * (2 * 2080 + 1))
    assert.equal(out.ids, ids.length)
    const { dups, total } = countDuplicates([ids])
    assert.equal(dups, 0, `${dups} duplicates in ${total} ids`)
  },
)

// The WASI build's claims (lib/wasi-threads.js): each load of its binding instantiates the wasm module afresh, with
// generators of its own, so a second load in one thread is refused a worker id the first load holds, as another
// thread would be. The claims are plain JS over the binding object, so this runs on any build.
test('a second load of the package in one thread is refused a WASI claim the first load holds', () => {
  const r = runNode(`
    const file = ${JSON.stringify(path.join(ROOT, 'lib', 'wasi-threads.js'))}
    const config = { epoch: 1580486400000, timestampBits: 41, datacenterBits: 3, workerBits: 5, clockBackBits: 2, sequenceBits: 12, datacenterId: 0, workerId: 3 }
    const attempt = (threads, c) => { try { threads.claim(c); return 'ok' } catch (e) { return e.code + ': ' + e.message } }
    const first = require(file)
    const out = [attempt(first, config), attempt(first, config)]
    Object.keys(require.cache).forEach((k) => delete require.cache[k])
    const second = require(file)
    out.push(attempt(second, config), attempt(second, { ...config, workerId: 4 }), attempt(first, config))
    console.log(JSON.stringify(out))
  `)
  assert.equal(r.status, 0, r.stderr)
  const [first, again, second, other, firstAgain] = JSON.parse(r.stdout)
  assert.deepEqual([first, again, other, firstAgain], ['ok', 'ok', 'ok', 'ok'])
  assert.match(
    second,
    /^ERR_SNOWID_WORKER_ID_IN_USE: workerId 3 \(datacenterId 0\) in the main thread: .*another copy loaded in this thread/,
  )
})

test(
  'two installed copies with binaries of their own, leases off and one worker id: no duplicate, or the second is refused',
  NATIVE,
  () => {
    const dir = tempDir()
    const a = copyPackage(path.join(dir, 'a'), true)
    const b = copyPackage(path.join(dir, 'b'), true)
    // Each call's ids go to a file (their BigInt64Array's bytes), or its error's code to stdout.
    const r = spawnNode(
      [
        '-e',
        `const fs = require('node:fs')
        const [a, b] = [require(process.argv[1]), require(process.argv[2])]
        const out = []
        for (const [i, copy] of [a, b, a, b].entries()) {
          try {
            fs.writeFileSync(process.argv[3] + i, new Uint8Array(copy.nextIds(50000).buffer))
            out.push(i)
          } catch (e) { out.push(e.code) }
        }
        console.log(JSON.stringify(out))`,
        a,
        b,
        path.join(dir, 'ids-'),
      ],
      { SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '3', SNOWID_SINGLE_INSTANCE: 'true' },
    )
    assert.equal(r.status, 0, r.stderr)
    const [a1, b1, a2, b2] = JSON.parse(r.stdout).map(x =>
      typeof x === 'number' ? readIds(path.join(dir, `ids-${x}`)) : x,
    )
    assert.ok(a1 instanceof BigInt64Array && a2 instanceof BigInt64Array, 'the first copy issues ids')
    if (typeof b1 === 'string') {
      // Refused, as another process would be with leases on.
      assert.deepEqual([b1, b2], ['ERR_SNOWID_WORKER_ID_IN_USE', 'ERR_SNOWID_WORKER_ID_IN_USE'])
      return
    }
    const { dups, total } = countDuplicates([a1, b1, a2, b2])
    assert.equal(dups, 0, `${dups} duplicates in ${total} ids`)
  },
)
