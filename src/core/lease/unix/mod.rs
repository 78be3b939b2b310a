//! The host lease on Unix: flock, files opened relative to the directory, and (on Linux and Android) claims in the
//! abstract socket namespace.
//!
//! - `dir`: the lease directory and its safety;
//! - `files`: slot files opened and checked without following links or blocking;
//! - `claim`: the claims that keep a slot to one live process whatever happens to the files;
//! - `copies`: an identity's claim by one loaded copy of snowid, that the process's other copies see;
//! - `listing`: the slots live processes hold, by `/proc/locks`.

mod claim;
mod copies;
mod dir;
mod files;
mod listing;

use std::ffi::CString;
use std::fs::{File, TryLockError};
use std::io::ErrorKind;
use std::ops::RangeInclusive;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::backend::{Dir, Opened, Os, Sharing, SlotHolder};
use super::files::{dir_error, dir_problem};
use super::host::HostDir;
use super::space::Space;
use claim::{inode_name, Claim};
pub use copies::UnixCopyClaim;
use files::{check_slot_file, holder_in, identity, identity_at, my_uid, open_at};

/// What Unix supplies to the host lease.
pub struct Unix;

/// An open lease directory on Unix.
pub type UnixDir = HostDir<Unix>;

/// What an entry that could not be opened as a slot file is, when it is an entry of its own in the directory that
/// the automatic lease can skip (`ERR_SNOWID_LEASE_CORRUPT`, left as found); else `ERR_SNOWID_LEASE_DIR` (or
/// `ERR_SNOWID_CLAIM_REFUSED` for a limit of the OS), which stops the lease.
fn open_error(dir: &File, dir_path: &Path, name: &CString, path: &Path, e: &std::io::Error) -> Error {
    let found = match e.raw_os_error() {
        Some(libc::ELOOP) => "a symbolic link (snowid does not follow links)".to_string(),
        Some(libc::EISDIR) => "a directory".to_string(),
        // open(2) of a Unix socket.
        Some(libc::ENXIO | libc::EOPNOTSUPP) => "a socket".to_string(),
        // A file this user may not read: planted by another user with mode 000, say. Only when the entry is there
        // to be seen (so the directory itself is searchable): else it is the directory's error.
        Some(libc::EACCES) => match std::fs::symlink_metadata(path) {
            Ok(m) if identity_at(dir, name).is_ok() => {
                format!("a file this user may not read (mode {:o}, uid {})", m.mode() & 0o7777, m.uid())
            }
            _ => return dir_error(dir_path, &format!("opening {}", quote_path(path)), e),
        },
        _ => return dir_error(dir_path, &format!("opening {}", quote_path(path)), e),
    };
    Error::new(
        Code::LeaseCorrupt,
        Class::Error,
        format!("lease file {}: expected a regular file, found {found}; it is left as found", quote_path(path)),
    )
}

impl Os for Unix {
    type Claim = Claim;
    /// (device, inode).
    type Id = (u64, u64);
    type Name = CString;

    const CLAIMS_REACH: &'static str = " in this network namespace";

    fn open_dir(path: &Path, sharing: Sharing) -> Result<(Arc<File>, (u64, u64))> {
        dir::open(path, sharing)
    }

    fn name(dir: &Path, file: &str) -> Result<CString> {
        CString::new(file).map_err(|_| dir_problem(dir, "a slot name with a NUL"))
    }

    fn claim(name: &str) -> std::io::Result<Option<Claim>> {
        Claim::take(name)
    }

    /// Within the space's lease namespace (see [`claim`]): file systems such as ext4 give a removed directory's inode
    /// to the next one made, at once.
    fn dir_claim_name(space: Space, dir: (u64, u64), datacenter_id: u32, worker_id: u32) -> String {
        space.scoped(inode_name(dir.0, dir.1, datacenter_id, worker_id))
    }

    fn id_of(file: &File) -> std::io::Result<(u64, u64)> {
        file.metadata().map(|m| identity(&m))
    }

    fn id_at(dir: &File, name: &CString) -> std::io::Result<Option<(u64, u64)>> {
        match identity_at(dir, name) {
            Ok(id) => Ok(Some(id)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn id_at_path(path: &Path) -> Option<(u64, u64)> {
        std::fs::symlink_metadata(path).ok().map(|m| identity(&m))
    }

    fn open_slot(dir: &File, dir_path: &Path, name: &CString, path: &Path) -> Result<Opened> {
        let opened = match open_at(dir, name, libc::O_RDWR | libc::O_CREAT) {
            Ok(f) => Opened::Writable(f),
            // Another user's file: it is read to honour its lock and marks.
            Err(e) if e.kind() == ErrorKind::PermissionDenied => Opened::ReadOnly(
                open_at(dir, name, libc::O_RDONLY).map_err(|e| open_error(dir, dir_path, name, path, &e))?,
            ),
            Err(e) => return Err(open_error(dir, dir_path, name, path, &e)),
        };
        let (Opened::Writable(file) | Opened::ReadOnly(file)) = &opened else { return Ok(opened) };
        let m = file.metadata().map_err(|e| dir_error(dir_path, &format!("reading {}", quote_path(path)), &e))?;
        check_slot_file(&m, path)?;
        Ok(opened)
    }

    fn open_rw(dir: &File, name: &CString) -> std::io::Result<File> {
        open_at(dir, name, libc::O_RDWR | libc::O_CREAT)
    }

    fn check_slot_file(m: &std::fs::Metadata, path: &Path) -> Result<()> {
        check_slot_file(m, path)
    }

    fn foreign(m: &std::fs::Metadata, writable: bool) -> Option<String> {
        (!writable || m.uid() != my_uid()).then(|| format!("the user with uid {}", m.uid()))
    }

    fn try_lock(file: &File) -> std::io::Result<bool> {
        match file.try_lock() {
            Ok(()) => Ok(true),
            Err(TryLockError::WouldBlock) => Ok(false),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    fn is_linked(file: &File) -> bool {
        file.metadata().is_ok_and(|m| m.nlink() > 0)
    }

    fn holder(dir: &File, name: &CString, path: &Path) -> Option<u32> {
        holder_in(dir, name, path)
    }

    fn holders(dir: &Dir<Unix>, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
        listing::holders(dir, datacenters)
    }
}

#[cfg(test)]
mod tests;
