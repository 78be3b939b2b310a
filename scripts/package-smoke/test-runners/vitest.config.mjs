// The pool is given on the command line: vmThreads and vmForks run each test file in a `vm` realm.
export default { test: { include: ['realm.vitest.mjs'], setupFiles: ['./setup.cjs'] } }
