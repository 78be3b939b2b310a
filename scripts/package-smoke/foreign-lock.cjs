'use strict'

// Run by test:package's npm-foreign-lock project between `npm install --package-lock-only` and `npm install`: makes the
// lock what npm/cli#4828 writes on another OS, with no entry for this platform's package (linux-x64).
const fs = require('node:fs')

const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'))
const removed = Object.keys(lock.packages).filter(key => /(^|\/)node_modules\/snowid-linux-x64-/.test(key))
if (!removed.length) throw new Error('package-lock.json: expected entries for snowid-linux-x64-*, found none')
for (const key of removed) delete lock.packages[key]
fs.writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`)
console.log(`removed ${removed.join(', ')}`)
