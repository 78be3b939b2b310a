//! snowid: Twitter-snowflake 64-bit ids for Node.js. `core` is plain Rust; `js` is the napi binding.

pub mod core;
mod js;
