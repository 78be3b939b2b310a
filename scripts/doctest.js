#!/usr/bin/env node
'use strict'

// Runs every js, mjs, ts, sh and sql code block of README.md and docs/*.md as pasted, and checks the values shown
// in their comments against the run. `npm test` runs it (npm run test:docs); `node scripts/doctest.js docs/cli.md`
// runs one file's blocks.
//
// How a block runs:
// - js, mjs, ts: as a file in a fresh folder inside the package (so `require('snowid')` and `import 'snowid'` find
//   this package), with a lease directory of its own. A js block with `import`/`export` or a top-level `await` runs as
//   an ES module; ts is compiled by TypeScript first. A line `expression // value`, where the value is a literal
//   (a number, bigint, string, object or array), is checked: the expression's `util.inspect` must read as the value,
//   digits aside (ids and times differ from run to run; the keys, quotes, types and shape must not).
// - sh: with bash -u -o pipefail, as a shell runs pasted lines (the block's status is its last command's), with
//   `snowid` and `npx snowid` being this package's CLI.
// - sql: with psql, on a PostgreSQL server started for the run.
// - A block that mentions REDIS_URL, DATABASE_URL, MYSQL_URL or ETCD_URL gets a Redis, PostgreSQL, MariaDB or etcd
//   server started for it, as the tests start theirs (__test__/servers.js), and the variable set to its URL (for
//   MariaDB, a database `app` made for the run).
// - A text block right after a run block, marked `<!-- doctest: output -->`, must equal what that block printed.
//   Marked `<!-- doctest: output table (PID, SINCE vary) -->`, it is a table whose named columns change from run to
//   run: the printed table must have the same lines, header and cells, but for those columns' cells, each of which
//   must be `-` where the shown one is and only there. Columns are separated by two spaces or more.
// Other languages (json, yaml, text, none) are data or output, not programs, and are not run.
//
// Markers, an HTML comment on the line before a block's fence:
// - `<!-- doctest: skip (why) -->`: not run; the reason is required and printed with the results.
// - `<!-- doctest: continue -->`: runs after the file's previous js block, in the same program (a block that uses
//   names the one before it defined).
// - `<!-- doctest: output -->` and `<!-- doctest: output table (COLUMN, COLUMN vary) -->`: see above.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const { leaseEnv } = require('./lease-dir.js')

const ROOT = path.join(__dirname, '..')
const RUN_LANGS = new Set(['js', 'mjs', 'ts', 'sh', 'sql'])
const TIMEOUT_MS = 120_000

/** The fenced blocks of a Markdown file: `{ file, line, lang, code, marker }`. */
function blocks(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i])
    if (!open) continue
    const indent = open[1].length
    let j = i + 1
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) j++
    const code = lines
      .slice(i + 1, j)
      .map(l => l.slice(Math.min(indent, l.length - l.trimStart().length)))
      .join('\n')
    let k = i - 1
    while (k >= 0 && lines[k].trim() === '') k--
    const m = k >= 0 ? /^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$/.exec(lines[k]) : null
    out.push({ file: path.relative(ROOT, file), line: i + 1, lang: open[2], code, marker: m ? m[1] : null })
    i = j
  }
  return out
}

// A comment that shows a value: a number or bigint, a quoted string, an object, an array, or a keyword.
const LITERAL = /^(-?\d[\d_.]*n?|'.*'|".*"|\{.*\}|\[.*\]|true|false|null|undefined)$/
// A line that starts a statement rather than an expression.
const STATEMENT =
  /^(const|let|var|import|export|if|for|while|return|await|throw|try|function|class|async|}|\)|\/\/)\b|^[})\]]/

