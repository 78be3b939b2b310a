//! The host lease on Unix: flock, files opened relative to the directory, and (on Linux and Android) claims in the
//! abstract socket namespace.
//!
//! - `dir`: the lease directory and its safety;
//! - `files`: slot files opened and checked without following links or blocking;
//! - `claim`: the claims that keep a slot to one live process whatever happens to the files;
//! - `copies`: an identity's claim by one loaded copy of snowid, that the process's other copies see;
//! - `slot`: a held slot's file, found again before each write;
//! - `listing`: the slots live processes hold, by `/proc/locks`.

mod claim;
mod copies;
mod dir;
mod files;
mod listing;
mod slot;

use std::ffi::CString;
use std::fs::{File, TryLockError};
use std::io::ErrorKind;
use std::ops::RangeInclusive;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::backend::{Attempt, Backend, Holder, Sharing, Taken};
use super::record::read_file;
use super::space::{path_name, slot_name, Space};
use claim::{inode_name, space_claim, Claim};
pub use copies::UnixCopyClaim;
use dir::{dir_error, dir_problem, Directory};
use files::{check_slot_file, my_uid, open_at, read_records};
pub use slot::UnixFile;

/// An open lease directory on Unix.
pub struct UnixDir(Directory);

impl UnixDir {
    /// Opens a slot file to take it: read-write (made if missing) when this user may, else read-only to see its
    /// lock. Only a regular file of at most two records is accepted.
    fn open_slot(&self, name: &CString, path: &Path) -> Result<(File, bool)> {
        let d = &self.0;
        let (file, writable) = match open_at(&d.dir, name, libc::O_RDWR | libc::O_CREAT) {
            Ok(f) => (f, true),
            // Another user's file: it is read to honour its lock and marks.
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                (open_at(&d.dir, name, libc::O_RDONLY).map_err(|e| self.open_error(path, &e))?, false)
            }
            Err(e) => return Err(self.open_error(path, &e)),
        };
        let m = file.metadata().map_err(|e| dir_error(&d.path, &format!("reading {}", quote_path(path)), &e))?;
        check_slot_file(&m, path)?;
        Ok((file, writable && m.uid() == my_uid()))
    }

    fn open_error(&self, path: &Path, e: &std::io::Error) -> Error {
        match e.raw_os_error() {
            Some(libc::ELOOP) => Error::new(
                Code::LeaseCorrupt,
                Class::Error,
                format!(
                    "lease file {}: expected a regular file, found a symbolic link (snowid does not follow links); it \
                     is left as found",
                    quote_path(path)
                ),
            ),
            _ => dir_error(&self.0.path, &format!("opening {}", quote_path(path)), e),
        }
    }

    /// Binds the slot's claim `name`: `None` when another process holds it.
    fn claim(&self, name: &str) -> Result<Option<Claim>> {
        Claim::take(name).map_err(|e| dir_error(&self.0.path, "claiming a slot", &e))
    }
}

impl Backend for UnixDir {
    type File = UnixFile;

    fn open(path: &Path, sharing: Sharing, space: Space) -> Result<Self> {
        Directory::open(path, sharing, space).map(UnixDir)
    }

    fn path(&self) -> &Path {
        &self.0.path
    }

    /// The slot's three claims first, then its file's lock (which also reaches processes in other network
    /// namespaces).
    fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt<Taken<UnixFile>>> {
        let d = &self.0;
        let path = d.path.join(slot_name(datacenter_id, worker_id));
        let name = CString::new(slot_name(datacenter_id, worker_id))
            .map_err(|_| dir_problem(&d.path, "a slot name with a NUL"))?;
        let held_by = |file: Option<&File>| {
            let file = file.map(|f| f.try_clone()).or_else(|| Some(open_at(&d.dir, &name, libc::O_RDONLY)))?.ok()?;
            read_records(&file).ok().and_then(|b| read_file(&b, &path).ok().flatten()).map(|r| r.pid)
        };
        let Some(by_path) = self.claim(&path_name(&d.path, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(held_by(None))));
        };
        let Some(by_inode) = self.claim(&inode_name(d.id.0, d.id.1, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(held_by(None))));
        };
        let by_space =
            space_claim(d.space, datacenter_id, worker_id).map_err(|e| dir_error(&d.path, "claiming a slot", &e))?;
        let Some(by_space) = by_space else {
            return Ok(Attempt::Held(Holder::InSpace));
        };
        let (file, ours) = self.open_slot(&name, &path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(Attempt::Held(Holder::Here(held_by(Some(&file))))),
            Err(TryLockError::Error(e)) => {
                return Err(dir_error(&d.path, &format!("locking {}", quote_path(&path)), &e))
            }
        }
        if !ours {
            let m = file.metadata().map_err(|e| dir_error(&d.path, &format!("reading {}", quote_path(&path)), &e))?;
            return Ok(Attempt::Foreign(m.uid()));
        }
        let bytes =
            read_records(&file).map_err(|e| dir_error(&d.path, &format!("reading {}", quote_path(&path)), &e))?;
        let previous = read_file(&bytes, &path)?.unwrap_or_default();
        let file = UnixFile {
            dir_path: d.path.clone(),
            sharing: d.sharing,
            space: d.space,
            name,
            path,
            datacenter_id,
            worker_id,
            _dir: d.dir.clone(),
            file,
            earlier: Vec::new(),
            claims: vec![by_path, by_inode],
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
