'use strict'

const { parentPort } = require('node:worker_threads')
const { nextId } = require('snowid')
const checks = require('./checks.cjs')

checks.thread(nextId, parentPort)
