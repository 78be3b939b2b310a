// A node:test reporter for scripts/test-windows.js: one JSON line per top-level test of the file (a test file's
// subtests count in their parent), with its outcome, and for a failure or a skip the first line of why. It appends
// them to the file TEST_WINDOWS_RESULTS names, synchronously: with --test-force-exit the process may end before a
// stream to a --test-reporter-destination is flushed. A file that fails outside any test (it throws while loading,
// or exits early) reports itself as a test named after it.

import { appendFileSync } from 'node:fs'

function firstLine(value) {
  return String(value ?? '')
    .split('\n')[0]
    .trim()
    .slice(0, 300)
}

export default async function* reporter(source) {
  const file = process.env.TEST_WINDOWS_RESULTS
  if (!file) throw new Error('reporter.mjs: TEST_WINDOWS_RESULTS names no file to write to')
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue
    const { name, skip, todo, details } = event.data
    let status = event.type === 'test:pass' ? 'pass' : 'fail'
    if (skip !== undefined && skip !== false) status = 'skip'
    else if (todo !== undefined && todo !== false) status = 'todo'
    const error = details?.error
    const why =
      status === 'fail'
        ? firstLine(error?.cause?.message ?? error?.message ?? error)
        : typeof (skip ?? todo) === 'string'
          ? firstLine(skip ?? todo)
          : undefined
    appendFileSync(file, `${JSON.stringify({ name, status, ms: Math.round(details?.duration_ms ?? 0), why })}\n`)
  }
  yield ''
}
