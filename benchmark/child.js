'use strict'

// What the benchmarks that measure in child processes share: running one child and reading its figures, and the
// median of a round's figures.

const { spawn } = require('node:child_process')

/** Runs `code` in a new Node process with `env` added to this one's; resolves to the JSON it prints on stdout. */
function runChild(code, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', code], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', d => {
      out += d
    })
    child.stderr.on('data', d => {
      err += d
    })
    child.on('close', code => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exited ${code}: ${err}`))))
  })
}

function median(values) {
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

module.exports = { median, runChild }
