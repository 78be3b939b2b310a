'use strict'

// The table of docs/queues-caches-search.md: for each client, what a bigint id does (the failing form), and that the
// recipe keeps ids exact, for ids above 2^53. BullMQ, node-redis and ioredis run against a real Redis; kafkajs, the
// Elasticsearch and OpenSearch clients and MongoDB's BSON run their own serializers (no server of theirs runs here).

const test = require('node:test')
const assert = require('node:assert/strict')

require('./helpers.js').isolateLeases()

const { serverFor, startRedis } = require('./servers.js')
const { Snowflake, decode } = require('../index.js')
const { bigintsToStrings, stringify } = require('../lib/json.js')

// Ids far above 2^53 that no double holds (a made id can: its low bits may be 0), the largest id included, and one
// whose decimal string is the one a double prints, as about 1 made id in 128 is (BullMQ refuses it as a job id).
const IDS = [903550410143301633n, 1234567890123456789n, 9223372036854775807n, 903902242032058400n]
const generator = new Snowflake({ workerId: 7, lease: false })
for (const id of IDS) assert.notEqual(BigInt(Number(id)), id)

test('kafkajs: a bigint key throws; a string key and a stringified value come back exact', () => {
  const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0')
  const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder')
  const Decoder = require('kafkajs/src/protocol/decoder')
  assert.throws(() => encodeRecord({ key: IDS[0], value: 'x' }), TypeError)
  for (const id of IDS) {
    const reader = new Decoder(encodeRecord({ key: String(id), value: stringify({ id }) }).buffer)
    reader.readVarInt()
    const record = decodeRecord(reader, { firstOffset: '0', firstTimestamp: '0' })
    assert.equal(BigInt(record.key.toString()), id)
    assert.equal(BigInt(JSON.parse(record.value.toString()).id), id)
  }
})

test('Elasticsearch: a bigint is a SerializationError, a long is read rounded, a string is exact', () => {
  const { Serializer } = require('@elastic/elasticsearch')
  const serializer = new Serializer()
  assert.throws(() => serializer.serialize({ id: IDS[0] }), { name: 'SerializationError' })
  for (const id of IDS) {
    assert.notEqual(BigInt(serializer.deserialize(`{"id":${id}}`).id), id)
    assert.equal(BigInt(serializer.deserialize(serializer.serialize(bigintsToStrings({ id }))).id), id)
  }
})

test('OpenSearch: as Elasticsearch by default; enableLongNumeralSupport is exact both ways', () => {
  const { Serializer } = require('@opensearch-project/opensearch')
  const plain = new Serializer()
  assert.throws(() => plain.serialize({ id: IDS[0] }), { name: 'SerializationError' })
  const long = new Serializer({ enableLongNumeralSupport: true })
  for (const id of IDS) {
    assert.notEqual(BigInt(plain.deserialize(`{"id":${id}}`).id), id)
    const body = long.serialize({ id, small: 5 })
    assert.equal(body, `{"id":${id},"small":5}`)
    assert.deepEqual(long.deserialize(body), { id, small: 5 })
  }
})

test('MongoDB: BSON keeps an int64 (Long, or bigint with useBigInt64); EJSON relaxed rounds, canonical is exact', () => {
  const { BSON } = require('mongodb')
  for (const id of IDS) {
    const bytes = BSON.serialize({ _id: id })
    assert.equal(BSON.deserialize(bytes)._id.toBigInt(), id)
    assert.equal(BSON.deserialize(bytes, { useBigInt64: true })._id, id)
    assert.notEqual(BigInt(JSON.parse(BSON.EJSON.stringify({ _id: id }))._id), id)
    const canonical = BSON.EJSON.stringify({ _id: id }, { relaxed: false })
    assert.equal(canonical, `{"_id":{"$numberLong":"${id}"}}`)
    assert.equal(BSON.EJSON.parse(canonical, { useBigInt64: true })._id, id)
    // Parsed in relaxed mode (the default), even canonical text rounds.
    assert.notEqual(BigInt(BSON.EJSON.parse(canonical)._id), id)
  }
})

async function main() {
  const redis = await serverFor(test, 'redis', startRedis)
  if (!redis) return
  const url = redis.url

  test('BullMQ: a bigint jobId or data throws; string forms reach the worker exact', async () => {
    const { Queue, Worker } = require('bullmq')
    const connection = { url }
    const queue = new Queue('ids', { connection })
    try {
      await assert.rejects(queue.add('x', {}, { jobId: IDS[0] }), /startsWith is not a function/)
      await assert.rejects(queue.add('x', { id: IDS[0] }), /serialize a BigInt/)
      await assert.rejects(queue.add('x', {}, { jobId: String(IDS[3]) }), /Custom Id cannot be integers/)
      for (const id of IDS) await queue.add('x', bigintsToStrings({ id }), { jobId: `id-${id}` })
      const seen = []
      await new Promise((resolve, reject) => {
        const worker = new Worker(
          'ids',
          async job => {
            seen.push([BigInt(job.id.slice('id-'.length)), BigInt(job.data.id)])
            if (seen.length === IDS.length) resolve()
          },
          { connection },
        )
        worker.on('failed', (_job, err) => reject(err))
        test.after(() => worker.close())
      })
      assert.deepEqual(
        seen.sort((a, b) => (a[0] < b[0] ? -1 : 1)),
        [...IDS].sort((a, b) => (a < b ? -1 : 1)).map(id => [id, id]),
      )
    } finally {
      await queue.obliterate({ force: true })
      await queue.close()
    }
  })

  test('node-redis: a bigint argument throws; String(id) keys, fields and values read back exact', async () => {
    const { createClient } = require('redis')
    const client = await createClient({ url }).connect()
    try {
      await assert.rejects(async () => client.set('nr:bigint', IDS[0]), TypeError)
      await assert.rejects(async () => client.hSet('nr:h', 'id', IDS[0]), TypeError)
      for (const id of IDS) {
        await client.set(`nr:${id}`, String(id))
        await client.hSet('nr:h', String(id), String(id))
        assert.equal(BigInt(await client.get(`nr:${id}`)), id)
        assert.equal(BigInt(await client.hGet('nr:h', String(id))), id)
      }
    } finally {
      await client.quit()
    }
  })

  test('ioredis: keys and hashes keep a bigint; a ZADD score rounds; the member with its time as score is exact', async () => {
    const Redis = require('ioredis')
    const client = new Redis(url)
    try {
      for (const id of IDS) {
        await client.set(`io:${id}`, id)
        await client.hset('io:h', String(id), id)
        assert.equal(BigInt(await client.get(`io:${id}`)), id)
        assert.equal(BigInt(await client.hget('io:h', String(id))), id)
        await client.zadd('io:score', id, 'member')
        assert.notEqual(BigInt(Number(await client.zscore('io:score', 'member'))), id)
      }
      const ids = [generator.nextId(), generator.nextId(), generator.nextId()]
      await client.zadd('io:by-time', ...ids.flatMap(id => [decode(id).timestamp, String(id)]))
      assert.deepEqual((await client.zrange('io:by-time', 0, -1)).map(BigInt), ids)
    } finally {
      await client.quit()
    }
  })
}

main()
