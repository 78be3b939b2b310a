#!/usr/bin/env node
'use strict'

const snowid = require('..')

const USAGE = `Usage:
  snowid [count]          print count ids (default 1), one per line
  snowid decode [id...]   print the fields of each id as JSON, one object per line; with no ids, read them
                          from stdin, separated by spaces or lines (snowid 3 | snowid decode)
  snowid config           print the effective configuration and where each value came from
  snowid leases           print who holds which worker id on this host: each slot with a lease file, its
                          process's pid, whether it still holds it (live) or has gone, since when, and its
                          command line
  snowid sql postgres     print the SQL that creates snowid/postgres's lease table, with a row per slot
  snowid sql mysql        print the SQL that creates snowid/mysql's lease table, with a row per slot
  snowid sql postgres --functions
  snowid sql mysql --functions
                          print SQL functions that read ids of the configured layout and epoch
                          (snowid_timestamp, snowid_worker_id, snowid_min_id_at, ...)
  snowid leases --redis <url> | --postgres <url> | --mysql <url> | --etcd <url>
                          print who holds each worker id of that store's lease (slot, host, pid, since, deadline);
                          a holder whose lease ran out is shown as gone. Uses the client installed beside snowid:
                          ioredis or redis, pg or postgres, mysql2, etcd3
  snowid sql postgres --generator
  snowid sql mysql --generator
                          print the SQL that installs snowid_next_id() (ids made by the database, for a
                          DEFAULT) on a slot of the lease table that the database holds for good; MariaDB only
                          for mysql

Options:
  --encoding <base62|base36|hex>
           print ids in that fixed-width text (with count), or read the ids given in it (with decode)
  --json   print one JSON value: an array of id strings, an array of decoded ids, the config object, or the SQL
  --table <name>
           with sql postgres or mysql, or leases --postgres or --mysql: the lease table's name,
           schema-qualified if you like (default: snowid_workers); the rows are those of the layout's
           datacenter and worker bits
  --datacenter-id <n>, --worker-id <n>
           with --generator: the slot the database holds (default: datacenter 0, the layout's highest worker id);
           --datacenter-id with leases and a store: only that datacenter's slots (default: every datacenter)
  --lease-dir <dir>
           with snowid leases: the lease directory to read (default: SNOWID_LEASE_DIR, else the generator's default)
  --help   print this help (also: snowid help)
  --version
           print snowid's version

The generator is configured from SNOWID_* environment variables (see the README).
Exit status: 0 on success, 1 for a bad id or configuration, 2 for bad usage.`

const MAX_COUNT = 1_000_000

class UsageError extends Error {}

// An argument as a message shows it: quoted, and cut to its first 40 characters (with its length) when longer, so
// that a pasted file does not fill the terminal.
const SHOWN = 40
function shown(text) {
  if (text.length <= SHOWN) return JSON.stringify(text)
  return `${JSON.stringify(text.slice(0, SHOWN))}... (${text.length} characters)`
}

const ENCODINGS = ['base62', 'base36', 'hex']

function parseEncoding(text) {
  if (text === undefined) throw new UsageError(`--encoding: expected one of ${ENCODINGS.join(', ')}, found nothing`)
  if (!ENCODINGS.includes(text)) {
    throw new UsageError(`--encoding: expected one of ${ENCODINGS.join(', ')}, found ${shown(text)}`)
  }
  return text
}

