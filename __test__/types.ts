// Compiled by `npm run test:types` (tsc --noEmit, strict): a typing regression fails the tests.
import {
  nextId,
  nextIdString,
  nextIds,
  nextIdStrings,
  decode,
  config,
  configure,
  stats,
  workerSlots,
  Snowflake,
} from 'snowid'
import { timestampOf, minIdAt, maxIdAt, encode, parse, watch } from 'snowid'
import type { SnowidClockMessage, SnowidLeaseMessage, SnowidWaitMessage } from 'snowid'
import type {
  DecodedId,
  SnowflakeOptions,
  SnowidConfig,
  SnowidStats,
  HostLeaseStats,
  ConfigSource,
  OnClockBack,
  WorkerSlots,
} from 'snowid'
import { fork, workers } from 'snowid/cluster'
import type { Slot, Worker } from 'snowid/cluster'

const id: bigint = nextId()
const text: string = nextIdString()
const decoded: DecodedId = decode(id)
decode(text)
decode(12345)
const ts: number = decoded.timestamp
const idText: string = decoded.id
const fields: number[] = [decoded.datacenterId, decoded.workerId, decoded.clockBack, decoded.sequence]

const options: SnowflakeOptions = {
  datacenterId: 1,
  workerId: 3,
  clockBack: 0,
  epoch: '2020-02-01',
  datacenterBits: 3,
  workerBits: 5,
  clockBackBits: 2,
  sequenceBits: 12,
  onClockBack: 'wait',
  maxWaitMs: 100,
  maxLeadMs: 10,
  lease: true,
  leaseDir: '/tmp/snowid',
  leaseNamespace: 'test-1',
  workerIdIfTaken: 'next',
  workerIdFrom: 'statefulset',
  singleInstance: false,
}
configure(options)
configure()
const gen = new Snowflake(options)
new Snowflake()
new Snowflake({ epoch: new Date() })
new Snowflake({ epoch: 1580486400000 })
const many: BigInt64Array = gen.nextIds(4096)
const filled: BigInt64Array = gen.nextIds(new BigInt64Array(8))
const texts: string[] = gen.nextIdStrings(10)
const modMany: BigInt64Array = nextIds(2)
const modTexts: string[] = nextIdStrings(2)
// @ts-expect-error nextIdStrings takes a count only
gen.nextIdStrings(new BigInt64Array(2))
const a: bigint = gen.nextId()
const b: string = gen.nextIdString()
const d: DecodedId = gen.decode(a)

const c: SnowidConfig = config()
const source: ConfigSource = c.sources.workerId
const policy: OnClockBack = gen.config().onClockBack
const numbers: number[] = [c.epoch, c.expiresAt, c.maxIdsPerMs, c.timestampBits, c.maxWaitMs, c.maxLeadMs]
const leased: boolean = c.lease
const dir: string = c.leaseDir
const namespace: string | null = c.leaseNamespace
const namespaceSource: ConfigSource = c.sources.leaseNamespace
const ifTaken: 'fail' | 'next' = c.workerIdIfTaken
const from: 'statefulset' | null = c.workerIdFrom
const fromSources: ConfigSource[] = [c.sources.workerIdIfTaken, c.sources.workerIdFrom, c.sources.singleInstance]
const single: boolean = c.singleInstance
const where:
  | 'kubernetes'
  | 'ecs'
  | 'cloudrun'
  | 'nomad'
  | 'heroku'
  | 'fly'
  | 'lambda'
  | 'containerapps'
  | 'appservice'
  | 'azurefunctions'
  | 'appengine'
  | 'cloudfunctions'
  | 'render'
  | 'railway'
  | 'vercel'
  | 'netlify'
  | 'cloudfoundry'
  | 'container'
  | null = c.environment
const required: SnowidErrorCode = 'ERR_SNOWID_IDENTITY_REQUIRED'
const statefulset: ConfigSource = 'statefulset'
const leaseSource: ConfigSource = c.sources.datacenterId
// @ts-expect-error PM2's NODE_APP_INSTANCE is not read, so 'pm2' is no source
const pm2: ConfigSource = 'pm2'
const s: SnowidStats = stats()
const counters: number[] = [s.leadMs, s.clockBack, s.clockBackEvents, s.waits, s.markWrites, gen.stats().markWrites]
const waited: number[] = [s.sequenceWaits, s.sequenceWaitMs, s.markWaits, s.markWaitMs, s.clockWaits, s.clockWaitMs]
const stopWatching: () => void = watch({ intervalMs: 500 })
// @ts-expect-error intervalMs is a number
watch({ intervalMs: '500' })
const onWait = (m: SnowidWaitMessage): number => (m.reason === 'sequence' ? m.ms : m.calls)
const onClock = (m: SnowidClockMessage): number => m.clockBack + (m.event === 'refused' ? m.calls : m.steps)
// @ts-expect-error a refusal counts calls, not steps
const onRefused = (m: SnowidClockMessage): number => m.steps
const onLease = (m: SnowidLeaseMessage): number =>
  m.store === 'host'
    ? (m.generator?.stats().hostLease?.workerId ?? m.workerId)
    : m.event === 'moved'
      ? (m.previousWorkerId ?? -1)
      : m.lease.workerId
