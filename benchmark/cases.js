'use strict'

// The benchmark's cases. Each `make()` returns a function producing the next id (or, for batches, the next batch;
// for the decode and constructor cases, one result) and is called once per process. `kind` says how to read an id
// for the correctness checks (`none`: not a generator, nothing to check); `batch` is the number of ids one call
// produces; `env` is added to the case's process environment; `threads: false` leaves out the check across threads.

const crypto = require('node:crypto')
const { isMainThread } = require('node:worker_threads')

// Below the cap: a layout whose 22-bit sequence (4.2M ids per ms) never makes a generator wait, so the figure is
// the cost of a call. Same 41-bit timestamp and epoch as the default layout.
const WIDE = { datacenterBits: 0, workerBits: 0, clockBackBits: 0, sequenceBits: 22 }
const WIDE_ARTICLE = { datacenterIdBits: 0, workerIdBits: 0, tsBackBits: 0, sequenceBits: 22 }

function snowid() {
  return require('..')
}

/**
 * The process-wide generator with the wide layout: configured by the case's main thread before anything reads the
 * configuration (config() leases a slot in the default layout's id space, which configure() may then no longer
 * leave); the worker_threads of the correctness check share it.
 */
function wideModule() {
  const s = snowid()
  if (isMainThread) s.configure(WIDE)
  return s
}

// Ids of the default layout to decode, the same in every process: 1,024 distinct ones, taken in turn. One id
// decoded over and over would let V8 fold a pure-JS decoder's bigint arithmetic into constants (it made
// @sapphire/snowflake's deconstruct look about 5× faster than it is on ids that vary).
const SAMPLE_IDS = Array.from({ length: 1024 }, (_, i) => 901748290000000000n + BigInt(i) * 4194304n + BigInt(i % 4096))
/** A function that gives the next sample id at each call. */
function sampleIds() {
  let i = 0
  return () => SAMPLE_IDS[i++ & 1023]
}

/** The sample ids in 16 hex digits, taken in turn as `sampleIds` takes the ids. */
const SAMPLE_TEXTS = SAMPLE_IDS.map(id => id.toString(16).padStart(16, '0'))
function sampleTexts() {
  let i = 0
  return () => SAMPLE_TEXTS[i++ & 1023]
}

/** The WASI build, forced: no native binary is loaded (explicit worker id: WASI has no host lease). */
const WASI_ENV = {
  NAPI_RS_FORCE_WASI: 'error',
  SNOWID_LEASE: 'off',
  SNOWID_WORKER_ID: '0',
  NODE_OPTIONS: '--disable-warning=ExperimentalWarning',
}

function article(opts) {
  const { ArticleSnowflake } = require('./article.js')
  return new ArticleSnowflake({ datacenterId: 0, workerId: 0, ...opts })
}

