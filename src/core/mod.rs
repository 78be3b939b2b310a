//! The pure Rust core: layout, generator state machine, configuration and decimal ids. No napi here.

pub mod config;
pub mod error;
pub mod generator;
pub mod id;
pub mod layout;
pub mod lease;
pub mod registry;
pub mod start;
pub mod time;
