'use strict'

// The smoke check that `npm run test:package` runs in each freshly installed project, once through `require`
// (smoke.cjs) and once through `import` (smoke.mjs). Each check prints `ok - NAME` or `not ok - NAME: why`.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { Worker } = require('node:worker_threads')

const IDS = 20_000
const CLUSTER_TIMEOUT_MS = 30_000

async function check(name, fn) {
  try {
    await fn()
    console.log(`ok - ${name}`)
  } catch (err) {
    console.log(`not ok - ${name}: ${String((err && err.message) || err).replace(/\s+/g, ' ')}`)
    process.exitCode = 1
  }
}

function increasing(ids, what) {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) assert.fail(`${what}: expected increasing ids, found ${ids[i - 1]} then ${ids[i]}`)
  }
}

// SMOKE_EXPECT_BINARY=wasm32-wasi: the project lost the platform package and runs on the WASI one.
const WASI = process.env.SMOKE_EXPECT_BINARY === 'wasm32-wasi'

function skip(name, why) {
  console.log(`skip - ${name}: ${why}`)
}

/** The primary's checks. `api` holds the functions as the entry file got them (from `require` or `import`). */
async function primary(api, { threadFile }) {
  await check('package', () => {
    const dir = path.dirname(require.resolve('snowid/package.json'))
    const own = fs.readdirSync(dir).filter(f => f.endsWith('.node'))
    assert.deepEqual(own, [], 'snowid itself ships no .node file')
    // The native files this process has mapped: exactly one, from the platform package the test expects.
    const loaded = [...new Set(fs.readFileSync('/proc/self/maps', 'utf8').match(/\/\S+\.node$/gm) || [])]
    if (WASI) {
      assert.deepEqual(loaded, [], 'no native binary loads')
      assert.throws(
        () => require.resolve('snowid-linux-x64-gnu'),
        /Cannot find module/,
        'the platform package is not installed',
      )
      assert.equal(require(path.join(dir, 'binding.js')).__napiBindingTarget, 'wasm32-wasi')
      const wasi = path.dirname(require.resolve('snowid-wasm32-wasi/package.json', { paths: [dir] }))
      console.log(`# loaded ${wasi} (no native binary)`)
      return
    }
    assert.equal(loaded.length, 1, `expected one loaded .node file, found [${loaded}]`)
    const expected = process.env.SMOKE_EXPECT_BINARY
    assert.ok(loaded[0].endsWith(`${path.sep}${expected}`), `expected the binary .../${expected}, found ${loaded[0]}`)
    console.log(`# loaded ${loaded[0]}`)
  })

  await check('process.env assigned from JS before the first id', () => {
    // Read through the runtime's own process.env: Bun does not pass such assignments down to the OS environment.
    process.env.SNOWID_DATACENTER_ID = '5'
    assert.equal(api.decode(api.nextId()).datacenterId, 5)
    assert.deepEqual([api.config().datacenterId, api.config().sources.datacenterId], [5, 'env'])
  })

  await check('ids', () => {
    const ids = []
    for (let i = 0; i < 10_000; i++) ids.push(api.nextId())
    assert.equal(typeof ids[0], 'bigint')
    increasing(ids, 'nextId')
    const text = api.nextIdString()
    assert.match(text, /^[1-9]\d*$/)
    assert.ok(BigInt(text) > ids[ids.length - 1], 'nextIdString follows nextId')
  })

  await check('decode', () => {
    const id = api.nextId()
    const decoded = api.decode(id)
    assert.equal(decoded.id, id.toString())
    assert.ok(Math.abs(decoded.timestamp - Date.now()) < 60_000, `timestamp ${decoded.timestamp} is now`)
    assert.equal(decoded.workerId, api.config().workerId)
    assert.deepEqual(api.decode(id.toString()), decoded)
    assert.deepEqual(JSON.parse(JSON.stringify(decoded)), decoded)
    // A bigint decoded again is split in JS: the same fields, at the edges too.
    assert.deepEqual(api.decode(id), decoded)
    const max = 2n ** 63n - 1n
    assert.deepEqual(api.decode(max), {
      id: max.toString(),
      timestamp: 1580486400000 + 2 ** 41 - 1,
      datacenterId: 7,
      workerId: 31,
      clockBack: 3,
      sequence: 4095,
    })
    assert.deepEqual(api.decode(max), api.decode(max.toString()))
    // A bigint out of range is refused, whatever its size: runtimes differ in how N-API reports a long one.
    for (const bad of [-1n, 2n ** 63n, 2n ** 64n, 2n ** 64n + 5n, -(2n ** 64n), 2n ** 100n + 7n]) {
      for (const read of [api.decode, api.timestampOf, v => new api.SnowflakeLayout().decode(v)]) {
        assert.throws(() => read(bad), { code: 'ERR_SNOWID_INVALID_ID' }, `${bad} is refused`)
      }
    }
  })

  // On WASI each thread instantiates the wasm module, so threads cannot share the generator: a thread asking for the
  // worker id this thread makes ids with is refused, not given the same ids.
  if (WASI) {
    await check(
      'worker_threads: a second thread with the process worker id gets ERR_SNOWID_WORKER_ID_IN_USE',
      async () => {
        const worker = new Worker(threadFile)
        const other = await threadIds(worker, () => {})
        await worker.terminate()
        assert.equal(other.code, 'ERR_SNOWID_WORKER_ID_IN_USE', other.message)
        assert.match(other.message, /found it in use by the main thread/)
      },
    )
  } else
    await check('worker_threads', async () => {
      const worker = new Worker(threadFile)
      const mine = []
      const other = await threadIds(worker, () => {
        for (let i = 0; i < IDS; i++) mine.push(api.nextId())
      })
      await worker.terminate()
      assert.equal(other.code, undefined, other.message)
      assert.equal(other.length, IDS)
      increasing(mine, 'main thread')
      increasing(other, 'worker thread')
      const all = new Set([...mine, ...other])
      assert.equal(all.size, 2 * IDS, `${2 * IDS - all.size} ids made by both threads`)
      assert.equal(api.decode(other[0]).workerId, api.decode(mine[0]).workerId, 'threads share the process slot')
    })

  if (WASI) skip('cluster', 'snowid/cluster follows workers through host lease files, and WASI has no host lease')
  else
    await check('cluster', async () => {
      const own = api.config()
      const worker = api.fork()
      let listed
      const reply = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          worker.process.kill('SIGKILL')
          reject(new Error(`no answer from the cluster worker within ${CLUSTER_TIMEOUT_MS} ms`))
        }, CLUSTER_TIMEOUT_MS)
        let message
        // The primary ends the worker once it has its answer: a worker that exits by itself may be reported gone
        // before its last message arrives (seen on Deno).
        worker.on('message', m => {
          message = m
          listed = api.workers().get(worker)
          worker.disconnect()
        })
        worker.on('error', reject)
        worker.on('exit', (code, signal) => {
          clearTimeout(timer)
          if (code === 0 && message) resolve(message)
          else
            reject(
              new Error(
                `the cluster worker exited with code ${code}, signal ${signal}, message ${JSON.stringify(message)}`,
              ),
            )
        })
      })
      assert.equal(reply.source, 'lease', 'the worker took its slot from the automatic lease, as any process does')
      const slot = { datacenterId: reply.datacenterId, workerId: reply.workerId }
      assert.notDeepEqual(slot, { datacenterId: own.datacenterId, workerId: own.workerId }, 'not the primary’s slot')
      assert.deepEqual(listed, slot, 'workers() listed the worker with its slot')
      const decoded = api.decode(reply.id)
      assert.deepEqual({ datacenterId: decoded.datacenterId, workerId: decoded.workerId }, slot)
      assert.ok(!api.workers().has(worker), 'workers() left the worker out once it exited')
    })
}

