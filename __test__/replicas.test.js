'use strict'

// Replicas that cannot see each other's host lease: where an orchestrator is known and no one chose the identity, the
// first id (and config()) is refused; in a plain container it is warned of once. Every case runs in a child process
// with the platform's variable set (helpers.js's cleanEnv leaves them all out unless a test sets one).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')

const { execFile } = require('node:child_process')
const { promisify } = require('node:util')

const { ROOT, cleanEnv, runCli, runNode, wasiSkip, withoutUnchosenWarning } = require('./helpers.js')

/** `runNode`, without waiting: the cases of a test run side by side. */
async function runNodeAsync(code, extraEnv = {}) {
  const env = cleanEnv(extraEnv)
  try {
    return await promisify(execFile)(process.execPath, ['-e', code], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    })
  } finally {
    fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true })
  }
}

// Each outcome of a first use of snowid, as JSON: `{ ok }` or the error's code, class, message and isSnowidError.
const OUTCOMES = `
const s = require('.')
const out = {}
const attempt = (name, fn) => {
  try {
    out[name] = { ok: fn() }
  } catch (e) {
    out[name] = { code: e.code, name: e.constructor.name, message: e.message, snowid: s.isSnowidError(e) }
  }
}
attempt('nextId', () => typeof s.nextId())
attempt('config', () => s.config())
attempt('snowflake', () => typeof new s.Snowflake().nextId())
attempt('snowflakeConfig', () => new s.Snowflake().config().environment)
attempt('nextIds', () => s.nextIds(3).length)
attempt('decode', () => s.decode(175928847299117063n).sequence)
attempt('timestampOf', () => s.timestampOf('175928847299117063'))
attempt('minIdAt', () => typeof s.minIdAt(Date.now()))
attempt('layout', () => new s.SnowflakeLayout().decode(175928847299117063n).sequence)
attempt('snowflakeDecode', () => new s.Snowflake().decode(175928847299117063n).sequence)
attempt('environment', () => new s.Snowflake({ workerId: 1 }).config().environment)
console.log(JSON.stringify(out))
`

/** The outcomes of a child with `env`; a child that fails rejects, with its stderr. */
async function outcomes(env) {
  return JSON.parse((await runNodeAsync(OUTCOMES, env)).stdout)
}