function parseArgs(argv) {
  const flags = new Set()
  const words = []
  let encoding
  let table
  let leaseDir
  let store
  const slot = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (['--json', '--help', '-h', '--functions', '--generator', '--version'].includes(arg))
      flags.add(arg === '-h' ? '--help' : arg)
    else if (arg === '--worker-id' || arg === '--datacenter-id') slot[arg] = parseSlot(arg, argv[++i])
    else if (arg.startsWith('--worker-id=') || arg.startsWith('--datacenter-id=')) {
      const at = arg.indexOf('=')
      slot[arg.slice(0, at)] = parseSlot(arg.slice(0, at), arg.slice(at + 1))
    } else if (arg === '--encoding') encoding = parseEncoding(argv[++i])
    else if (arg.startsWith('--encoding=')) encoding = parseEncoding(arg.slice('--encoding='.length))
    else if (arg === '--lease-dir') leaseDir = parseLeaseDir(argv[++i])
    else if (arg.startsWith('--lease-dir=')) leaseDir = parseLeaseDir(arg.slice('--lease-dir='.length))
    else if (STORES.includes(arg.split('=')[0].slice(2))) {
      if (store) throw new UsageError(`expected one store URL, found --${store.kind} and ${arg.split('=')[0]}`)
      const kind = arg.split('=')[0].slice(2)
      store = { kind, url: parseUrl(kind, arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i]) }
    } else if (arg === '--table') table = parseTable(argv[++i])
    else if (arg.startsWith('--table=')) table = parseTable(arg.slice('--table='.length))
    else if (arg.startsWith('-') && !/^-\d/.test(arg)) throw new UsageError(`unknown option ${shown(arg)}`)
    else words.push(arg)
  }
  return {
    json: flags.has('--json'),
    help: flags.has('--help'),
    version: flags.has('--version'),
    functions: flags.has('--functions'),
    generator: flags.has('--generator'),
    workerId: slot['--worker-id'],
    datacenterId: slot['--datacenter-id'],
    encoding,
    table,
    leaseDir,
    store,
    words,
  }
}

function parseLeaseDir(text) {
  if (text === undefined || text === '')
    throw new UsageError(`--lease-dir: expected a directory, found ${text === '' ? 'an empty path' : 'nothing'}`)
  return text
}

function parseSlot(name, text) {
  if (text === undefined || !/^\d{1,6}$/.test(text))
    throw new UsageError(
      `${name}: expected a non-negative integer, found ${text === undefined ? 'nothing' : shown(text)}`,
    )
  return Number(text)
}

function parseTable(text) {
  if (text === undefined || text === '')
    throw new UsageError(`--table: expected a table name, found ${text === '' ? 'an empty name' : 'nothing'}`)
  return text
}

// The stores whose lease `snowid leases` lists, as their options name them (--redis <url>, ...).
const STORES = ['redis', 'postgres', 'mysql', 'etcd']

function parseUrl(kind, text) {
  if (text === undefined || text === '' || text.startsWith('--'))
    throw new UsageError(`--${kind}: expected the store's URL, found ${text === undefined ? 'nothing' : shown(text)}`)
  return text
}

/** Errors that are the user's setup, not a bug: one line on stderr, exit status 1. */
class SetupError extends Error {}

// The clients `snowid leases` can use for each store, in the order tried, as the user installed them: found from the
// working directory first (the project's node_modules), then from snowid's own place.
const CLIENTS = { redis: ['ioredis', 'redis'], postgres: ['pg', 'postgres'], mysql: ['mysql2'], etcd: ['etcd3'] }

function loadClient(kind) {
  for (const name of CLIENTS[kind]) {
    for (const paths of [[process.cwd()], undefined]) {
      let file
      try {
        file = require.resolve(name, paths ? { paths } : undefined)
      } catch {
        continue
      }
      return { name, module: require(file) }
    }
  }
  const names = CLIENTS[kind]
  throw new SetupError(
    `leases --${kind}: expected ${names.join(' or ')} installed (the client snowid/${kind} uses), found ${names.length > 1 ? 'neither' : 'none'}: npm install ${names[0]}`,
  )
}

/** A connected client of `kind` to `url`, and how to close it: `{ client, close }`. */
async function connectClient(kind, url) {
  const { name, module } = loadClient(kind)
  if (name === 'ioredis') {
    const Redis = module.default ?? module.Redis ?? module
    const client = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: true })
    client.on('error', () => {})
    return { client, close: () => client.disconnect() }
  }
  if (name === 'redis') {
    const client = module.createClient({ url })
    client.on('error', () => {})
    await client.connect()
    return { client, close: () => client.disconnect() }
  }
  if (name === 'pg') {
    const client = new module.Client({ connectionString: url })
    client.on('error', () => {})
    await client.connect()
    return { client, close: () => client.end() }
  }
  if (name === 'postgres') {
    const client = module(url, { max: 1, onnotice: () => {} })
    return { client, close: () => client.end({ timeout: 1 }) }
  }
  if (name === 'mysql2') {
    const client = await require(
      require.resolve('mysql2/promise', { paths: [require.resolve('mysql2')] }),
    ).createConnection(url)
    return { client, close: () => client.end() }
  }
  const client = new module.Etcd3({ hosts: url })
  return { client, close: () => client.close() }
}

