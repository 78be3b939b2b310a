//! The host lease where `lease.rs`'s Unix file APIs are missing (WASI, which has no `flock`, and Windows): the same
//! names, but no directory ever opens, so no lease exists. Opening one fails with `ERR_SNOWID_LEASE_UNSUPPORTED`,
//! which says what to configure instead.

use std::path::Path;
use std::sync::Arc;

use super::error::{Class, Code, Error, Result};
use super::generator::SharedState;
use super::layout::Layout;

/// The platform, as the error names it.
#[cfg(target_os = "wasi")]
const PLATFORM: &str = "WASI (the snowid-wasm32-wasi build)";
#[cfg(not(target_os = "wasi"))]
const PLATFORM: &str = "Windows";

/// What a slot's earlier holder left (never read here: no lease is ever taken).
pub struct Record {
    pub marks: Vec<(u32, u64)>,
}

/// Who may use a lease directory (kept for the callers' signatures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    Shared,
    Private,
}

/// A held slot: none can exist here.
pub enum Lease {}

impl Lease {
    pub fn worker_id(&self) -> u32 {
        match *self {}
    }

    pub fn datacenter_id(&self) -> u32 {
        match *self {}
    }

    pub fn previous(&self) -> &Record {
        match *self {}
    }

    pub fn reserve(&self, _clock_back: u32, _until: u64, _now: u64) -> Result<()> {
        match *self {}
    }

    pub fn stop_on_loss(&self, _state: &SharedState, _layout: &Layout) {
        match *self {}
    }
}

/// An open lease directory: none can exist here.
pub enum LeaseDir {}

impl LeaseDir {
    pub fn open(path: &Path, _sharing: Sharing, _space: super::claim::Space) -> Result<LeaseDir> {
        Err(Error::new(
            Code::LeaseUnsupported,
            Class::Error,
            format!(
                "host lease in {}: expected a platform with flock, found {PLATFORM}; set \
                 SNOWID_LEASE=off with an explicit SNOWID_WORKER_ID (or SNOWID_WORKER_ID_FROM=statefulset), or take worker ids from \
                 snowid/redis or snowid/postgres",
                path.display()
            ),
        ))
    }

    pub fn acquire(&self, _datacenter_id: u32, _worker_id: u32, _what: &str) -> Result<Arc<Lease>> {
        match *self {}
    }

    pub fn acquire_auto(
        &self,
        _datacenters: std::ops::RangeInclusive<u32>,
        _slots: u64,
        _usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        match *self {}
    }

    pub fn acquire_from(
        &self,
        _datacenter_id: u32,
        _slots: u64,
        _first: u64,
        _usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        match *self {}
    }

    pub fn recorded(&self, _datacenter_id: u32) -> Result<Vec<(u32, u32)>> {
        match *self {}
    }
}