const cases = [
  // At the cap: the default layout, 4,096 ids per ms per generator.
  {
    name: 'snowid nextId()',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const s = snowid()
      return () => s.nextId()
    },
  },
  {
    name: 'snowid nextIdString()',
    regime: 'cap',
    kind: 'string',
    make: () => {
      const s = snowid()
      return () => s.nextIdString()
    },
  },
  {
    name: 'snowid gen.nextId()',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const g = new (snowid().Snowflake)()
      return () => g.nextId()
    },
  },
  {
    name: 'article nextId() (BigInt, pure JS)',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const a = article()
      return () => a.nextId()
    },
  },
  {
    name: 'article nextId().toString()',
    regime: 'cap',
    kind: 'string',
    make: () => {
      const a = article()
      return () => a.nextId().toString()
    },
  },
  {
    name: '@sapphire/snowflake generate()',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const { Snowflake } = require('@sapphire/snowflake')
      const s = new Snowflake(1580486400000n)
      return () => s.generate()
    },
  },
  {
    name: 'flake-idgen next() (retried when it throws)',
    regime: 'cap',
    kind: 'buffer',
    make: () => {
      const FlakeId = require('flake-idgen')
      const f = new FlakeId({ datacenter: 0, worker: 0 })
      return () => {
        for (;;) {
          try {
            return f.next()
          } catch {
            // It throws past 4,096 ids per ms instead of waiting; a caller has to retry.
          }
        }
      }
    },
  },
  {
    name: 'nodejs-snowflake getUniqueID()',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const { Snowflake } = require('nodejs-snowflake')
      const s = new Snowflake({ custom_epoch: 1580486400000, instance_id: 0 })
      return () => s.getUniqueID()
    },
  },
  {
    name: 'snowflakify nextId()',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const S = require('snowflakify').default
      const s = new S()
      return () => s.nextId()
    },
  },
  {
    name: 'simpleflakes simpleflake()',
    regime: 'cap',
    kind: 'bigint',
    make: () => {
      const s = require('simpleflakes')
      return () => s.simpleflake()
    },
  },
  {
    name: 'uuid v7() (128-bit, not a snowflake)',
    regime: 'ref',
    kind: 'uuid',
    make: () => {
      const u = require('uuid')
      return () => u.v7()
    },
  },
  { name: 'hyperid() (not time-sorted)', regime: 'ref', kind: 'opaque', make: () => require('hyperid')() },
  { name: 'crypto.randomUUID() (random)', regime: 'ref', kind: 'opaque', make: () => () => crypto.randomUUID() },

  // Below the cap: per-call cost.
  {
    name: 'snowid nextId()',
    regime: 'below',
    kind: 'bigint',
    make: () => {
      const s = wideModule()
      return () => s.nextId()
    },
  },
  {
    name: 'snowid nextIdString()',
    regime: 'below',
    kind: 'string',
    make: () => {
      const s = wideModule()
      return () => s.nextIdString()
    },
  },
  {
    name: 'snowid gen.nextId()',
    regime: 'below',
    kind: 'bigint',
    make: () => {
      const g = new (snowid().Snowflake)(WIDE)
      return () => g.nextId()
    },
  },
  {
    name: 'snowid gen.nextIdString()',
    regime: 'below',
    kind: 'string',
    make: () => {
      const g = new (snowid().Snowflake)(WIDE)
      return () => g.nextIdString()
    },
  },
  {
    name: 'article nextId() (BigInt, pure JS)',
    regime: 'below',
    kind: 'bigint',
    make: () => {
      const a = article(WIDE_ARTICLE)
      return () => a.nextId()
    },
  },
  {
    name: 'article nextId().toString()',
    regime: 'below',
    kind: 'string',
    make: () => {
      const a = article(WIDE_ARTICLE)
      return () => a.nextId().toString()
    },
  },

  {
    name: 'N-API floor: one call, one clock read, one BigInt',
    regime: 'below',
    kind: 'none',
    make: () => {
      const { floor, why } = require('./floor.js').floorAddon()
      if (!floor) throw new Error(why)
      return () => floor()
    },
  },
  // On WASI each thread needs a worker id of its own (a second thread with one gets ERR_SNOWID_WORKER_ID_IN_USE), so
  // there is no cross-thread check: `threads: false`.
  {
    name: 'snowid nextId(), WASI build',
    regime: 'below',
    kind: 'bigint',
    threads: false,
    env: WASI_ENV,
    make: () => {
      const s = wideModule()
      return () => s.nextId()
    },
  },
  {
    name: 'snowid nextIdString(), WASI build',
    regime: 'below',
    kind: 'string',
    threads: false,
    env: WASI_ENV,
    make: () => {
      const s = wideModule()
      return () => s.nextIdString()
    },
  },
  // Small batches, against as many single calls.
  ...[1, 2, 4].map(n => ({
    name: `snowid nextIds(${n}), per id`,
    regime: 'below',
    kind: 'bigint',
    batch: n,
    make: () => {
      const s = wideModule()
      return () => s.nextIds(n)
    },
  })),
  ...[1, 2, 4, 8].map(n => ({
    name: `snowid nextIdStrings(${n}), per id`,
    regime: 'below',
    kind: 'string',
    batch: n,
    make: () => {
      const s = wideModule()
      return () => s.nextIdStrings(n)
    },
  })),
  {
    name: 'snowid nextIdStrings(100), per id',
    regime: 'below',
    kind: 'string',
    batch: 100,
    make: () => {
      const s = wideModule()
      return () => s.nextIdStrings(100)
    },
  },

  // Reading ids, and making generators: the cost of one call.
  {
    name: 'snowid decode(id)',
    regime: 'call',
    kind: 'none',
    make: () => {
      const s = snowid()
      const id = sampleIds()
      return () => s.decode(id())
    },
  },
  {
    name: 'snowid gen.decode(id)',
    regime: 'call',
    kind: 'none',
    make: () => {
      const g = new (snowid().Snowflake)()
      const id = sampleIds()
      return () => g.decode(id())
    },
  },
  {
    name: 'snowid decode(id), WASI build',
    regime: 'call',
    kind: 'none',
    env: WASI_ENV,
    make: () => {
      const s = snowid()
      const id = sampleIds()
      return () => s.decode(id())
    },
  },
  {
    name: '@sapphire/snowflake deconstruct(id)',
    regime: 'call',
    kind: 'none',
    make: () => {
      const { Snowflake } = require('@sapphire/snowflake')
      const s = new Snowflake(1580486400000n)
      const id = sampleIds()
      return () => s.deconstruct(id())
    },
  },
  {
    name: 'snowid new Snowflake()',
    regime: 'call',
    kind: 'none',
    make: () => {
      const { Snowflake } = snowid()
      return () => new Snowflake()
    },
  },
  {
    name: 'snowid new Snowflake({ workerId: 1, lease: false })',
    regime: 'call',
    kind: 'none',
    make: () => {
      const { Snowflake } = snowid()
      return () => new Snowflake({ workerId: 1, lease: false })
    },
  },
  {
    name: 'snowid new Snowflake({ workerId: i % 32, lease: false })',
    regime: 'call',
    kind: 'none',
    make: () => {
      const { Snowflake } = snowid()
      let i = 0
      return () => new Snowflake({ workerId: i++ % 32, lease: false })
    },
  },
  {
    name: '@sapphire/snowflake new Snowflake(epoch)',
    regime: 'call',
    kind: 'none',
    make: () => {
      const { Snowflake } = require('@sapphire/snowflake')
      return () => new Snowflake(1580486400000n)
    },
  },

  // Ids as text, against the plain-JS hex equivalent.
  {
    name: "snowid encode(id, 'hex')",
    regime: 'call',
    kind: 'none',
    make: () => {
      const s = snowid()
      const id = sampleIds()
      return () => s.encode(id(), 'hex')
    },
  },
  {
    name: "plain JS id.toString(16).padStart(16, '0')",
    regime: 'call',
    kind: 'none',
    make: () => {
      const id = sampleIds()
      return () => id().toString(16).padStart(16, '0')
    },
  },
  {
    name: "snowid parse(text, 'hex')",
    regime: 'call',
    kind: 'none',
    make: () => {
      const s = snowid()
      const text = sampleTexts()
      return () => s.parse(text(), 'hex')
    },
  },
  {
    name: "plain JS BigInt('0x' + text)",
    regime: 'call',
    kind: 'none',
    make: () => {
      const text = sampleTexts()
      return () => BigInt('0x' + text())
    },
  },
  {
    name: "snowid encode(id, 'base62')",
    regime: 'call',
    kind: 'none',
    make: () => {
      const s = snowid()
      const id = sampleIds()
      return () => s.encode(id(), 'base62')
    },
  },

  // Bulk: batches of 4,096 with a lead large enough not to wait.
  {
    name: 'snowid nextIds(4096)',
    regime: 'bulk',
    kind: 'bigint',
    batch: 4096,
    make: () => {
      const g = new (snowid().Snowflake)({ maxLeadMs: 60000 })
      return () => g.nextIds(4096)
    },
  },
  {
    name: 'snowid nextIdStrings(4096)',
    regime: 'bulk',
    kind: 'string',
    batch: 4096,
    make: () => {
      const g = new (snowid().Snowflake)({ maxLeadMs: 60000 })
      return () => g.nextIdStrings(4096)
    },
  },
]

cases.forEach((c, i) => {
  c.id = i
})

module.exports = { cases, WIDE }
