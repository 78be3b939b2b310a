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
