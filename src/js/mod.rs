//! The napi binding: converts JS values to and from the core's, and maps core errors to coded JS errors. In three
//! groups, each of which uses only itself and the groups before it.
//!
//! Values and errors:
//! - `errors`: core errors thrown as coded JS errors, and warnings.
//! - `values`: JS arguments (ids, times, option values, encodings) read for the core, and ids made into JS values.
//! - `env`: the environment a configuration reads: a JS `process.env` (the caller's, see `lib/addon.js`), own
//!   variables only.
//! - `options`: generator options read from JS, and their typings.
//! - `report`: what the binding returns: decoded ids, effective configuration, counters.
//!
//! The hot calls, as plain N-API callbacks (one path per call, on every platform):
//! - `functions`: JS functions made from plain callbacks, which own their data.
//! - `module_instance`: what each module instance keeps: its scratch, its `Snowflake` class and the caller's
//!   `process.env`.
//! - `batches`: the native halves of `nextIds` and `nextIdStrings`.
//! - `decoding`: the native halves of `decode` and `timestampOf`.
//!
//! The generators and what JS reaches:
//! - `default`: the process's default generator.
//! - `module`: the module's functions, over the default generator.
//! - `snowflake_core`: a `Snowflake`'s core: its generator and its hot methods.
//! - `snowflake`: the `Snowflake` class as napi-rs makes it, whose class semantics `index.js` adds.
//! - `layout`: the `SnowflakeLayout` class, which reads ids of any layout and epoch without generating.
//! - `text`: ids as fixed-width text.
//! - `slots`: the worker-id slots a set of environment variables would use.
#![cfg_attr(test, allow(dead_code))]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod env;
mod errors;
mod options;
mod report;
mod values;

mod batches;
mod decoding;
mod functions;
mod module_instance;

mod default;
mod layout;
mod module;
mod slots;
mod snowflake;
mod snowflake_core;
mod text;
