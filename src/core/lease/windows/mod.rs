//! The host lease on Windows: named events as claims, a byte-range lock on the slot file, and files and
//! directories held open so that no process can delete or rename them meanwhile.
//!
//! - `sys`: the Win32 calls;
//! - `claim`: the claims that keep a slot to one live process whatever happens to the files;
//! - `copies`: an identity's claim by one loaded copy of snowid, that the process's other copies see;
//! - `dir`: the lease directory, and slot files opened and checked without following links;
//! - `slot`: a held slot's file, found again before each write;
//! - `listing`: the slots live processes hold, by their claims.
//!
//! The lock is on one byte past the two records (`dir::LOCK_BYTE`), taken with `LockFileEx` through the handle the
//! holder writes with: Windows' byte-range locks are mandatory (no other handle may read a locked range), and
//! readers of the marks must never wait. Another handle of the same process cannot take it either, as with `flock`.
//! Windows says the locks of a process that ends are freed, but not at once: a newcomer that finds a slot still
//! locked moves on to the next, it does not wait.

mod claim;
mod copies;
mod dir;
mod listing;
mod slot;
mod sys;

use std::ops::RangeInclusive;
use std::path::Path;

use super::super::error::{quote_path, Result};
use super::backend::{Attempt, Backend, Holder, Sharing, Taken};
use super::files::{dir_error, read_records, record_pid};
use super::record::read_file;
use super::space::{path_name, slot_name, Space};
use claim::{id_name, space_claim, Claim};
pub use copies::WinCopyClaim;
use dir::{holder_at, open_slot, Directory, Opened, LOCK_BYTE};
pub use slot::WinFile;
pub use sys::program_data;

/// An open lease directory on Windows.
pub struct WinDir(Directory);

impl WinDir {
    /// Makes the slot's claim `name`: `None` when another process holds it.
    fn claim(&self, name: &str) -> Result<Option<Claim>> {
        Claim::take(name).map_err(|e| dir_error(&self.0.path, "claiming a slot", &e))
    }
}

impl Backend for WinDir {
    type File = WinFile;

    /// Every user's files in the default directory, as in any other, have the access rights the folder passes on
    /// (`Sharing` changes nothing on Windows).
    fn open(path: &Path, _sharing: Sharing, space: Space) -> Result<Self> {
        Directory::open(path, space).map(WinDir)
    }

    fn path(&self) -> &Path {
        &self.0.path
    }

    /// The slot's three claims first, then its file's lock.
    fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt<Taken<WinFile>>> {
        let d = &self.0;
        let path = d.path.join(slot_name(datacenter_id, worker_id));
        let Some(by_path) = self.claim(&path_name(&d.path, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(holder_at(&path))));
        };
        let Some(by_id) = self.claim(&id_name(d.id, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(holder_at(&path))));
        };
        let by_space =
            space_claim(d.space, datacenter_id, worker_id).map_err(|e| dir_error(&d.path, "claiming a slot", &e))?;
        let Some(by_space) = by_space else {
            return Ok(Attempt::Held(Holder::InSpace));
        };
        let (file, ours) = match open_slot(d, &path)? {
            Opened::Writable(f) => (f, true),
            Opened::ReadOnly(f) => (f, false),
            Opened::Busy => return Ok(Attempt::Held(Holder::Here(None))),
        };
        match sys::try_lock_byte(&file, LOCK_BYTE) {
            Ok(true) => {}
            Ok(false) => return Ok(Attempt::Held(Holder::Here(record_pid(&file, &path)))),
            Err(e) => return Err(dir_error(&d.path, &format!("locking {}", quote_path(&path)), &e)),
        }
        if !ours {
            return Ok(Attempt::Foreign("another user (this one may not write to it)".to_string()));
        }
        let bytes =
            read_records(&file).map_err(|e| dir_error(&d.path, &format!("reading {}", quote_path(&path)), &e))?;
        let previous = read_file(&bytes, &path)?.unwrap_or_default();
        let file = WinFile {
            dir_path: d.path.clone(),
            space: d.space,
            path,
            datacenter_id,
            worker_id,
            _dir: d.dir.clone(),
            file,
            earlier: Vec::new(),
            claims: vec![by_path, by_id],
            claimed: vec![d.id],
            _space_claim: by_space,
        };
        Ok(Attempt::Taken(Taken { file, previous }))
    }

    fn recorded(&self, datacenters: RangeInclusive<u32>) -> Result<Vec<(u32, u32, u32)>> {
        listing::recorded(&self.0, datacenters)
    }
}

#[cfg(test)]
mod tests;
