#!/usr/bin/env node
'use strict'

// npm run release:version <version>: sets one version on the package, its platform packages (npm/*/package.json),
// the optionalDependencies that name them, and package-lock.json's record of the root, so that a release publishes
// matching versions. `npm version` alone bumps only the root. Writes nothing unless every file checks out.
//
//   node scripts/release-version.js 0.2.0 [--root <dir>]

const fs = require('node:fs')
const path = require('node:path')

// Semantic Versioning 2.0.0's grammar, without a leading v.
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/

function fail(message) {
  process.stderr.write(`release:version: ${message}\n`)
  process.exit(2)
}

function parseArgs(argv) {
  let root = path.join(__dirname, '..')
  const words = []
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--root') root = argv[++i] ?? fail('--root: expected a directory, found nothing')
    else words.push(argv[i])
  }
  if (words.length !== 1) fail(`expected one version (for example 0.2.0), found ${words.length}`)
  const version = words[0]
  if (!SEMVER.test(version))
    fail(`expected a semantic version such as 0.2.0 or 1.0.0-rc.1, found ${JSON.stringify(version.slice(0, 40))}`)
  return { root, version }
}

function read(file) {
  return { file, json: JSON.parse(fs.readFileSync(file, 'utf8')) }
}

function main() {
  const { root, version } = parseArgs(process.argv.slice(2))
  const pkg = read(path.join(root, 'package.json'))
  const platforms = fs
    .readdirSync(path.join(root, 'npm'), { withFileTypes: true })
    .filter(d => d.isDirectory())
    .map(d => read(path.join(root, 'npm', d.name, 'package.json')))
  // The native packages are optional dependencies; the WASI fallback is a plain dependency.
  const optional = pkg.json.optionalDependencies ?? {}
  const required = pkg.json.dependencies ?? {}
  const names = platforms.map(p => p.json.name).sort()
  const listed = [
    ...Object.keys(optional),
    ...Object.keys(required).filter(n => n.startsWith(`${pkg.json.name}-`)),
  ].sort()
  if (JSON.stringify(names) !== JSON.stringify(listed)) {
    fail(
      `the optional and platform dependencies (${listed.join(', ')}) are not the packages in npm/ (${names.join(', ')})`,
    )
  }
  pkg.json.version = version
  for (const name of names) (name in optional ? optional : required)[name] = version
  for (const p of platforms) p.json.version = version
  const changed = [pkg, ...platforms]
  const lockFile = path.join(root, 'package-lock.json')
  if (fs.existsSync(lockFile)) {
    const lock = read(lockFile)
    lock.json.version = version
    const self = lock.json.packages && lock.json.packages['']
    if (self) {
      self.version = version
      for (const deps of [self.optionalDependencies, self.dependencies]) {
        for (const name of names) if (deps && name in deps) deps[name] = version
      }
    }
    changed.push(lock)
  }
  for (const { file, json } of changed) fs.writeFileSync(file, JSON.stringify(json, null, 2) + '\n')
  process.stdout.write(`${pkg.json.name} ${version}: ${changed.map(c => path.relative(root, c.file)).join(', ')}\n`)
}

main()
