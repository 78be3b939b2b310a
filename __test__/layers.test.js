'use strict'

// The shape of src/ that ARCHITECTURE.md describes: module files that use each other one way only (no import
// circle, between files or between the directories of one folder), and no file over about 500 lines before its tests.
// Read from the `use` paths and inline `super::`/`crate::` paths of each file, tests left out.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const SRC = path.join(__dirname, '..', 'src')
/** The most non-blank lines a file may have before its test module. */
const MAX_LINES = 500
const TEST_MODULE = /^#\[cfg\((?:all\()?test[^\n]*\n(?:#\[[^\n]*\n)*(?:pub(?:\([a-z]+\))? )?mod /m

/** Every module file under src/ but tests, by its module path (`core::lease::holder`). */
function modules() {
  const found = new Map()
  for (const file of fs.readdirSync(SRC, { recursive: true })) {
    if (!file.endsWith('.rs')) continue
    const parts = file.slice(0, -3).split(path.sep)
    if (['mod', 'lib'].includes(parts.at(-1))) parts.pop()
    const last = parts.at(-1) ?? ''
    if (last.endsWith('tests') || last === 'testing') continue
    found.set(parts.join('::'), path.join(SRC, file))
  }
  return found
}

/** A file's text before its test module, without comments. */
function body(file) {
  let text = fs.readFileSync(file, 'utf8')
  const m = TEST_MODULE.exec(text)
  if (m) text = text.slice(0, m.index)
  return text.replace(/\/\/[^\n]*/g, '')
}

/** `a::{b::c, d}` as ['a::b::c', 'a::d']. */
function expand(tree) {
  const open = tree.indexOf('{')
  if (open < 0) return [tree]
  const prefix = tree.slice(0, open)
  const inner = tree.slice(open + 1, tree.lastIndexOf('}'))
  const parts = []
  let depth = 0
  let current = ''
  for (const ch of inner) {
    if (ch === ',' && depth === 0) {
      parts.push(current)
      current = ''
      continue
    }
    if (ch === '{') depth++
    if (ch === '}') depth--
    current += ch
  }
  parts.push(current)
  return parts.filter(p => p.trim()).flatMap(p => expand(prefix + p.trim()))
}

/** The module paths a file's text names. */
function pathsIn(text) {
  const uses = [...text.matchAll(/\buse\s+([^;]+);/g)].flatMap(m =>
    expand(m[1].replace(/\s+as\s+\w+/g, '').replace(/\s+/g, '')),
  )
  const inline = [
    ...text
      .replace(/\buse\s+[^;]+;/g, '')
      .matchAll(/(?<![:\w])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:::[A-Za-z_][A-Za-z0-9_]*)+)/g),
  ].map(m => m[1])
  return [...uses, ...inline]
}

/** Each module file's uses of other module files. */
function edges(mods) {
  const out = new Map()
  for (const [name, file] of mods) {
    const self = name ? name.split('::') : []
    const targets = new Set()
    for (const p of pathsIn(body(file))) {
      let segs = p.split('::').filter(Boolean)
      let base
      if (segs[0] === 'crate') [base, segs] = [[], segs.slice(1)]
      else if (segs[0] === 'self') [base, segs] = [self, segs.slice(1)]
      else if (segs[0] === 'super') {
        base = self.slice(0, -1)
        segs = segs.slice(1)
        while (segs[0] === 'super') [base, segs] = [base.slice(0, -1), segs.slice(1)]
      } else if (mods.has([...self, segs[0]].join('::'))) base = self
      else continue
      const full = [...base, ...segs]
      for (let i = full.length; i > 0; i--) {
        const target = full.slice(0, i).join('::')
        if (mods.has(target)) {
          if (target !== name) targets.add(target)
          break
        }
      }
    }
    out.set(name, targets)
  }
  return out
}

/** The strongly connected groups of more than one node (Tarjan). */
function circles(graph) {
  const index = new Map()
  const low = new Map()
  const stack = []
  const on = new Set()
  const found = []
  let next = 0
  const visit = v => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    on.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v), low.get(w)))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)))
    }
    if (low.get(v) === index.get(v)) {
      const group = []
      let w
      do {
        w = stack.pop()
        on.delete(w)
        group.push(w)
      } while (w !== v)
      if (group.length > 1) found.push(group.sort().join(' <-> '))
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

test('no module of src/ uses another that uses it back, between files or between directories', () => {
  const mods = modules()
  const graph = edges(mods)
  assert.ok(graph.get('core::identity').has('core::lease'), 'the scan sees core::identity use core::lease')
  assert.deepEqual(circles(graph), [], 'circles between files')
  // Within each folder, its entries (files and directories) collapsed: a directory uses what any file in it uses.
  const folders = new Set([...mods.keys()].map(m => m.split('::').slice(0, -1).join('::')))
  for (const folder of folders) {
    const depth = folder ? folder.split('::').length : 0
    const inFolder = m => (folder ? m.startsWith(`${folder}::`) : m !== '') && m.split('::').length > depth
    const entry = m =>
      m
        .split('::')
        .slice(0, depth + 1)
        .join('::')
    const collapsed = new Map()
    for (const [from, targets] of graph) {
      if (!inFolder(from)) continue
      for (const to of targets) {
        if (!inFolder(to) || entry(from) === entry(to)) continue
        if (!collapsed.has(entry(from))) collapsed.set(entry(from), new Set())
        collapsed.get(entry(from)).add(entry(to))
      }
    }
    assert.deepEqual(circles(collapsed), [], `circles between the entries of src/${folder.replaceAll('::', '/')}`)
  }
})

test('a circle is seen: two files that use each other', () => {
  const graph = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['a'])],
    ['c', new Set(['a'])],
  ])
  assert.deepEqual(circles(graph), ['a <-> b'])
  assert.deepEqual(pathsIn('use super::super::x::{y::Z, w};\nlet n = super::v::f();'), [
    'super::super::x::y::Z',
    'super::super::x::w',
    'super::v::f',
  ])
})

test(`no file of src/ has over ${MAX_LINES} lines before its tests`, () => {
  const over = []
  for (const [, file] of modules()) {
    let text = fs.readFileSync(file, 'utf8')
    const m = TEST_MODULE.exec(text)
    if (m) text = text.slice(0, m.index)
    const lines = text.split('\n').filter(l => l.trim()).length
    if (lines > MAX_LINES) over.push(`${path.relative(SRC, file)}: ${lines}`)
  }
  assert.deepEqual(over, [])
})
