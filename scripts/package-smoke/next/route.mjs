// app/api/ids/route.js of the Next app that `npm run test:package` builds (scripts/test-package.js): an id made on
// the server, sent as a decimal string, and printed on the server's log, where next.cjs compares it with what the
// client read.
import { NextResponse } from 'next/server'
import { nextId } from 'snowid'
import { bigintsToStrings } from 'snowid/json'

export const dynamic = 'force-dynamic'

export function GET() {
  const id = nextId()
  console.log(`made ${id}`)
  return NextResponse.json(bigintsToStrings({ id }))
}
