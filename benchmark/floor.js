'use strict'

// Builds benchmark/floor.c into .cache/bench/floor-<node version>.node with `cc` and the running Node's headers
// (<prefix>/include/node), once, and loads it. Returns null, with the reason, when it cannot be built.

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')

function floorAddon() {
  const out = path.join(ROOT, '.cache', 'bench', `floor-${process.version}-${process.arch}.node`)
  if (!fs.existsSync(out)) {
    const include = path.join(path.dirname(path.dirname(process.execPath)), 'include', 'node')
    if (!fs.existsSync(path.join(include, 'node_api.h'))) return { floor: null, why: `no N-API headers in ${include}` }
    fs.mkdirSync(path.dirname(out), { recursive: true })
    try {
      execFileSync('cc', ['-O2', '-shared', '-fPIC', '-I', include, '-o', out, path.join(__dirname, 'floor.c')], {
        stdio: 'pipe',
      })
    } catch (e) {
      return {
        floor: null,
        why: `cc failed: ${
          String(e.stderr || e.message)
            .trim()
            .split('\n')[0]
        }`,
      }
    }
  }
  return { floor: require(out).floor, why: null }
}

module.exports = { floorAddon }
