// A setup file, as dotenv's would: it assigns the test file's process.env, which under Jest is a copy the OS
// environment never sees.
process.env.SNOWID_WORKER_ID = '11'
process.env.SNOWID_LEASE = 'off'
