//! The napi binding: converts JS values to and from the core's, and maps core errors to coded JS errors.
//!
//! - `errors`: core errors thrown as coded JS errors.
//! - `values`: JS arguments (ids, times, option values, encodings) read for the core, and ids made into JS values.
//! - `env`: the environment a configuration reads: the calling thread's `process.env`.
//! - `options`: generator options read from JS, and their typings.
//! - `report`: what the binding returns: decoded ids, effective configuration, counters.
//! - `default`: the process's default generator and the module functions that use it.
//! - `snowflake`: the `Snowflake` class, a generator with its own options.
//! - `layout`: the `SnowflakeLayout` class, which reads ids of any layout and epoch without generating.
//! - `text`: ids as fixed-width text.
//! - `slots`: the worker-id slots a set of environment variables would use.
//! - `callbacks`: the hot calls as plain N-API callbacks.
#![cfg_attr(test, allow(dead_code))]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod callbacks;
mod default;
mod env;
mod errors;
mod layout;
mod options;
mod report;
mod slots;
mod snowflake;
mod text;
mod values;
