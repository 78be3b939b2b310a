'use strict'

// Runs one hot call `n` times, for `npm run bench:instr` (under callgrind). Below the cap (22-bit sequence), so no
// call waits. node benchmark/instr-case.js <case> <n>

// benchmark/instr.js gives each run a lease directory of its own, and removes it.
if (!process.env.SNOWID_LEASE_DIR)
  throw new Error('instr-case.js: expected SNOWID_LEASE_DIR, set by benchmark/instr.js')
const WIDE = { datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 22 }

// Each call is written as users write it (\`snowid.nextId()\`): calling an extracted function with no receiver
// takes a slower path in V8.
const makers = {
  // benchmark/floor.c: one raw N-API call, one clock read, one BigInt.
  'N-API floor()': () => {
    const { floor, why } = require('./floor.js').floorAddon()
    if (!floor) throw new Error(why)
    return () => floor()
  },
  'nextId()': () => {
    const s = require('..')
    s.configure(WIDE)
    return () => s.nextId()
  },
  'nextIdString()': () => {
    const s = require('..')
    s.configure(WIDE)
    return () => s.nextIdString()
  },
  'gen.nextId()': () => {
    const g = new (require('..').Snowflake)(WIDE)
    return () => g.nextId()
  },
  // 1,024 distinct ids, taken in turn: one id decoded over and over would let V8 fold most of the work away.
  'decode(id)': () => {
    const s = require('..')
    s.configure(WIDE)
    const ids = s.nextIds(1024)
    let i = 0
    return () => s.decode(ids[i++ & 1023])
  },
  'nextIds(1)': () => {
    const s = require('..')
    s.configure(WIDE)
    return () => s.nextIds(1)
  },
  'nextIds(2)': () => {
    const s = require('..')
    s.configure(WIDE)
    return () => s.nextIds(2)
  },
  'article nextId()': () => {
    const { ArticleSnowflake } = require('./article.js')
    const a = new ArticleSnowflake({
      datacenterId: 0,
      workerId: 0,
      datacenterIdBits: 0,
      workerIdBits: 0,
      tsBackBits: 0,
      sequenceBits: 22,
    })
    return () => a.nextId()
  },
  'article nextId().toString()': () => {
    const { ArticleSnowflake } = require('./article.js')
    const a = new ArticleSnowflake({
      datacenterId: 0,
      workerId: 0,
      datacenterIdBits: 0,
      workerIdBits: 0,
      tsBackBits: 0,
      sequenceBits: 22,
    })
    return () => a.nextId().toString()
  },
}

const [name, n] = process.argv.slice(2)
const next = makers[name]()

// The loop lives in a function run in bursts, so V8 optimizes it normally (a top-level loop would wait for
// on-stack replacement, and JIT work would land in the measured calls). The same warm-up runs for every n, so the
// difference between two values of n is the calls alone.
function burst(k) {
  let sink = 0
  const ring = new Array(64)
  for (let i = 0; i < k; i++) ring[i & 63] = next()
  for (const v of ring)
    sink ^=
      typeof v === 'bigint'
        ? Number(v & 1n)
        : v instanceof BigInt64Array
          ? Number(v[v.length - 1] & 1n)
          : typeof v === 'object'
            ? v.sequence ^ v.id.length
            : v === undefined
              ? 0
              : 1
  return sink
}
let sink = 0
for (let i = 0; i < 2000; i++) sink ^= burst(1000)
for (let i = 0; i < Number(n) / 1000; i++) sink ^= burst(1000)
if (sink === 2) console.log(sink)
