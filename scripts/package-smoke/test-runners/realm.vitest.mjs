import * as snowid from 'snowid'
import * as postgres from 'snowid/postgres'
import { expect, test } from 'vitest'
import realmChecks from './realm-checks.cjs'

realmChecks({ test, expect }, snowid, postgres)
