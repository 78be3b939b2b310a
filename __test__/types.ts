// Compiled by `npm run test:types` (tsc --noEmit, strict): a typing regression fails the tests.
import { nextId, nextIdString, decode, config, configure, Snowflake } from 'snowid'
import type { DecodedId, SnowflakeOptions, SnowidConfig, ConfigSource, OnClockBack } from 'snowid'

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
}
configure(options)
configure()
const gen = new Snowflake(options)
new Snowflake()
new Snowflake({ epoch: new Date() })
new Snowflake({ epoch: 1580486400000 })
const a: bigint = gen.nextId()
const b: string = gen.nextIdString()
const d: DecodedId = gen.decode(a)

const c: SnowidConfig = config()
const source: ConfigSource = c.sources.workerId
const policy: OnClockBack = gen.config().onClockBack
const numbers: number[] = [c.epoch, c.expiresAt, c.maxIdsPerMs, c.timestampBits, c.maxWaitMs]

// @ts-expect-error ids are bigints, never numbers
const wrong: number = nextId()
// @ts-expect-error onClockBack is one of 'bits' | 'wait' | 'throw'
new Snowflake({ onClockBack: 'ignore' })
// @ts-expect-error unknown options are refused
new Snowflake({ workerID: 3 })
// @ts-expect-error decode needs an id
decode()
// @ts-expect-error sources are 'option' | 'env' | 'default'
const badSource: 'pm2' = c.sources.workerId

export { ts, idText, fields, b, d, source, policy, numbers, wrong, badSource }
