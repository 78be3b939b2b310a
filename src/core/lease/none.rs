//! The host lease where no backend exists (WASI, which has neither `flock` nor named kernel objects): no directory
//! ever opens, so no slot is ever taken. Opening one fails with `ERR_SNOWID_LEASE_UNSUPPORTED`, which says what to
//! configure instead.

use std::ops::RangeInclusive;
use std::path::Path;

use super::super::error::{Class, Code, Error, Result};
use super::backend::{Attempt, Backend, CopyClaim, Sharing, SlotFile, SlotHolder, Taken, Trouble};
use super::record::Record;
use super::space::Space;

/// The platform, as the error names it.
#[cfg(target_os = "wasi")]
const PLATFORM: &str = "WASI (the snowid-wasm32-wasi build)";
#[cfg(not(target_os = "wasi"))]
const PLATFORM: &str = "a platform snowid has no host lease for";

/// An open lease directory: none can exist here.
pub enum NoDir {}

/// A held slot's file: none can exist here.
pub enum NoFile {}

impl Backend for NoDir {
    type File = NoFile;

    fn open(path: &Path, _sharing: Sharing, _space: Space) -> Result<Self> {
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

    fn path(&self) -> &Path {
        match *self {}
    }

    fn attempt(&self, _datacenter_id: u32, _worker_id: u32) -> Result<Attempt<Taken<NoFile>>> {
        match *self {}
    }

    fn holders(&self, _datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
        match *self {}
    }
}

impl SlotFile for NoFile {
    fn locate(&mut self, _now: u64) -> std::result::Result<(), Trouble> {
        match *self {}
    }

    fn write(&mut self, _record: &Record) -> Result<()> {
        match *self {}
    }

    fn in_place(&self) -> bool {
        match *self {}
    }
}

/// An identity's claim by one loaded copy of snowid: always granted, so copies with binaries of their own are not
/// checked here. On WASI every load instantiates the module afresh whatever the file, and `lib/wasi-threads.js`
/// claims identities across loads and threads instead.
pub struct NoCopyClaim;

impl CopyClaim for NoCopyClaim {
    fn take(_identity: u64) -> std::io::Result<Option<Self>> {
        Ok(Some(NoCopyClaim))
    }
}