/** The block's code with each `expression // value` line turned into a check of the value. */
function instrument(code, where) {
  return code
    .split('\n')
    .map((line, n) => {
      const m = /^(\S.*?)\s+\/\/\s(.+)$/.exec(line)
      if (!m || STATEMENT.test(m[1]) || /[,{([]$/.test(m[1]) || !LITERAL.test(m[2].trim())) return line
      return `__doctestCheck((${m[1].replace(/;$/, '')}), ${JSON.stringify(m[2].trim())}, ${JSON.stringify(`${where.file}:${where.line + 1 + n}`)})`
    })
    .join('\n')
}

const CHECK = `globalThis.__doctestCheck = (value, shown, where) => {
  const inspect = require('node:util').inspect(value, { breakLength: Infinity, depth: 4 })
  const digitsAside = (s) => s.replace(/\\d+/g, '0')
  if (digitsAside(inspect) !== digitsAside(shown)) {
    process.stderr.write(where + ': the comment shows ' + shown + ', the run gave ' + inspect + '\\n')
    process.exitCode = 1
  }
  return value
}\n`
const CHECK_ESM = `import { createRequire as __doctestRequire } from 'node:module'\nconst require = __doctestRequire(import.meta.url)\n`

function isModule(code) {
  return /^\s*(import|export)\s/m.test(code) || /^\s*(const .*=\s*)?await\s/m.test(code)
}

/**
 * The program that runs a js, mjs or ts block's `code` as pasted, with its shown values checked (a mismatch is
 * printed on stderr and sets the exit code), and whether it is an ES module.
 */
function program(code, block) {
  let source = instrument(code, block)
  const esm = block.lang === 'mjs' || isModule(code)
  if (block.lang === 'ts') {
    const ts = require('typescript')
    const module = esm ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS
    source = ts.transpileModule(source, { compilerOptions: { module, target: ts.ScriptTarget.ES2022 } }).outputText
  }
  return { source: esm ? CHECK_ESM + CHECK + source : CHECK + source, esm }
}

// The marker of an output block that is a table with columns that vary (see the top of this file).
const TABLE_OUTPUT = /^output table \(([A-Z]+(?:, [A-Z]+)*) vary\)$/

/**
 * Why `printed` is not the table `shown` up to the cells of the columns named in `vary`, or '' when it is: each line
 * split at runs of two spaces or more, the same number of lines, the same header, and the same cells, but that a
 * varying column's cell may differ as long as it is `-` exactly where the shown one is.
 */
function tableMismatch(shown, printed, vary) {
  const rows = text =>
    text
      .trimEnd()
      .split('\n')
      .map(line => line.trim().split(/ {2,}/))
  const want = rows(shown)
  const got = rows(printed)
  const header = want[0]
  const unknown = vary.filter(name => !header.includes(name))
  if (unknown.length) return `the shown table has no column ${unknown.join(', ')}`
  if (got.length !== want.length) return `${want.length} lines shown, ${got.length} printed`
  for (let r = 0; r < want.length; r++) {
    const line = r === 0 ? 'the header' : `line ${r + 1}`
    if (got[r].length !== header.length) return `${line}: ${header.length} columns expected, ${got[r].length} printed`
    for (let c = 0; c < header.length; c++) {
      const same =
        r > 0 && vary.includes(header[c]) ? (want[r][c] === '-') === (got[r][c] === '-') : want[r][c] === got[r][c]
      if (!same)
        return `${line}, ${header[c]}: ${JSON.stringify(want[r][c])} shown, ${JSON.stringify(got[r][c])} printed`
    }
  }
  return ''
}

/** Services a block needs, started once for the run and stopped at its end. */
class Services {
  constructor() {
    this.started = {}
  }
  async env(code, lang) {
    const env = {}
    if (/\bREDIS_URL\b/.test(code)) env.REDIS_URL = (await this.start('redis')).url
    if (/\bDATABASE_URL\b/.test(code) || lang === 'sql') {
      const pg = await this.start('postgres')
      env.DATABASE_URL = `postgres://${pg.user}@${pg.host}:${pg.port}/${pg.database}`
    }
    if (/\bMYSQL_URL\b/.test(code)) {
      const my = await this.start('mariadb')
      if (!my.app) {
        const mysql = require('mysql2/promise')
        const c = await mysql.createConnection({ host: my.host, port: my.port, user: my.user })
        await c.query('CREATE DATABASE IF NOT EXISTS app')
        await c.end()
        my.app = true
      }
      env.MYSQL_URL = `mysql://${my.user}@${my.host}:${my.port}/app`
    }
    if (/\bETCD_URL\b/.test(code)) env.ETCD_URL = (await this.start('etcd')).endpoints()[0]
    return env
  }
  async start(name) {
    if (!(name in this.started)) {
      const servers = require('../__test__/servers.js')
      const start = {
        redis: servers.startRedis,
        postgres: servers.startPostgres,
        mariadb: servers.startMariadb,
        etcd: () => servers.startEtcd(1),
      }[name]
      this.started[name] = await start()
    }
    if (!this.started[name]) throw new Missing(name)
    return this.started[name]
  }
  async stop() {
    for (const s of Object.values(this.started)) if (s) await s.stop()
  }
}

class Missing extends Error {}

// The variables by which snowid knows an orchestrator (a CI job in a Kubernetes pod has KUBERNETES_SERVICE_HOST):
// left out, so that the examples run as one instance would, wherever the docs are tested.
const { PLATFORM_VARS } = require('../__test__/helpers.js')

function cleanEnv(extra) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) if (key.startsWith('SNOWID_') || PLATFORM_VARS.includes(key)) delete env[key]
  return { ...env, ...extra }
}

/** Runs one block in `dir`; resolves to `{ status, stdout, stderr }`. */
function run(block, code, dir, env) {
  if (block.lang === 'sh') {
    const bin = path.join(dir, '.bin')
    fs.mkdirSync(bin, { recursive: true })
    fs.writeFileSync(
      path.join(bin, 'snowid'),
      `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, 'bin', 'snowid.js')}" "$@"\n`,
      { mode: 0o755 },
    )
    const script = `npx() { "$@"; }\n${code}\n`
    const PATH = `${bin}:${path.join(ROOT, 'node_modules', '.bin')}:${env.PATH}`
    return spawnSync('bash', ['-uo', 'pipefail', '-c', script], {
      cwd: dir,
      env: { ...env, PATH },
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
    })
  }
  if (block.lang === 'sql') {
    return spawnSync('psql', [env.DATABASE_URL, '-v', 'ON_ERROR_STOP=1', '-q', '-c', code], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
    })
  }
  const { source, esm } = program(code, block)
  const file = path.join(dir, esm ? 'block.mjs' : 'block.cjs')
  fs.writeFileSync(file, source)
  return spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: TIMEOUT_MS })
}