/** A cluster worker: reports its slot and one id to the primary, which then disconnects it. */
function clusterWorker(api) {
  const id = api.nextIdString()
  const config = api.config()
  process.send({ datacenterId: config.datacenterId, workerId: config.workerId, source: config.sources.workerId, id })
}

/** A worker thread: waits for the main thread's go, then makes ids as fast as it can and sends them back. */
// A worker_thread's side of the worker_threads check: on 'go' it sends IDS ids, or the code and message of the error
// that making them threw.
function thread(nextId, parentPort) {
  parentPort.once('message', () => {
    const ids = []
    try {
      for (let i = 0; i < IDS; i++) ids.push(nextId())
    } catch (err) {
      parentPort.postMessage({ code: err.code, message: err.message })
      return
    }
    parentPort.postMessage(ids)
  })
  parentPort.postMessage('ready')
}

// The main thread's side: tells `worker` to go once it is ready, runs `meanwhile`, and resolves with what it sent.
function threadIds(worker, meanwhile) {
  return new Promise((resolve, reject) => {
    worker.on('message', message => {
      if (message !== 'ready') return resolve(message)
      worker.postMessage('go')
      meanwhile()
    })
    worker.on('error', reject)
    worker.on('exit', code => reject(new Error(`the thread exited with code ${code} before sending its ids`)))
  })
}

module.exports = { check, primary, clusterWorker, thread }
