//! The host lease on Windows: named events as claims, a byte-range lock on the slot file, and files and
//! directories held open so that no process can delete or rename them meanwhile.
//!
//! - `sys`: the Win32 calls;
//! - `claim`: the claims that keep a slot to one live process whatever happens to the files;
//! - `copies`: an identity's claim by one loaded copy of snowid, that the process's other copies see;
//! - `dir`: the lease directory, and slot files opened and checked without following links;
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
mod sys;

use std::fs::File;
use std::io::ErrorKind;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::error::Result;
use super::backend::{Dir, Opened, Os, Sharing, SlotHolder};
use super::host::HostDir;
use super::space::Space;
use claim::{id_name, Claim};
pub use copies::WinCopyClaim;
use dir::{check_slot_file, holder_at, open_slot, LOCK_BYTE};
pub use sys::program_data;
use sys::{FileId, ERROR_PATH_NOT_FOUND};

/// What Windows supplies to the host lease.
pub struct Windows;

/// An open lease directory on Windows.
pub type WinDir = HostDir<Windows>;

impl Os for Windows {
    type Claim = Claim;
    type Id = FileId;
    /// A slot file's full path: Windows opens files by path, and keeps the directory where it is while it is open.
    type Name = PathBuf;

    const CLAIMS_REACH: &'static str = "";

    /// Every user's files in the default directory, as in any other, have the access rights the folder passes on;
    /// the default directory must also belong to this user, SYSTEM or the administrators.
    fn open_dir(path: &Path, sharing: Sharing) -> Result<(Arc<File>, FileId)> {
        dir::open(path, sharing)
    }

    fn name(dir: &Path, file: &str) -> Result<PathBuf> {
        Ok(dir.join(file))
    }

    fn claim(name: &str) -> std::io::Result<Option<Claim>> {
        Claim::take(name)
    }

    /// The same in every lease namespace: the listing names a slot's holder live by this claim (Windows lists no file
    /// locks), whatever the namespace of the process that lists, and NTFS does not give a removed directory's id to
    /// another soon (a file id carries a sequence number that changes when its record is used again).
    fn dir_claim_name(_space: Space, dir: FileId, datacenter_id: u32, worker_id: u32) -> String {
        id_name(dir, datacenter_id, worker_id)
    }

    fn id_of(file: &File) -> std::io::Result<FileId> {
        sys::file_id(file)
    }

    fn id_at(_dir: &File, name: &PathBuf) -> std::io::Result<Option<FileId>> {
        match sys::id_at(name) {
            Ok(id) => Ok(Some(id)),
            Err(e) if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(ERROR_PATH_NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn id_at_path(path: &Path) -> Option<FileId> {
        sys::id_at(path).ok()
    }

    fn open_slot(_dir: &File, dir_path: &Path, name: &PathBuf, _path: &Path) -> Result<Opened> {
        open_slot(dir_path, name)
    }

    fn open_rw(_dir: &File, name: &PathBuf) -> std::io::Result<File> {
        sys::open_held(name, true)
    }

    fn check_slot_file(m: &std::fs::Metadata, path: &Path) -> Result<()> {
        check_slot_file(m, path)
    }

    /// A file this user may not write to is another user's; whose, Windows' access rights do not say simply.
    fn foreign(_m: &std::fs::Metadata, writable: bool) -> Option<String> {
        (!writable).then(|| "another user (this one may not write to it)".to_string())
    }

    fn try_lock(file: &File) -> std::io::Result<bool> {
        sys::try_lock_byte(file, LOCK_BYTE)
    }

    fn is_linked(file: &File) -> bool {
        sys::is_linked(file).unwrap_or(false)
    }

    fn holder(_dir: &File, name: &PathBuf, _path: &Path) -> Option<u32> {
        holder_at(name)
    }

    fn holders(dir: &Dir<Windows>, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
        listing::holders(dir, datacenters)
    }
}

#[cfg(test)]
mod tests;