/**
 * `snowid leases --<store> <url>`: who holds each slot of that store's lease (listHolders), as a table or JSON. A
 * client's connection error is said in one line.
 */
async function printStoreLeases({ kind, url }, { json, table, datacenterId }) {
  if (table !== undefined && kind !== 'postgres' && kind !== 'mysql')
    throw new UsageError(`leases: --table applies to --postgres and --mysql only`)
  let connected
  try {
    connected = await connectClient(kind, url)
  } catch (err) {
    if (err instanceof SetupError) throw err
    // The URL as shown, without its password.
    const safe = url.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@')
    throw new SetupError(
      `leases --${kind}: cannot connect to ${shown(safe)}: ${String((err && err.message) || err).slice(0, 200)}`,
    )
  }
  let holders
  try {
    const options = { client: connected.client }
    if (table !== undefined) options.table = table
    if (datacenterId !== undefined) options.datacenterId = datacenterId
    holders = await require(`../lib/${kind}.js`).listHolders(options)
  } finally {
    await Promise.resolve(connected.close()).catch(() => {})
  }
  if (json) {
    process.stdout.write(JSON.stringify(holders) + '\n')
    return
  }
  const time = ms => (ms === null ? '-' : new Date(ms).toISOString())
  const rows = [['SLOT', 'STATE', 'HOST', 'PID', 'SINCE', 'DEADLINE', 'COMMAND']]
  for (const h of holders) {
    rows.push([
      `${h.datacenterId}/${h.workerId}`,
      h.live ? 'live' : 'gone',
      h.host ?? '(unknown)',
      h.pid === null ? '-' : String(h.pid),
      time(h.since),
      time(h.deadline),
      h.command ?? '-',
    ])
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map(r => r[c].length)))
  const text = rows.map(r =>
    r
      .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd(),
  )
  process.stdout.write(`${text.join('\n')}\n${holders.length === 0 ? '(no slot is held)\n' : ''}`)
}

const DIALECTS = ['postgres', 'mysql']

/**
 * `snowid sql <dialect>`: the lease table's DDL; with `--functions` the SQL functions that read ids of the layout;
 * with `--generator` the SQL that installs snowid_next_id().
 */
function printSql(rest, { json, functions, generator, table, workerId, datacenterId }) {
  const [dialect, ...extra] = rest
  if (!DIALECTS.includes(dialect)) {
    throw new UsageError(
      `sql: expected a dialect (${DIALECTS.join(', ')}), found ${dialect === undefined ? 'nothing' : shown(dialect)}`,
    )
  }
  if (extra.length > 0) throw new UsageError(`sql: expected one dialect, found also ${shown(extra[0])}`)
  if (functions && generator) throw new UsageError('sql: expected --functions or --generator, found both')
  if (functions && table !== undefined)
    throw new UsageError('sql: --table applies to the lease table, not to --functions')
  if (!generator && (workerId !== undefined || datacenterId !== undefined))
    throw new UsageError('sql: --worker-id and --datacenter-id apply to --generator only')
  // The layout and epoch as reading ids resolves them (SNOWID_* env, defaults): no worker id, no lease.
  const layout = layoutFromEnv()
  const sql = require('../lib/sql.js')
  let text
  if (functions) {
    text = dialect === 'postgres' ? sql.postgresFunctions(layout) : sql.mysqlFunctions(layout)
  } else if (generator) {
    const options = { table, workerId, datacenterId }
    for (const key of Object.keys(options)) if (options[key] === undefined) delete options[key]
    text = dialect === 'postgres' ? sql.postgresGenerator(layout, options) : sql.mysqlGenerator(layout, options)
  } else {
    text = require(`../lib/${dialect}.js`).tableSql(table, {
      datacenterBits: layout.datacenterBits,
      workerBits: layout.workerBits,
    })
  }
  process.stdout.write(json ? JSON.stringify(text) + '\n' : text.endsWith('\n') ? text : text + '\n')
}

