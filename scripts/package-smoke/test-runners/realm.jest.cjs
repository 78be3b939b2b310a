const snowid = require('snowid')
const postgres = require('snowid/postgres')

require('./realm-checks.cjs')({ test, expect }, snowid, postgres)