async function main() {
  const args = process.argv.slice(2)
  const files = args.length
    ? args.map(f => path.resolve(f))
    : [
        path.join(ROOT, 'README.md'),
        ...fs
          .readdirSync(path.join(ROOT, 'docs'))
          .filter(f => f.endsWith('.md'))
          .sort()
          .map(f => path.join(ROOT, 'docs', f)),
      ]
  const services = new Services()
  const work = fs.mkdtempSync(path.join(ROOT, '.doctest-'))
  const results = { passed: 0, failed: [], skipped: [] }
  try {
    for (const file of files) {
      let previousJs = null
      let last = null
      for (const block of blocks(file)) {
        const where = `${block.file}:${block.line}`
        const marker = block.marker || ''
        const table = TABLE_OUTPUT.exec(marker)
        if (marker === 'output' || table) {
          if (!last) {
            results.failed.push(`${where}: an output block follows no block that ran`)
            continue
          }
          const exact = last.stdout.trimEnd() === block.code.trimEnd()
          const mismatch = table
            ? tableMismatch(block.code, last.stdout, table[1].split(', '))
            : exact
              ? ''
              : 'not equal'
          if (mismatch) {
            results.failed.push(
              `${where}: the output shown is not what ${last.where} printed (${mismatch}):\n${last.stdout}`,
            )
          } else results.passed++
          continue
        }
        last = null
        if (!RUN_LANGS.has(block.lang)) continue
        const skip = /^skip\s*\((.+)\)$/.exec(marker)
        if (skip) {
          results.skipped.push(`${where}: ${skip[1]}`)
          continue
        }
        if (marker && marker !== 'continue' && !skip) {
          results.failed.push(
            `${where}: unknown doctest marker "${marker}" (skip (why), continue, output or output table (COLUMN vary))`,
          )
          continue
        }
        let code = block.code
        if (marker === 'continue') {
          if (!previousJs) {
            results.failed.push(`${where}: "continue" follows no js block`)
            continue
          }
          code = `${previousJs}\n${code}`
        }
        if (block.lang === 'js') previousJs = code
        const dir = fs.mkdtempSync(path.join(work, 'block-'))
        const leaseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-doctest-'))
        try {
          // A lease directory and namespace of the block's own, so that the host's other snowid processes (and their
          // slots) never show in what a block prints.
          const env = cleanEnv({ ...leaseEnv(leaseDir), ...(await services.env(code, block.lang)) })
          const r = run(block, code, dir, env)
          if (r.error || r.status !== 0) {
            const why = r.error ? r.error.message : `exit ${r.status}${r.signal ? ` (${r.signal})` : ''}`
            results.failed.push(`${where} (${block.lang}): ${why}\n${(r.stderr || '').trim().slice(0, 2000)}`)
          } else {
            results.passed++
            last = { where, stdout: r.stdout }
          }
        } catch (e) {
          if (!(e instanceof Missing)) throw e
          const what = `${where}: needs ${e.message}, which is not installed`
          if (process.env.CI) results.failed.push(what)
          else results.skipped.push(what)
        } finally {
          fs.rmSync(leaseDir, { recursive: true, force: true })
        }
      }
    }
  } finally {
    await services.stop()
    fs.rmSync(work, { recursive: true, force: true })
  }
  for (const s of results.skipped) process.stdout.write(`skipped ${s}\n`)
  for (const f of results.failed) process.stdout.write(`FAILED ${f}\n`)
  process.stdout.write(
    `doctest: ${results.passed} passed, ${results.failed.length} failed, ${results.skipped.length} skipped\n`,
  )
  if (results.failed.length) process.exitCode = 1
}

if (require.main === module) {
  main().catch(e => {
    process.stderr.write(`doctest: ${e.stack}\n`)
    process.exitCode = 1
  })
}

module.exports = { blocks, instrument, program, tableMismatch, TABLE_OUTPUT }
