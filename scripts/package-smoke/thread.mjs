import { parentPort } from 'node:worker_threads'
import { nextId } from 'snowid'
import checks from './checks.cjs'

checks.thread(nextId, parentPort)
