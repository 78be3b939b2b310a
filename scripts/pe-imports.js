#!/usr/bin/env node
'use strict'

// The DLLs a Windows binary (a PE file: .node, .dll, .exe) imports, read from its import table, and its machine. Plain JS, so that it runs the same on every runner, with no objdump or dumpbin to find.
// `node scripts/pe-imports.js FILE... [--machine x64|arm64|ia32] [--forbid NAME,...]` prints one JSON line per file
// and exits 1 when a file is not a PE for that machine, or imports a DLL whose name starts with a forbidden one (case
// does not matter: `--forbid vcruntime,api-ms-win-crt` refuses VCRUNTIME140.dll and api-ms-win-crt-runtime-l1-1-0.dll).

const fs = require('node:fs')

const MACHINES = { 34404: 'x64', 43620: 'arm64', 332: 'ia32' }

/** `{ machine, imports }` of the PE file in `buf`; throws on anything that is not a well-formed one. */
function peImports(buf) {
  const need = (ok, what) => {
    if (!ok) throw new Error(`not a PE file: ${what}`)
  }
  const u16 = at => {
    need(at >= 0 && at + 2 <= buf.length, `offset ${at} past the end`)
    return buf.readUInt16LE(at)
  }
  const u32 = at => {
    need(at >= 0 && at + 4 <= buf.length, `offset ${at} past the end`)
    return buf.readUInt32LE(at)
  }
  need(buf.length >= 64 && buf.toString('latin1', 0, 2) === 'MZ', 'no MZ header')
  const pe = u32(0x3c)
  need(u32(pe) === 0x00004550, 'no PE signature')
  const coff = pe + 4
  const machine = MACHINES[u16(coff)] ?? `0x${u16(coff).toString(16)}`
  const sections = u16(coff + 2)
  const optSize = u16(coff + 16)
  const opt = coff + 20
  const magic = u16(opt)
  need(magic === 0x10b || magic === 0x20b, `optional header magic 0x${magic.toString(16)}`)
  const dirs = opt + (magic === 0x20b ? 112 : 96)
  const dirCount = u32(opt + (magic === 0x20b ? 108 : 92))
  const table = opt + optSize
  const toOffset = rva => {
    for (let i = 0; i < sections; i++) {
      const s = table + 40 * i
      const va = u32(s + 12)
      const size = Math.max(u32(s + 8), u32(s + 16))
      if (rva >= va && rva < va + size) return u32(s + 20) + (rva - va)
    }
    throw new Error(`not a PE file: RVA 0x${rva.toString(16)} in no section`)
  }
  const cString = rva => {
    const at = toOffset(rva)
    const end = buf.indexOf(0, at)
    need(end > at && end - at < 256, `a DLL name at RVA 0x${rva.toString(16)}`)
    return buf.toString('latin1', at, end)
  }
  // The import directory (data directory 1): 20-byte descriptors, the DLL name's RVA at +12, ended by a zero one.
  const imports = []
  const rva = dirCount > 1 ? u32(dirs + 8) : 0
  for (let at = rva && toOffset(rva); rva; at += 20) {
    const name = u32(at + 12)
    if (name === 0) break
    need(imports.length < 4096, 'an import table without its end')
    imports.push(cString(name))
  }
  return { machine, imports }
}

function main() {
  const args = process.argv.slice(2)
  const option = name => {
    const at = args.indexOf(name)
    if (at < 0) return undefined
    const value = args[at + 1]
    if (value === undefined || value.startsWith('--')) throw new Error(`${name}: expected a value`)
    args.splice(at, 2)
    return value
  }
  const machine = option('--machine')
  const forbid = (option('--forbid') ?? '')
    .split(',')
    .filter(Boolean)
    .map(n => n.toLowerCase())
  if (!args.length) throw new Error('usage: pe-imports.js FILE... [--machine x64|arm64|ia32] [--forbid NAME,...]')
  let failed = false
  for (const file of args) {
    const found = peImports(fs.readFileSync(file))
    const bad = found.imports.filter(dll => forbid.some(f => dll.toLowerCase().startsWith(f)))
    console.log(JSON.stringify({ file, ...found }))
    if (machine && found.machine !== machine) {
      console.error(`${file}: expected a PE for ${machine}, found one for ${found.machine}`)
      failed = true
    }
    if (bad.length) {
      console.error(`${file}: imports ${bad.join(', ')}, which a clean Windows does not have`)
      failed = true
    }
  }
  if (failed) process.exitCode = 1
}

if (require.main === module) {
  try {
    main()
  } catch (err) {
    console.error(`pe-imports: ${err.message}`)
    process.exitCode = 1
  }
}

module.exports = { peImports }