// What each platform sets in every container (src/core/replicas.rs and docs/guarantees.md give the sources), and how
// the refusal names it.
const PLATFORMS = [
  ['KUBERNETES_SERVICE_HOST', '10.96.0.1', 'Kubernetes', 'kubernetes'],
  ['ECS_CONTAINER_METADATA_URI_V4', 'http://169.254.170.2/v4/0123', 'Amazon ECS', 'ecs'],
  ['ECS_CONTAINER_METADATA_URI', 'http://169.254.170.2/v3/0123', 'Amazon ECS', 'ecs'],
  ['AWS_EXECUTION_ENV', 'AWS_ECS_FARGATE', 'Amazon ECS', 'ecs'],
  ['K_SERVICE', 'hello', 'Cloud Run or Knative', 'cloudrun'],
  ['CLOUD_RUN_JOB', 'nightly', 'Cloud Run or Knative', 'cloudrun'],
  ['NOMAD_ALLOC_ID', '5b2b5c5e-6d1a-4bd8-9f0e-1c2d3e4f5a6b', 'Nomad', 'nomad'],
  ['DYNO', 'web.1', 'Heroku', 'heroku'],
  ['FLY_ALLOC_ID', '148e21ea7e0d89', 'Fly.io', 'fly'],
  ['FLY_APP_NAME', 'my-app', 'Fly.io', 'fly'],
  ['AWS_LAMBDA_FUNCTION_NAME', 'handler', 'AWS Lambda', 'lambda'],
  ['CONTAINER_APP_NAME', 'my-containerapp', 'Azure Container Apps', 'containerapps'],
  ['CONTAINER_APP_JOB_NAME', 'my-job', 'Azure Container Apps', 'containerapps'],
  ['WEBSITE_INSTANCE_ID', '4f1a8c0e', 'Azure App Service', 'appservice'],
  ['WEBSITE_SITE_NAME', 'my-app', 'Azure App Service', 'appservice'],
  ['FUNCTIONS_WORKER_RUNTIME', 'node', 'Azure Functions', 'azurefunctions'],
  ['GAE_SERVICE', 'default', 'Google App Engine', 'appengine'],
  ['FUNCTION_TARGET', 'helloHttp', 'Google Cloud Functions', 'cloudfunctions'],
  ['RENDER', 'true', 'Render', 'render'],
  ['RAILWAY_REPLICA_ID', '92b9e1c2', 'Railway', 'railway'],
  ['RAILWAY_SERVICE_ID', '1d4c', 'Railway', 'railway'],
  ['VERCEL', '1', 'Vercel', 'vercel'],
  ['NETLIFY', 'true', 'Netlify', 'netlify'],
  ['SITE_ID', '1d01c0c0-4554-4747-93b8-34ce3448ab95', 'Netlify', 'netlify', { SITE_NAME: 'petsof' }],
  ['VCAP_APPLICATION', '{"application_name":"app"}', 'Cloud Foundry', 'cloudfoundry'],
  ['CF_INSTANCE_GUID', '41653aa4-3a3a-486a-4431-ef25', 'Cloud Foundry', 'cloudfoundry'],
]
const WAYS_OUT = [
  'snowid/redis',
  'snowid/postgres',
  'snowid/mysql',
  'SNOWID_WORKER_ID',
  'SNOWID_DATACENTER_ID',
  'SNOWID_SINGLE_INSTANCE=true',
]
const READS = ['decode', 'timestampOf', 'minIdAt', 'layout', 'snowflakeDecode']

// binding.d.ts's type of config().environment, for the names below.
const ENVIRONMENTS = fs.readFileSync(require.resolve('../binding.d.ts'), 'utf8').match(/^ {2}environment: (.*)$/m)[1]

for (const [name, value, label, environment, also = {}] of PLATFORMS) {
  test(`${label} (${name}): an identity no one chose is refused by the first id and config(), naming it and every way out`, async () => {
    const out = await outcomes({ [name]: value, ...also })
    // With a worker id chosen, the same process reports where it runs.
    assert.equal(out.environment.ok, environment, `${name}: ${JSON.stringify(out.environment)}`)
    assert.ok(ENVIRONMENTS.includes(`'${environment}'`), ENVIRONMENTS)
    for (const call of ['nextId', 'config', 'snowflake', 'snowflakeConfig', 'nextIds']) {
      const e = out[call]
      assert.equal(e.code, 'ERR_SNOWID_IDENTITY_REQUIRED', `${name}: ${call} gave ${JSON.stringify(e)}`)
      assert.equal(e.name, 'Error')
      assert.equal(e.snowid, true, 'isSnowidError')
      assert.ok(
        e.message.startsWith(
          `identity: expected a worker id or datacenter id chosen for each replica in ${label} (${name} is `,
        ),
        e.message,
      )
      for (const way of WAYS_OUT) assert.ok(e.message.includes(way), `${way} not in ${e.message}`)
      assert.equal(e.message.includes('SNOWID_WORKER_ID_FROM=statefulset'), label === 'Kubernetes', e.message)
    }
    // Reading ids needs no identity.
    for (const call of READS) assert.ok('ok' in out[call], `${name}: ${call} gave ${JSON.stringify(out[call])}`)
    assert.equal(out.decode.ok, 7)
  })
}