// The layout and epoch that decode() reads ids with (the SNOWID_* widths and epoch, or the defaults), and nothing
// else: the worker id, the lease and the clock settings need not be valid for SQL that only reads ids. The epoch is
// id 0's timestamp, and each field's width follows from its value in the largest id.
function layoutFromEnv() {
  const max = snowid.decode((1n << 63n) - 1n)
  const bits = n => Math.log2(n + 1)
  const widths = {
    datacenterBits: bits(max.datacenterId),
    workerBits: bits(max.workerId),
    clockBackBits: bits(max.clockBack),
    sequenceBits: bits(max.sequence),
  }
  const timestampBits = 63 - Object.values(widths).reduce((a, b) => a + b, 0)
  return { epoch: snowid.decode(0n).timestamp, timestampBits, ...widths }
}

function parseCount(text) {
  if (text === undefined) return 1
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_COUNT) {
    throw new UsageError(`count: expected an integer from 1 to ${MAX_COUNT}, found ${shown(text)}`)
  }
  return Number(text)
}

function printIds(count, json, encoding) {
  const ids = []
  for (let i = 0; i < count; i++) ids.push(encoding ? snowid.encode(snowid.nextId(), encoding) : snowid.nextIdString())
  process.stdout.write(json ? JSON.stringify(ids) + '\n' : ids.join('\n') + '\n')
}

function printDecoded(ids, json, encoding) {
  const decoded = ids.map(id => snowid.decode(encoding ? snowid.parse(id, encoding) : id))
  const text = json ? JSON.stringify(decoded) : decoded.map(d => JSON.stringify(d)).join('\n')
  process.stdout.write(text + '\n')
}

// `snowid decode` with no ids: the ids on stdin, separated by any white space, read to the end before anything is
// printed, so that a bad id prints nothing, as with ids given as arguments. A terminal is not read: nothing was piped.
async function idsFromStdin() {
  if (process.stdin.isTTY) throw new UsageError('decode: expected ids as arguments or on stdin, found neither')
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  const ids = Buffer.concat(chunks).toString('utf8').split(/\s+/).filter(Boolean)
  if (ids.length === 0) throw new UsageError('decode: expected ids as arguments or on stdin, found neither')
  return ids
}

/** `snowid leases` without a store option: this host's slots (hostLeases), from its lease directory. */
function printLeases({ json, leaseDir }) {
  const slots = hostLeases(leaseDir)
  process.stdout.write(json ? JSON.stringify(slots) + '\n' : hostLeaseTable(slots))
}

/**
 * This host's slots with a lease file (workerSlots: the live holders, then those that have gone), of every
 * datacenter id of the layout, sorted by slot. Only the lease directory, its namespace and the layout are read from
 * the environment: a worker or datacenter id configured there would narrow the list, and the identity rule is about
 * making ids, which listing does not.
 */
function hostLeases(leaseDir) {
  const vars = {
    SNOWID_DATACENTER_ID: undefined,
    datacenterId: undefined,
    SNOWID_WORKER_ID: undefined,
    workerId: undefined,
    SNOWID_WORKER_ID_FROM: undefined,
    SNOWID_LEASE: undefined,
    SNOWID_SINGLE_INSTANCE: 'true',
  }
  if (leaseDir !== undefined) vars.SNOWID_LEASE_DIR = leaseDir
  const { recorded, gone } = snowid.workerSlots(vars)
  return [...recorded, ...gone].sort((a, b) => a.datacenterId - b.datacenterId || a.workerId - b.workerId)
}

