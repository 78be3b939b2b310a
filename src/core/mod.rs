//! The pure Rust core: no napi here. Each layer uses only the layers above it in this list.
//!
//! 1. Foundations: [`error`] (coded errors), [`number`] (numbers as JS gives and prints them), [`suggest`] ("did you
//!    mean"), [`hash`] (FNV-1a), [`time`] (the clock, and ISO-8601), [`env`] (environment sources).
//! 2. Ids: [`layout`] (the fields of an id), [`id`] (decimal text and ids from outside), [`encoding`] (fixed-width
//!    text).
//! 3. The generator: [`fence`] (the interface that guards it from outside: marks, and a stop), [`generator`] (the
//!    sequencer, the shared state and its fast path, restarts).
//! 4. Where an identity comes from: [`statefulset`] and [`replicas`] (what the environment says), [`config`]
//!    (options over the environment over defaults, from one table of options), [`lease`] (the host lease, which
//!    implements the fence, over a backend per platform).
//! 5. Putting them together: [`registry`] (one state per identity per process) and [`identity`] (a configuration's
//!    lease, state and generator).

pub mod env;
pub mod error;
pub mod hash;
pub mod number;
pub mod suggest;
pub mod time;

pub mod encoding;
pub mod id;
pub mod layout;

pub mod fence;
pub mod generator;

pub mod config;
pub mod lease;
pub mod replicas;
pub mod statefulset;

pub mod identity;
pub mod registry;

#[cfg(test)]
pub(crate) mod testing;