test(
  'SNOWID_SINGLE_INSTANCE=true, or the option singleInstance, says this is the only instance: ids are issued again',
  wasiSkip('no host lease'),
  async () => {
    const some = PLATFORMS.filter(([name]) =>
      ['KUBERNETES_SERVICE_HOST', 'AWS_EXECUTION_ENV', 'AWS_LAMBDA_FUNCTION_NAME'].includes(name),
    )
    const all = await Promise.all(
      some.map(([name, value]) => outcomes({ [name]: value, SNOWID_SINGLE_INSTANCE: 'true' })),
    )
    for (const [i, [name, , , environment]] of some.entries()) {
      const out = all[i]
      for (const call of ['nextId', 'snowflake'])
        assert.equal(out[call].ok, 'bigint', `${name}: ${call} gave ${JSON.stringify(out[call])}`)
      const c = out.config.ok
      assert.equal(c.singleInstance, true)
      assert.equal(c.sources.singleInstance, 'env')
      assert.equal(c.environment, environment)
      assert.equal(c.sources.workerId, 'lease')
    }
    const r = runNode(
      `const s = require('.')
     s.configure({ singleInstance: true })
     const g = new s.Snowflake({ singleInstance: true })
     console.log(JSON.stringify([typeof s.nextId(), typeof g.nextId(), s.config().sources.singleInstance, g.config().singleInstance]))
     try { new s.Snowflake({ singleInstance: false }).nextId() } catch (e) { console.log(e.code) }`,
      { KUBERNETES_SERVICE_HOST: '10.96.0.1', SNOWID_SINGLE_INSTANCE: 'true' },
    )
    assert.equal(r.status, 0, r.stderr)
    // The option wins over the variable, both ways.
    assert.equal(r.stdout, '["bigint","bigint","option",true]\nERR_SNOWID_IDENTITY_REQUIRED\n')
  },
)

test('SNOWID_SINGLE_INSTANCE takes true or false; anything else is refused', async () => {
  const bads = ['1', 'yes', 'TRUE', '', 'true ']
  const all = await Promise.all(bads.map(bad => outcomes({ SNOWID_SINGLE_INSTANCE: bad })))
  for (const out of all) {
    assert.equal(out.nextId.code, 'ERR_SNOWID_INVALID_CONFIG', JSON.stringify(out.nextId))
    assert.equal(out.nextId.name, 'RangeError')
    assert.ok(out.nextId.message.startsWith("SNOWID_SINGLE_INSTANCE: expected 'true' or 'false'"), out.nextId.message)
  }
  const out = await outcomes({ SNOWID_SINGLE_INSTANCE: 'false', KUBERNETES_SERVICE_HOST: '10.96.0.1' })
  assert.equal(out.nextId.code, 'ERR_SNOWID_IDENTITY_REQUIRED')
  const r = runNode(
    `try { new (require('.').Snowflake)({ singleInstance: 'true' }) } catch (e) { console.log(e.constructor.name, e.code, e.message) }`,
  )
  assert.match(
    r.stdout,
    /^TypeError ERR_SNOWID_INVALID_CONFIG options\.singleInstance: expected 'true' or 'false' \(a boolean as an option\), found the string "true"\n$/,
  )
})

test(
  'a worker id, a datacenter id or a StatefulSet ordinal chosen for the replica is never refused',
  wasiSkip('no host lease'),
  async () => {
    const k8s = { KUBERNETES_SERVICE_HOST: '10.96.0.1' }
    const cases = [
      [{ SNOWID_WORKER_ID: '3' }, ['workerId', 'env']],
      [{ workerId: '3' }, ['workerId', 'env']],
      [{ SNOWID_DATACENTER_ID: '2' }, ['datacenterId', 'env']],
      [{ SNOWID_WORKER_ID_FROM: 'statefulset', HOSTNAME: 'web-4' }, ['workerId', 'statefulset']],
      [{ SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '0' }, ['workerId', 'env']],
    ]
    const all = await Promise.all(cases.map(([env]) => outcomes({ ...k8s, ...env })))
    for (const [i, [env, source]] of cases.entries()) {
      const out = all[i]
      for (const call of ['nextId', 'snowflake'])
        assert.equal(out[call].ok, 'bigint', `${JSON.stringify(env)}: ${call} gave ${JSON.stringify(out[call])}`)
      const c = out.config.ok
      assert.equal(c.sources[source[0]], source[1])
      assert.equal(c.environment, 'kubernetes')
      assert.equal(c.singleInstance, false)
      assert.equal(out.snowflakeConfig.ok, 'kubernetes')
    }
    const r = runNode(
      `const s = require('.')
     s.configure({ workerId: 7 })
     console.log(JSON.stringify([s.decode(s.nextId()).workerId, new s.Snowflake({ datacenterId: 1 }).config().sources.datacenterId]))`,
      k8s,
    )
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, '[7,"option"]\n')
  },
)