// Control characters of a command line (C0, DEL, C1), as escapes: a table row stays one line, and the terminal's.
const visible = text => text.replace(/\p{Cc}/gu, c => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

function hostLeaseTable(slots) {
  if (slots.length === 0) return 'no slot of this host has a lease file\n'
  const rows = slots.map(s => [
    `${s.datacenterId}/${s.workerId}`,
    String(s.pid),
    s.live ? 'live' : 'gone',
    s.since === null ? '-' : new Date(s.since).toISOString(),
    s.command === null ? '-' : visible(s.command),
  ])
  const all = [['SLOT', 'PID', 'STATE', 'SINCE', 'COMMAND'], ...rows]
  const widths = all[0].map((_, i) => Math.max(...all.map(r => r[i].length)))
  return (
    all.map(r => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n') + '\n'
  )
}

function printConfig(json) {
  const config = snowid.config()
  if (json) {
    process.stdout.write(JSON.stringify(config, null, 2) + '\n')
    return
  }
  const rows = Object.entries(config)
    .filter(([key]) => key !== 'sources')
    .map(([key, value]) => {
      const source = config.sources[key]
      return `${key.padEnd(15)} ${String(value).padEnd(15)}${source ? ` (${source})` : ''}`.trimEnd()
    })
  process.stdout.write(rows.join('\n') + '\n')
}

async function main(argv) {
  const { json, help, version, functions, generator, workerId, datacenterId, encoding, table, leaseDir, store, words } =
    parseArgs(argv)
  const [command, ...rest] = words
  if (help || command === 'help') {
    process.stdout.write(USAGE + '\n')
    return
  }
  if (version) {
    process.stdout.write(require('../package.json').version + '\n')
    return
  }
  const sqlOnly = [
    [functions, '--functions'],
    [generator, '--generator'],
    [table !== undefined, '--table'],
    [workerId !== undefined, '--worker-id'],
    [datacenterId !== undefined, '--datacenter-id'],
  ].find(([given]) => given)
  if (command === 'leases') return leases(rest, { json, table, datacenterId, store, leaseDir, encoding, sqlOnly })
  if (store) throw new UsageError(`--${store.kind} applies to snowid leases only`)
  if (leaseDir !== undefined) throw new UsageError('--lease-dir applies to snowid leases only')
  if (command !== 'sql' && sqlOnly) throw new UsageError(`${sqlOnly[1]} applies to snowid sql only`)
  if (command === 'sql') {
    if (encoding) throw new UsageError('sql: --encoding applies to ids only')
    return printSql(rest, { json, functions, generator, table, workerId, datacenterId })
  }
  if (command === 'decode') return printDecoded(rest.length > 0 ? rest : await idsFromStdin(), json, encoding)
  if (command === 'config') {
    if (rest.length > 0) throw new UsageError(`config: expected no arguments, found ${shown(rest[0])}`)
    if (encoding) throw new UsageError('config: --encoding applies to ids only')
    return printConfig(json)
  }
  if (rest.length > 0) throw new UsageError(`expected at most one count, found ${shown(rest[0])}`)
  return printIds(parseCount(command), json, encoding)
}

/** `snowid leases`: with a store URL, that store's holders. */
function leases(rest, { json, table, datacenterId, store, leaseDir, encoding, sqlOnly }) {
  if (rest.length > 0) throw new UsageError(`leases: expected no arguments, found ${shown(rest[0])}`)
  if (encoding) throw new UsageError('leases: --encoding applies to ids only')
  if (store && leaseDir !== undefined)
    throw new UsageError(`leases: expected --lease-dir or --${store.kind}, found both`)
  if (store) {
    const misplaced = sqlOnly && !['--table', '--datacenter-id'].includes(sqlOnly[1]) ? sqlOnly[1] : null
    if (misplaced) throw new UsageError(`${misplaced} applies to snowid sql only`)
    return printStoreLeases(store, { json, table, datacenterId })
  }
  if (sqlOnly && sqlOnly[1] === '--table')
    throw new UsageError('leases: --table applies to --postgres and --mysql only')
  if (sqlOnly && sqlOnly[1] === '--datacenter-id')
    throw new UsageError('leases: --datacenter-id applies with --redis, --postgres, --mysql or --etcd only')
  if (sqlOnly) throw new UsageError(`${sqlOnly[1]} applies to snowid sql only`)
  return printLeases({ json, leaseDir })
}

// Output that cannot be written: a reader that went away (`snowid 1000000 | head -1`) ends the CLI quietly, as it
// does other Unix tools; any other failure (a full disk) is one line on stderr.
process.stdout.on('error', err => {
  if (err.code === 'EPIPE') process.exit(0)
  // Synchronously, since the process ends here.
  require('node:fs').writeSync(2, `snowid: cannot write the output: ${err.message} (${err.code})\n`)
  process.exit(1)
})

main(process.argv.slice(2)).catch(err => {
  if (err instanceof UsageError) {
    // One line: the whole help would push the mistake off the screen.
    process.stderr.write(`snowid: ${err.message} (snowid --help shows the usage)\n`)
    process.exitCode = 2
  } else if (err instanceof SetupError) {
    process.stderr.write(`snowid: ${err.message}\n`)
    process.exitCode = 1
  } else if (snowid.isSnowidError(err)) {
    process.stderr.write(`snowid: ${err.message} (${err.code})\n`)
    process.exitCode = 1
  } else {
    throw err
  }
})
