'use strict'

// The soak tier (npm run test:soak, by hand: too long for CI's 45 minutes): the move of a table from bigserial of
// __test__/backfill.test.js, with 10M rows: 27 minutes here, niced on 2 busy cores, with 11.6M live rows inserted
// meanwhile. npm test runs the same move with 200,000 rows.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

test('a table of 10M rows moved from bigserial to snowid ids while the live service inserts', {
  timeout: 3_600_000,
}, () => {
  // Without NODE_TEST_CONTEXT, which would make the inner runner report to this one instead of printing.
  const env = { ...process.env, BACKFILL_TEST_ROWS: '10000000' }
  delete env.NODE_TEST_CONTEXT
  const r = spawnSync(
    process.execPath,
    ['--test', '--test-name-pattern=moved from bigserial', path.join(__dirname, '..', 'backfill.test.js')],
    { env, encoding: 'utf8', timeout: 3_600_000 },
  )
  process.stdout.write(
    r.stdout
      .split('\n')
      .filter(l => l.startsWith('# ') && !/^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /.test(l))
      .join('\n') + '\n',
  )
  assert.equal(r.status, 0, `${r.stdout.slice(-4000)}${r.stderr.slice(-2000)}`)
  assert.match(r.stdout, /# 10000000 rows moved in \d+ ms/)
})