test('a store lease chooses the worker id, so its generators and configureWorkerId are never refused', () => {
  // The lease's own state machine (lib/store-lease.js) over a store held in memory: what snowid/redis, snowid/postgres and
  // snowid/mysql run over theirs.
  const r = runNode(
    `const s = require('.')
     const { startLease, StoreLease } = require('./lib/store-lease.js')
     const store = {
       name: 'Memory', unavailableCode: 'ERR_SNOWID_REDIS_UNAVAILABLE', slotName: (w) => 'slot ' + w,
       async take() { return { workerId: 5, mark: undefined, confirmed: false } },
       async renew() { return true }, async release() { return true }, async abandon() {},
       classify: () => null, closed: () => false,
     }
     // A client's connection keeps the process alive while a lease waits; this store has none.
     const alive = setInterval(() => {}, 1000)
     // A slot taken unconfirmed waits one TTL before its first renewal: 2 s here, not the default 10 s.
     startLease({ client: {}, ttlMs: 2000 }, [], () => store, StoreLease, true).then(async (lease) => {
       const own = s.decode(lease.snowflake.nextId()).workerId
       const byDefault = s.decode(s.nextId()).workerId
       console.log(JSON.stringify([own, byDefault, s.config().sources.workerId]))
       await lease.release()
     }).catch((e) => console.log(e.code, e.message)).finally(() => clearInterval(alive))`,
    { KUBERNETES_SERVICE_HOST: '10.96.0.1' },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, '[5,5,"option"]\n')
})

// Every first use a process can make, from two threads, and the warnings it got.
const WARNINGS = `
const s = require('.')
const { Worker } = require('node:worker_threads')
const warnings = []
process.on('warning', (w) => warnings.push({ name: w.name, code: w.code, message: w.message }))
s.nextId()
s.nextIdString()
new s.Snowflake().nextId()
// Generators of other id spaces lease their slots in lease directories of their own (see guarantees.md, Fail closed).
const own = name => require('node:path').join(process.env.SNOWID_LEASE_DIR, name)
new s.Snowflake({ sequenceBits: 10, leaseDir: own('bits10') }).nextIds(4)
s.config()
new Worker("const s = require(process.argv[2]); s.nextId(); new s.Snowflake({ sequenceBits: 11, leaseDir: require('node:path').join(process.env.SNOWID_LEASE_DIR, 'bits11') }).nextId()", { eval: true, argv: [process.cwd()] })
  .on('exit', () => setTimeout(() => console.log(JSON.stringify({ warnings, environment: s.config().environment })), 50))
`
// (The worker requires the package by the child's working directory, which runNode sets to the package root.)

// The warning of an identity no one chose in a plain container, whatever said it is one.
const UNCHOSEN =
  /^no identity chosen in a container \((\/\.dockerenv|\/run\/\.containerenv|\$container)\): its replicas would make the same ids\. Ways out: snowid's docs\/guarantees\.md#choosing-an-identity$/

test('the warning points to a section of docs/guarantees.md that gives the ways out', () => {
  const doc = fs.readFileSync(require.resolve('../docs/guarantees.md'), 'utf8')
  const section = doc.split('\n### Choosing an identity\n')[1]?.split('\n### ')[0] ?? ''
  for (const way of ['SNOWID_WORKER_ID', 'snowid/redis', 'SNOWID_DATACENTER_ID', 'SNOWID_SINGLE_INSTANCE=true'])
    assert.ok(section.includes(way), `${way} not in the section`)
})

