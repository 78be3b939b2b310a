'use strict'

// The order of configuration calls never makes ids outside a slot claimed in their id space: config() before a
// configure() of another layout, and Snowflakes of several layouts, over one lease directory or one each. Two
// processes run at once, and their ids are counted by sorting (see call-order.js, which also runs random sequences of
// these calls; call-order-stores.test.js adds snowid/redis's configureWorkerId to them).

const test = require('node:test')
const assert = require('node:assert/strict')

const { wasiSkip } = require('./helpers.js')
const { pair, runRounds } = require('./call-order.js')

const noLease = wasiSkip('the WASI build has no host lease')

// The issue's case: a wide layout with one slot, one process calling config() first (which leases the default
// layout's slot), the other configuring the wide layout at once. Before, with a lease directory each, the first
// process made its ids on a slot claimed only in the default layout's id space: millions of duplicates.
test(
  'config() before a configure() of another id space: refused with the call order, 0 duplicates',
  noLease,
  async () => {
    const first = [{ call: 'config' }, { call: 'configure', layout: 'B' }, { call: 'nextIds' }]
    const second = [{ call: 'configure', layout: 'B' }, { call: 'nextIds' }]
    for (const shared of [false, true]) {
      const r = await pair([first, second], { shared })
      for (const dups of Object.values(r.dups)) assert.equal(dups, 0, JSON.stringify(r))
      const [configured, issued] = r.outcomes[0].slice(1)
      assert.equal(configured.code, 'ERR_SNOWID_ID_SPACE_CHANGED', JSON.stringify(r))
      assert.match(
        configured.message,
        /^configure: expected a call before config\(\) leased the default generator's slot/,
      )
      assert.match(configured.message, /Call configure\(\) before config\(\)/)
      // Its default generator keeps the configuration config() leased for.
      assert.equal(issued.ok, '3-5-2-12', JSON.stringify(r))
      // The other takes the wide layout's one slot; with one directory, it may find it held by the slot file the
      // first process leased (when config() came first), which keeps it out as well.
      const other = r.outcomes[1][1]
      assert.ok(other.ok === '0-0-0-22' || (shared && other.code === 'ERR_SNOWID_NO_FREE_WORKER_ID'), JSON.stringify(r))
    }
  },
)

test('a Snowflake of another id space on a slot leased first in one: refused, 0 duplicates', noLease, async () => {
  const first = [
    { call: 'snowflake', layout: 'A' },
    { call: 'snowflake', layout: 'B' },
  ]
  const second = [{ call: 'snowflake', layout: 'B' }]
  const r = await pair([first, second], { shared: false })
  for (const dups of Object.values(r.dups)) assert.equal(dups, 0, JSON.stringify(r))
  assert.equal(r.outcomes[0][1].code, 'ERR_SNOWID_ID_SPACE_CHANGED', JSON.stringify(r))
  assert.match(r.outcomes[0][1].message, /^workerId: expected a slot leased in the id space of this generator/)
  assert.equal(r.outcomes[1][0].ok, '0-0-0-22', JSON.stringify(r))
})

test('random sequences of configuration calls in two processes at once: 0 duplicates', noLease, async () => {
  assert.ok((await runRounds(10)) > 0)
})