const refusals: number = s.clockBackRefusals
const host: HostLeaseStats | null = s.hostLease
const hostSlot: [number, number, number | null, string | null] | null = host && [
  host.datacenterId,
  host.workerId,
  host.requestedWorkerId,
  host.lost,
]
const slots: WorkerSlots = workerSlots({ SNOWID_DATACENTER_ID: '1' })
const recorded: number[] = slots.recorded.map(r => r.datacenterId + r.workerId + r.pid)
const holders: Array<[boolean, number | null, string | null, string | null]> = [...slots.recorded, ...slots.gone].map(
  r => [r.live, r.since, r.host, r.command],
)
const automatic: boolean = slots.automatic && slots.datacenterIdSource === 'lease'
const workerFrom: ConfigSource = slots.workerIdSource
const warning: string | null = slots.warning
const worker: Worker = fork({ PORT: '3000' })
const held: Map<Worker, Slot> = workers()
const slotOf: number | undefined = held.get(worker)?.datacenterId

// @ts-expect-error ids are bigints, never numbers
const wrong: number = nextId()
// @ts-expect-error onClockBack is one of 'bits' | 'wait' | 'throw'
new Snowflake({ onClockBack: 'ignore' })
// @ts-expect-error unknown options are refused
new Snowflake({ workerID: 3 })
// @ts-expect-error decode needs an id
decode()
// @ts-expect-error sources are 'option' | 'env' | 'lease' | 'statefulset' | 'default'
const badSource: 'cluster' = c.sources.workerId
// @ts-expect-error lease is a boolean option ('on' / 'off' are for SNOWID_LEASE)
new Snowflake({ lease: 'off' })
// @ts-expect-error workerIdIfTaken is 'fail' or 'next'
new Snowflake({ workerIdIfTaken: 'skip' })
// @ts-expect-error workerIdFrom is 'statefulset' only
new Snowflake({ workerIdFrom: 'hostname' })
// @ts-expect-error workerIdFrom may be null in a config
const fromText: string = c.workerIdFrom
// @ts-expect-error singleInstance is a boolean option ('true' / 'false' are for SNOWID_SINGLE_INSTANCE)
new Snowflake({ singleInstance: 'true' })
// @ts-expect-error environment is one of the environments snowid knows, or null
const whereText: 'docker' = c.environment
// @ts-expect-error fork's env holds strings
fork({ SNOWID_DATACENTER_ID: 1 })

export {
  many,
  filled,
  texts,
  modMany,
  modTexts,
  ts,
  idText,
  fields,
  b,
  d,
  source,
  policy,
  numbers,
  wrong,
  badSource,
  leased,
  dir,
  ifTaken,
  from,
  fromSources,
  fromText,
  single,
  where,
  required,
  whereText,
  pm2,
  statefulset,
  counters,
  recorded,
  worker,
  held,
}

const at: number = timestampOf(id)
const low: bigint = minIdAt(new Date())
const high: bigint = maxIdAt('2026-01-01')
minIdAt(Date.now())
const b62: string = encode(id, 'base62')
encode('123', 'hex')
const back: bigint = parse(b62, 'base62')
// @ts-expect-error: not an encoding
encode(id, 'base64')
const genAt: number = gen.timestampOf(id)
const genRange: bigint[] = [gen.minIdAt(at), gen.maxIdAt(new Date(at))]

