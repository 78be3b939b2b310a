// A node:test reporter for scripts/test-windows.js: one JSON line per top-level test of the file (a test file's
// subtests count in their parent), with its outcome, and for a failure or a skip why, in the first lines of its
// message joined on one line. It appends them to the file TEST_WINDOWS_RESULTS names, synchronously: with
// --test-force-exit the process may end before a stream to a --test-reporter-destination is flushed. A file that
// fails outside any test (it throws while loading, or exits early) reports itself as a test named after it.

import { appendFileSync } from 'node:fs'

// A message's first lines: an assertion's own message often ends with the output of the process it checked.
function firstLines(value) {
  return String(value ?? '')
    .split('\n')
    .map(line => line.trim())
    .filter(Boolean)
    .slice(0, 4)
    .join(' | ')
    .slice(0, 600)
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
        ? firstLines(error?.cause?.message ?? error?.message ?? error)
        : typeof (skip ?? todo) === 'string'
          ? firstLines(skip ?? todo)
          : undefined
    appendFileSync(file, `${JSON.stringify({ name, status, ms: Math.round(details?.duration_ms ?? 0), why })}\n`)
  }
  yield ''
}