test(
  'in a plain container, an identity no one chose is warned of once per process, with its code, and ids are issued',
  wasiSkip('no host lease'),
  () => {
    const r = runNode(WARNINGS, { container: 'podman' })
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.equal(out.warnings.length, 1, JSON.stringify(out.warnings))
    const [w] = out.warnings
    assert.equal(w.name, 'SnowidWarning')
    assert.equal(w.code, 'SNOWID_IDENTITY_UNCHOSEN')
    // One line of at most 160 characters: the risk, and the doc section with the ways out.
    assert.match(w.message, UNCHOSEN)
    assert.ok(w.message.length <= 160, `${w.message.length} characters: ${w.message}`)
    assert.equal(out.environment, 'container')
    // Printed once, by Node, on one line, and nothing else.
    assert.equal(r.stderr.split('SNOWID_IDENTITY_UNCHOSEN').length - 1, 1, r.stderr)
    assert.ok(r.stderr.includes(`[SNOWID_IDENTITY_UNCHOSEN] SnowidWarning: ${w.message}\n`), r.stderr)
    assert.equal(withoutUnchosenWarning(r.stderr), '')
  },
)

test(
  'a container known by its marker file warns the same way, naming the file',
  wasiSkip('the marker files are outside the sandbox'),
  t => {
    const marker = ['/.dockerenv', '/run/.containerenv'].find(f => fs.existsSync(f))
    if (!marker) {
      process.stderr.write(
        '\n*** SKIPPED: neither /.dockerenv nor /run/.containerenv exists here: the marker-file warning cannot be checked ***\n\n',
      )
      t.skip('not in a Docker or Podman container')
      return
    }
    const r = runNode(WARNINGS)
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.deepEqual(
      out.warnings.map(w => w.code),
      ['SNOWID_IDENTITY_UNCHOSEN'],
    )
    assert.ok(
      out.warnings[0].message.startsWith(`no identity chosen in a container (${marker}): `),
      out.warnings[0].message,
    )
  },
)

test(
  'a container with the identity chosen, or declared the only instance, gives no warning',
  wasiSkip('no host lease'),
  () => {
    for (const env of [{ SNOWID_SINGLE_INSTANCE: 'true' }, { SNOWID_WORKER_ID: '4' }, { SNOWID_DATACENTER_ID: '1' }]) {
      const r = runNode(WARNINGS, { container: 'docker', ...env })
      assert.equal(r.status, 0, r.stderr)
      const out = JSON.parse(r.stdout)
      assert.deepEqual(out.warnings, [], JSON.stringify(env))
      assert.equal(out.environment, 'container')
      assert.equal(r.stderr, '')
    }
  },
)

test(
  'outside any container or orchestrator, nothing is said and config() reports no environment',
  wasiSkip('no host lease'),
  t => {
    if (['/.dockerenv', '/run/.containerenv'].some(f => fs.existsSync(f))) {
      t.skip('this machine is a container: its marker file is there for every process')
      return
    }
    const r = runNode(WARNINGS)
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.deepEqual(out, { warnings: [], environment: null })
    assert.equal(r.stderr, '')
  },
)