import { acquireWorkerId, configureWorkerId, type RedisLease } from 'snowid/redis'
import type { RedisAcquireOptions, SnowidRedisError } from 'snowid/redis'
declare const ioredisLike: { call(command: string, ...args: Array<string | number>): Promise<unknown> }
const redisOptions: RedisAcquireOptions = {
  client: ioredisLike,
  datacenterId: 1,
  keyPrefix: 'app',
  ttlMs: 10000,
  waitMs: 5000,
  snowflake: { maxLeadMs: 5 },
}
async function useLease(): Promise<bigint> {
  const lease: RedisLease = await acquireWorkerId(redisOptions)
  lease.on('lost', (err: SnowidRedisError) => err.code)
  lease.on('renewed', ({ deadline }) => deadline + 1)
  const wid: number = lease.workerId
  const next: bigint = lease.snowflake.nextId()
  await lease.release()
  await configureWorkerId({ client: ioredisLike })
  // @ts-expect-error: the lease decides the worker id
  await acquireWorkerId({ client: ioredisLike, snowflake: { workerId: 3 } })
  return next + BigInt(wid)
}
useLease()

import * as mysqlLeases from 'snowid/mysql'
import type { MysqlAcquireOptions, SnowidMysqlError } from 'snowid/mysql'
declare const mysql2Pool: { query(text: string, values?: unknown[]): Promise<unknown> }
async function useMysqlLease(): Promise<bigint> {
  const options: MysqlAcquireOptions = { client: mysql2Pool, table: 'ids.snowid_workers', ttlMs: 10000 }
  const lease: mysqlLeases.MysqlLease = await mysqlLeases.acquireWorkerId(options)
  lease.on('lost', (err: SnowidMysqlError) => err.code === 'ERR_SNOWID_STORE_TABLE_INVALID')
  await lease.release()
  await mysqlLeases.configureWorkerId({ client: mysql2Pool })
  // @ts-expect-error: the lease decides the worker id
  await mysqlLeases.acquireWorkerId({ client: mysql2Pool, snowflake: { workerId: 3 } })
  return lease.snowflake.nextId()
}
useMysqlLease()
const mysqlDdl: string = mysqlLeases.tableSql('t', { workerBits: 6 })
export { mysqlDdl }

import * as etcdLeases from 'snowid/etcd'
import type { EtcdAcquireOptions, SnowidEtcdError } from 'snowid/etcd'
declare const etcd3Client: etcdLeases.EtcdClient
async function useEtcdLease(): Promise<bigint> {
  const options: EtcdAcquireOptions = { client: etcd3Client, keyPrefix: 'ids', ttlMs: 10000 }
  const lease: etcdLeases.EtcdLease = await etcdLeases.acquireWorkerId(options)
  lease.on('lost', (err: SnowidEtcdError) => err.code === 'ERR_SNOWID_ETCD_UNAVAILABLE')
  lease.on('renewFailed', (err: SnowidEtcdError) => err.code === 'ERR_SNOWID_STORE_NOT_REPLICATED')
  await lease.release()
  await etcdLeases.configureWorkerId({ client: etcd3Client })
  // @ts-expect-error: etcd has no table
  await etcdLeases.acquireWorkerId({ client: etcd3Client, table: 't' })
  return lease.snowflake.nextId()
}
useEtcdLease()
const redisWithReplicas: RedisAcquireOptions = { client: ioredisLike, replicas: 2 }
export { redisWithReplicas }

import { postgresFunctions } from 'snowid/sql'
const functionsSql: string = postgresFunctions(config()) + postgresFunctions(gen.config())
// @ts-expect-error: a layout is required
postgresFunctions()
export { functionsSql }

// Reading ids of another layout, without generating.
import { SnowflakeLayout } from 'snowid'
import type { LayoutOptions, LayoutSpec } from 'snowid'
const discordOptions: LayoutOptions = {
  epoch: 1420070400000,
  datacenterBits: 5,
  workerBits: 5,
  clockBackBits: 0,
  sequenceBits: 12,
}
const discord = new SnowflakeLayout(discordOptions)
const discordFields: DecodedId = discord.decode(175928847299117063n)
const discordMs: number = discord.timestampOf('175928847299117063')
const discordRange: bigint[] = [discord.minIdAt(new Date()), discord.maxIdAt(Date.now())]
const spec: LayoutSpec = discord.layout()
const specBits: number = spec.timestampBits + discordFields.sequence + discordMs + discordRange.length
// @ts-expect-error a layout has no worker id
new SnowflakeLayout({ workerId: 3 })
// @ts-expect-error the fence is not part of the typed API
gen._fence(0)

