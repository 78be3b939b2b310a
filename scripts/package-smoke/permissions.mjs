// Run by test:package's Deno project with some or all of --allow-ffi, --allow-env and --allow-read: prints one JSON
// line, either the type of an id and the build that loaded it, or the code and message of the error.
import { createRequire } from 'node:module'

let out
try {
  const { nextId } = await import('snowid')
  // The loader reports what it loaded; it is the package's own file, not one of its exports.
  const target = createRequire(import.meta.resolve('snowid'))('./binding.js').__napiBindingTarget
  out = { id: typeof nextId(), target }
} catch (err) {
  out = { code: err.code, message: err.message }
}
console.log(JSON.stringify(out))
