'use strict'

const cluster = require('node:cluster')
const path = require('node:path')
const snowid = require('snowid')
const { fork, workers } = require('snowid/cluster')
const checks = require('./checks.cjs')

if (cluster.isPrimary) checks.primary({ ...snowid, fork, workers }, { threadFile: path.join(__dirname, 'thread.cjs') })
else checks.clusterWorker(snowid)
