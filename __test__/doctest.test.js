'use strict'

// scripts/doctest.js: runs the blocks of a Markdown file, checks values shown in comments and output blocks, and
// refuses an unknown marker. (npm run test:docs runs it on README.md and docs/.)

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const { wasiSkip } = require('./helpers.js')

const SCRIPT = path.join(__dirname, '..', 'scripts', 'doctest.js')
const fence = '```'

function runDoc(t, markdown) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snowid-doctest-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'doc.md')
  fs.writeFileSync(file, markdown)
  return spawnSync(process.execPath, [SCRIPT, file], { encoding: 'utf8', timeout: 120_000 })
}

test('a block whose shown values match the run passes; other digits are allowed', t => {
  const r = runDoc(
    t,
    [
      `${fence}js`,
      "const { decode } = require('snowid')",
      "decode(4194304n) // { id: '4194305', timestamp: 1580486400002, datacenterId: 0, workerId: 0, clockBack: 0, sequence: 0 }",
      `${fence}`,
      '<!-- doctest: continue -->',
      `${fence}js`,
      "decode(0n).id // '0'",
      `${fence}`,
      `${fence}sh`,
      'snowid decode 0',
      `${fence}`,
      '<!-- doctest: output -->',
      `${fence}text`,
      '{"id":"0","timestamp":1580486400000,"datacenterId":0,"workerId":0,"clockBack":0,"sequence":0}',
      `${fence}`,
    ].join('\n'),
  )
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /doctest: 4 passed, 0 failed, 0 skipped/)
})

test(
  'a shown value of another shape, a wrong output block, a failing block and an unknown marker fail',
  wasiSkip('its blocks take ids from the host lease'),
  t => {
    const r = runDoc(
      t,
      [
        `${fence}js`,
        "require('snowid').nextIdString() // 901710689788231680n",
        `${fence}`,
        `${fence}sh`,
        'snowid --help',
        `${fence}`,
        '<!-- doctest: output -->',
        `${fence}text`,
        'snowid [count]',
        `${fence}`,
        `${fence}js`,
        "require('snowid').nextIds(2).lenght.toString()",
        `${fence}`,
        '<!-- doctest: maybe -->',
        `${fence}js`,
        '1',
        `${fence}`,
        '<!-- doctest: skip (shown only) -->',
        `${fence}js`,
        'throw new Error()',
        `${fence}`,
      ].join('\n'),
    )
    assert.equal(r.status, 1)
    assert.match(r.stdout, /the comment shows 901710689788231680n, the run gave '\d+'/)
    assert.match(r.stdout, /the output shown is not what .*doc\.md:4 printed/)
    assert.match(r.stdout, /doc\.md:11 \(js\): exit 1/)
    assert.match(r.stdout, /unknown doctest marker "maybe"/)
    assert.match(r.stdout, /skipped .*doc\.md:19: shown only/)
    assert.match(r.stdout, /doctest: 1 passed, 4 failed, 1 skipped/)
  },
)

test('an output table: every cell must match but those of the columns that vary, which must be "-" alike', t => {
  // Each sh block prints the same table: slot 0/0 with pid 12 and no time, slot 0/1 with pid 3456 and a time.
  const printed = `${fence}sh\nprintf 'SLOT  PID   SINCE\\n0/0   12    -\\n0/1   3456  2026-11-29T05:24:21.629Z\\n'\n${fence}`
  const shown = (marker, lines) => [printed, `<!-- doctest: ${marker} -->`, `${fence}text`, ...lines, fence]
  const r = runDoc(
    t,
    [
      // Other pids and another time, aligned otherwise: passes.
      ...shown('output table (PID, SINCE vary)', [
        'SLOT  PID    SINCE',
        '0/0   31337  -',
        '0/1   7      2025-01-01T00:00:00.000Z',
      ]),
      // A slot that differs.
      ...shown('output table (PID, SINCE vary)', ['SLOT  PID  SINCE', '0/0   1    -', '0/2   2    2026']),
      // A time shown where the run has none.
      ...shown('output table (PID, SINCE vary)', ['SLOT  PID  SINCE', '0/0   1    2026', '0/1   2    2026']),
      // A line missing.
      ...shown('output table (PID, SINCE vary)', ['SLOT  PID  SINCE', '0/0   1    -']),
      // A column the table does not have.
      ...shown('output table (HOST vary)', [
        'SLOT  PID   SINCE',
        '0/0   12    -',
        '0/1   3456  2026-11-29T05:24:21.629Z',
      ]),
      // Without the marker's columns, the pids must be equal.
      ...shown('output', ['SLOT  PID  SINCE', '0/0   1    -', '0/1   2    2026-11-29T05:24:21.629Z']),
    ].join('\n'),
  )
  assert.equal(r.status, 1, r.stdout + r.stderr)
  assert.match(r.stdout, /doc\.md:14: .*\(line 3, SLOT: "0\/2" shown, "0\/1" printed\)/)
  assert.match(r.stdout, /doc\.md:23: .*\(line 2, SINCE: "2026" shown, "-" printed\)/)
  assert.match(r.stdout, /doc\.md:32: .*\(2 lines shown, 3 printed\)/)
  assert.match(r.stdout, /doc\.md:40: .*\(the shown table has no column HOST\)/)
  assert.match(r.stdout, /doc\.md:49: .*\(not equal\)/)
  assert.match(r.stdout, /doctest: 7 passed, 5 failed, 0 skipped/)
})
