import cluster from 'node:cluster'
import { createRequire } from 'node:module'
import * as namespace from 'snowid'
import { SnowflakeLayout, config, decode, nextId, nextIdString, timestampOf } from 'snowid'
import { fork, workers } from 'snowid/cluster'
import checks from './checks.cjs'

const api = { SnowflakeLayout, config, decode, nextId, nextIdString, timestampOf, fork, workers }

if (cluster.isPrimary) {
  await checks.check('esm exports', () => {
    const required = Object.keys(createRequire(import.meta.url)('snowid')).sort()
    const imported = Object.keys(namespace)
      .filter(name => name !== 'default' && name !== 'module.exports')
      .sort()
    if (JSON.stringify(imported) !== JSON.stringify(required)) {
      throw new Error(`expected the named exports [${required}], found [${imported}]`)
    }
  })
  await checks.primary(api, { threadFile: new URL('./thread.mjs', import.meta.url) })
} else {
  checks.clusterWorker(api)
}