// snowid/postgres: the same lease object as snowid/redis.
import { acquireWorkerId as acquireFromPostgres, type PostgresLease, tableSql } from 'snowid/postgres'
import type { PostgresAcquireOptions, SnowidPostgresError } from 'snowid/postgres'
declare const pgPool: { query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> }
declare const postgresJs: { unsafe(text: string, values?: unknown[]): Promise<unknown[]> }
const pgOptions: PostgresAcquireOptions = { client: pgPool, datacenterId: 1, table: 'ids.snowid_workers', ttlMs: 10000 }
async function pgLease(): Promise<void> {
  const lease: PostgresLease = await acquireFromPostgres(pgOptions)
  const next: bigint = lease.snowflake.nextId()
  lease.on('lost', (err: SnowidPostgresError) => err.code === 'ERR_SNOWID_LEASE_LOST')
  lease.on('reacquired', (l: PostgresLease) => l.workerId + Number(next))
  await lease.release()
  await acquireFromPostgres({ client: postgresJs })
  // @ts-expect-error keyPrefix is snowid/redis's
  await acquireFromPostgres({ client: pgPool, keyPrefix: 'x' })
}
const ddl: string = tableSql('ids.slots')

// The contract of a store under the one lease state machine (lib/store-lease.js): each store module's adapter is
// checked against it in its JS (tsconfig.stores.json); here, that the contract itself holds what the machine calls.
import type { Store, StoreTaken } from '../lib/store-lease'
const taken: StoreTaken = { workerId: 3, mark: undefined }
const memoryStore: Store = {
  name: 'memory',
  unavailableCode: 'ERR_SNOWID_REDIS_UNAVAILABLE',
  slotName: w => `slot ${w}`,
  take: async (_token, preferred) => (preferred === 3 ? taken : preferred > 3 ? { ahead: 0 } : null),
  renew: async (_w, _token, until) => until !== null,
  release: async () => {},
  abandon: async () => {},
  classify: () => null,
  closed: () => false,
}
// @ts-expect-error a store must say how to give back an abandoned take
const noAbandon: Store = { ...memoryStore, abandon: undefined }
const prepared: Store = { ...memoryStore, prepare: async () => {}, explain: async () => null }
void noAbandon, prepared

// ConfigSource and OnClockBack are values as well as types, as at runtime.
import { ConfigSource as Sources, OnClockBack as Policies, isSnowidError } from 'snowid'
import type { SnowidError, SnowidErrorCode } from 'snowid'
const waitPolicy: OnClockBack = Policies.Wait
const envSource: ConfigSource = Sources.Env
try {
  configure({ workerId: 99 })
} catch (e) {
  if (isSnowidError(e)) {
    const coded: SnowidError = e
    const code: SnowidErrorCode = coded.code
    void code
  }
}
// A store lease's errors are snowid errors: their codes are all SnowidErrorCode's.
const storeErrors: SnowidError[] = [] as (SnowidRedisError | SnowidPostgresError | SnowidMysqlError)[]
const wasiCode: SnowidErrorCode = 'ERR_SNOWID_LEASE_UNSUPPORTED'
// @ts-expect-error not a code snowid throws
const madeUp: SnowidErrorCode = 'ERR_SNOWID_MADE_UP'
void storeErrors, wasiCode, madeUp
void waitPolicy
void envSource
// @ts-expect-error the loader's internals are not exported
import { __napiBindingTarget } from 'snowid'
void __napiBindingTarget

// isId: a guard that narrows unknown input; its options take a window and a layout (the classes' take a window).
import { isId, SnowflakeLayout as LayoutForIsId } from 'snowid'
import type { IdWindow, IsIdOptions } from 'snowid'
const fromClient: unknown = JSON.parse('"903550410143301632"')
if (isId(fromClient)) {
  const narrowed: bigint | string | number = fromClient
  void narrowed
}
const isIdLayout = new LayoutForIsId({ epoch: 1420070400000 })
const isIdOptions: IsIdOptions = {
  notBefore: new Date('2026-01-01'),
  notAfter: Date.now() + 60_000,
  layout: isIdLayout,
}
const isIdWindow: IdWindow = { notBefore: 0 }
const checked: boolean = isId('1', isIdOptions) && isIdLayout.isId(1n, isIdWindow)
// @ts-expect-error a class's isId has its own layout
isIdLayout.isId(1n, { layout: isIdLayout })
// @ts-expect-error bounds are Dates or ms
isId('1', { notBefore: '2026-01-01' })
void checked

// snowid/graphql: a graphql-js scalar that reads ids into bigints and sends them as strings.
import { GraphQLSnowflakeId } from 'snowid/graphql'
import type { GraphQLScalarType } from 'graphql'
import { idSchema } from 'snowid/json'
const scalar: GraphQLScalarType<bigint, string> = GraphQLSnowflakeId
const idPattern: string = idSchema.pattern
void scalar, idPattern