test('the CLI where replicas are the norm: ids are refused in one line, reading ids and printing SQL still work', () => {
  const k8s = { KUBERNETES_SERVICE_HOST: '10.96.0.1' }
  for (const args of [['2'], ['config'], ['config', '--json'], ['--encoding', 'base62', '1']]) {
    const r = runCli(args, k8s)
    assert.equal(r.status, 1, `snowid ${args.join(' ')}: ${r.stdout}${r.stderr}`)
    assert.equal(r.stdout, '')
    assert.match(
      r.stderr,
      /^snowid: identity: expected a worker id or datacenter id chosen for each replica in Kubernetes .*\(ERR_SNOWID_IDENTITY_REQUIRED\)\n$/,
    )
  }
  const decoded = runCli(['decode', '175928847299117063'], k8s)
  assert.equal(decoded.status, 0, decoded.stderr)
  assert.equal(JSON.parse(decoded.stdout).sequence, 7)
  const piped = runCli(['decode'], k8s, { input: '175928847299117063\n' })
  assert.equal(piped.status, 0, piped.stderr)
  assert.equal(JSON.parse(piped.stdout).workerId, 8)
  for (const args of [
    ['sql', 'postgres'],
    ['sql', 'mysql'],
    ['sql', 'postgres', '--functions'],
  ]) {
    const r = runCli(args, k8s)
    assert.equal(r.status, 0, `snowid ${args.join(' ')}: ${r.stderr}`)
    assert.match(r.stdout, /^-- snowid/)
  }
  // The switch works for the CLI as for any process.
  const single = runCli(['2'], { ...k8s, SNOWID_SINGLE_INSTANCE: 'true' })
  assert.equal(single.status, 0, single.stderr)
  assert.equal(single.stdout.trim().split('\n').length, 2)
})

// A worker_thread's first use where replicas are the norm: its own default generator calls, config() and a
// Snowflake, then the main thread's. MODE: 'none' (no identity), 'configure' (configure({ workerId: 5 }) in the main
// thread first), 'thread-env' (the thread sets process.env.SNOWID_WORKER_ID, its own copy, before its first id).
const THREADS = `
const s = require('.')
const { Worker } = require('node:worker_threads')
const mode = process.argv[1]
if (mode === 'configure') s.configure({ workerId: 5 })
const inThread = \`
  const s = require(\${JSON.stringify(process.cwd())})
  if (\${JSON.stringify(mode)} === 'thread-env') process.env.SNOWID_WORKER_ID = '7'
  const out = {}
  const attempt = (k, f) => { try { out[k] = f() } catch (e) { out[k] = e.code } }
  attempt('nextId', () => s.decode(s.nextId()).workerId)
  attempt('config', () => s.config().workerId)
  attempt('snowflake', () => s.decode(new s.Snowflake().nextId()).workerId)
  require('node:worker_threads').parentPort.postMessage(out)\`
new Worker(inThread, { eval: true }).on('message', (out) => {
  const attempt = (k, f) => { try { out[k] = f() } catch (e) { out[k] = e.code } }
  attempt('mainNextId', () => s.decode(s.nextId()).workerId)
  attempt('mainConfig', () => s.config().workerId)
  console.log(JSON.stringify(out))
})
`

test(
  'worker_threads where replicas are the norm: refused until the process has an identity, from any thread',
  wasiSkip('no host lease'),
  async () => {
    const modes = ['none', 'configure', 'thread-env']
    const all = await Promise.all(
      modes.map(async mode => {
        const env = cleanEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1' })
        try {
          const r = await promisify(execFile)(process.execPath, ['-e', THREADS, mode], {
            cwd: ROOT,
            env,
            encoding: 'utf8',
            timeout: 60_000,
          })
          return JSON.parse(r.stdout)
        } finally {
          fs.rmSync(env.SNOWID_LEASE_DIR, { recursive: true, force: true })
        }
      }),
    )
    const refused = 'ERR_SNOWID_IDENTITY_REQUIRED'
    assert.deepEqual(all[0], {
      nextId: refused,
      config: refused,
      snowflake: refused,
      mainNextId: refused,
      mainConfig: refused,
    })
    // The default generator is the process's: the main thread's configure() chooses for every thread. A Snowflake
    // reads only the environment and its options, which choose nothing here.
    assert.deepEqual(all[1], { nextId: 5, config: 5, snowflake: refused, mainNextId: 5, mainConfig: 5 })
    // A thread's own process.env, set before its first id, configures the process's default generator (whichever
    // thread starts it), and its Snowflakes.
    assert.deepEqual(all[2], { nextId: 7, config: 7, snowflake: 7, mainNextId: 7, mainConfig: 7 })
  },
)
