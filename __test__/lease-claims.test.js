'use strict'

// Claims the OS refuses never count as given: two copies of the package with binaries of their own, in one process,
// on one worker id with leases off, where the OS will not make the claim that keeps the identity to one copy (no file
// descriptor left under a low `ulimit -n`), or past the most identities a process claims. Either copy may be refused;
// no two issue ids of one identity. Ids are counted by sorting one BigInt64Array.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { cleanEnv, countDuplicates, readIds, spawnNode, wasiSkip } = require('./helpers.js')

const ROOT = path.resolve(__dirname, '..')
// The copies are made of the native binary, and `ulimit` is a POSIX shell's.
const NATIVE = process.platform === 'win32' ? { skip: 'ulimit is a POSIX shell builtin' } : wasiSkip('no binary')

// Every test makes copies of its own: each folder made is removed after the file's tests.
let temp = null
const temps = []
test.after(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true })
})

/** Two copies of the package, each with a binary file of its own: their folders. */
function twoCopies() {
  temp = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-claims-'))
  temps.push(temp)
  const found = spawnNode(['-p', "require('.'); Object.keys(require.cache).find((k) => k.endsWith('.node'))"])
  assert.equal(found.status, 0, found.stderr)
  const binary = found.stdout.trim()
  return ['a', 'b'].map(name => {
    const dir = path.join(temp, name)
    fs.mkdirSync(dir)
    for (const f of ['package.json', 'index.js', 'binding.js', 'lib']) {
      fs.cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true })
    }
    fs.copyFileSync(binary, path.join(dir, path.basename(binary)))
    return dir
  })
}

/**
 * Runs `code` in Node under `sh -c 'ulimit -n <limit>'`, with the copies' folders as `process.argv[1]` and `[2]` and
 * a folder for ids as `process.argv[3]`, leases off and worker id 3: its output, parsed, with what each copy wrote.
 */
function underLimit(limit, code, env = { SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '3', SNOWID_SINGLE_INSTANCE: 'true' }) {
  const [a, b] = twoCopies()
  const out = path.join(temp, 'ids-')
  env = cleanEnv({ SNOWID_LEASE_DIR: path.join(temp, 'leases'), ...env })
  const r = spawnSync(
    'sh',
    ['-c', `ulimit -n ${limit} && exec "$0" -e "$1" "$2" "$3" "$4"`, process.execPath, code, a, b, out],
    { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 },
  )
  assert.equal(r.status, 0, `the child failed (${r.signal ?? r.status}):\n${r.stderr}`)
  return { result: JSON.parse(r.stdout), out }
}

test(
  'two copies in one process, no file descriptor left for the claim: one identity is never issued twice',
  NATIVE,
  () => {
    const { result, out } = underLimit(
      200,
      `const fs = require('node:fs')
    const copies = [require(process.argv[1]), require(process.argv[2])]
    // Every descriptor the process may open, taken: the identity's claim (a socket) cannot be made.
    const taken = []
    try { for (;;) taken.push(fs.openSync('/dev/null', 'r')) } catch (e) { if (e.code !== 'EMFILE') throw e }
    const first = copies.map((copy) => { try { return copy.nextId() } catch (e) { return e } })
    for (const fd of taken) fs.closeSync(fd)
    // The copies that issued go on in turn, 64 ids at a time, as two parts of one program would.
    const issuing = copies.filter((_, i) => !(first[i] instanceof Error))
    const ids = issuing.map(() => new BigInt64Array(64 * 1000))
    for (let k = 0; k < 1000; k++) issuing.forEach((copy, i) => ids[i].set(copy.nextIds(64), 64 * k))
    const result = first.map((got, i) => {
      if (got instanceof Error) return { code: got.code, message: got.message }
      const file = process.argv[3] + i
      fs.writeFileSync(file, new Uint8Array(ids[issuing.indexOf(copies[i])].buffer))
      return { file, first: String(got) }
    })
    console.log(JSON.stringify({ taken: taken.length, result }))`,
    )
    assert.ok(result.taken > 100, `only ${result.taken} descriptors were taken`)
    const ids = result.result.filter(r => r.file).map(r => readIds(r.file))
    const firsts = result.result.filter(r => r.file).map(r => [BigInt(r.first)])
    const { dups, total } = countDuplicates([...ids, ...firsts])
    assert.equal(dups, 0, `${dups} duplicates in ${total} ids: ${JSON.stringify(result.result)}`)
    // Neither copy could claim the identity: both were refused, with a code that names the limit.
    for (const r of result.result) {
      assert.equal(r.code, 'ERR_SNOWID_CLAIM_REFUSED', JSON.stringify(r))
      assert.match(r.message, /limit of open files \(RLIMIT_NOFILE: raise it with `ulimit -n`/, r.message)
    }
    fs.rmSync(out + '0', { force: true })
    fs.rmSync(out + '1', { force: true })
  },
)

test('two copies in one process, more identities than a process claims: none is issued by both', NATIVE, () => {
  const { result } = underLimit(
    4096,
    `const copies = [require(process.argv[1]), require(process.argv[2])]
    // 1,100 identities (worker ids 0 to 31 of datacenter ids 0 to 7, over five sequence widths), made by each copy
    // in turn: the ids each copy issued, by identity, and its refusals, by code.
    const made = copies.map(() => ({ issued: {}, refused: {} }))
    for (const [i, copy] of copies.entries()) {
      let n = 0
      for (let sequenceBits = 8; sequenceBits <= 12 && n < 1100; sequenceBits++) {
        for (let datacenterId = 0; datacenterId < 8 && n < 1100; datacenterId++) {
          for (let workerId = 0; workerId < 32 && n < 1100; workerId++, n++) {
            const key = sequenceBits + '/' + datacenterId + '/' + workerId
            try {
              const g = new copy.Snowflake({ datacenterId, workerId, sequenceBits, lease: false })
              made[i].issued[key] = String(g.nextId())
            } catch (e) {
              made[i].refused[e.code] = (made[i].refused[e.code] ?? 0) + 1
              made[i].message = e.message
            }
          }
        }
      }
    }
    console.log(JSON.stringify(made))`,
  )
  const [a, b] = result
  const both = Object.keys(a.issued).filter(k => k in b.issued)
  assert.deepEqual(both, [], `${both.length} identities issued by both copies`)
  assert.equal(Object.keys(a.issued).length + (a.refused.ERR_SNOWID_CLAIM_REFUSED ?? 0), 1100)
  assert.equal(a.refused.ERR_SNOWID_CLAIM_REFUSED, 1100 - 1024, a.message)
  assert.match(a.message, /1024 identities/)
})

test('the host lease with no file descriptor left: refused, naming the limit', NATIVE, () => {
  const { result } = underLimit(
    200,
    `const fs = require('node:fs')
    const snowid = require(process.argv[1])
    const taken = []
    try { for (;;) taken.push(fs.openSync('/dev/null', 'r')) } catch (e) { if (e.code !== 'EMFILE') throw e }
    let got
    try { got = String(snowid.nextId()) } catch (e) { got = { code: e.code, message: e.message } }
    for (const fd of taken) fs.closeSync(fd)
    console.log(JSON.stringify(got))`,
    { SNOWID_WORKER_ID: '3', SNOWID_SINGLE_INSTANCE: 'true' },
  )
  assert.equal(result.code, 'ERR_SNOWID_CLAIM_REFUSED', JSON.stringify(result))
  assert.match(
    result.message,
    /^lease directory .*: opening it: expected the OS to grant it.*`ulimit -n`/,
    result.message,
  )
})
