//! snowid: Twitter-snowflake 64-bit ids for Node.js. `core` is plain Rust; `js` is the napi binding.

pub(crate) mod core;
mod js;
