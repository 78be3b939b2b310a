//! A held slot's file on Windows: found again from the configured path before each write, and taken over when the
//! path leads to a file no process holds (see [`SlotFile::locate`]). While this process holds the file and its
//! directory open, Windows lets no process delete or rename either; the checks are for what it does allow (a
//! junction on the path switched, a directory of the path's parents moved) and for Wine, where a Linux process can.

use std::fs::File;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

use super::super::super::error::Result;
use super::super::backend::{SlotFile, Trouble};
use super::super::files::{failed, read_records, record_pid, write_record};
use super::super::record::{read_file, Record};
use super::super::space::Space;
use super::claim::{id_name, Claim};
use super::dir::{check_slot_file, holder_at, Directory, LOCK_BYTE};
use super::sys::{self, FileId, ERROR_PATH_NOT_FOUND};

/// A held slot's file, and what keeps the slot this process's.
pub struct WinFile {
    /// The lease directory as configured, and the id space of its slots.
    pub(super) dir_path: PathBuf,
    pub(super) space: Space,
    /// The slot file's configured path.
    pub(super) path: PathBuf,
    pub(super) datacenter_id: u32,
    pub(super) worker_id: u32,
    /// The directory the slot file was last found in, at the configured path, held open.
    pub(super) _dir: Arc<File>,
    /// The locked slot file at the configured path: records are written here.
    pub(super) file: File,
    /// Slot files this holder took before its directory was replaced, still locked and written to, so that whoever
    /// reaches one of them after this process exits finds every mark.
    pub(super) earlier: Vec<File>,
    /// The claims that make the slot this process's while it lives (see `claim`). Never released.
    pub(super) claims: Vec<Claim>,
    /// The identity of every directory whose claim is among `claims`.
    pub(super) claimed: Vec<FileId>,
    /// The slot's id-space claim, shared with any other lease of the slot in this process. Never released.
    pub(super) _space_claim: Arc<Claim>,
}

impl SlotFile for WinFile {
    fn locate(&mut self, now: u64) -> std::result::Result<(), Trouble> {
        let lost = |holder: Option<u32>, why: &str| Trouble::Lost { holder, why: why.to_string() };
        let dir = Directory::open(&self.dir_path, self.space)
            .map_err(|e| lost(None, &format!("its directory cannot be used: {}", e.message())))?;
        let there = match sys::id_at(&self.path) {
            Ok(id) => Some(id),
            Err(e) if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(ERROR_PATH_NOT_FOUND) => None,
            Err(e) => return Err(failed(&self.path, "checking", &e)),
        };
        let mine = sys::file_id(&self.file).map_err(|e| failed(&self.path, "checking", &e))?;
        if there == Some(mine) {
            return Ok(());
        }
        // The directory came back: one of this holder's own earlier files is there again.
        if let Some(i) = self.earlier.iter().position(|f| sys::file_id(f).ok() == there) {
            let file = self.earlier.swap_remove(i);
            self.earlier.push(std::mem::replace(&mut self.file, file));
            self._dir = dir.dir;
            return Ok(());
        }
        // Another directory: its claim is made here, and kept only once its file is this holder's, so that a file
        // it then cannot take leaves no claim of its own behind to be taken for another process's.
        let mut claim = None;
        if !self.claimed.contains(&dir.id) {
            match Claim::take(&id_name(dir.id, self.datacenter_id, self.worker_id)) {
                Ok(Some(c)) => claim = Some(c),
                Ok(None) => {
                    let why = "another process holds the slot in the directory now at that path";
                    return Err(lost(holder_at(&self.path), why));
                }
                Err(e) => return Err(failed(&self.path, "claiming", &e)),
            }
        }
        let file = sys::open_held(&self.path, true)
            .map_err(|e| lost(holder_at(&self.path), &format!("another file is there that it cannot open ({e})")))?;
        let m = file.metadata().map_err(|e| failed(&self.path, "checking", &e))?;
        check_slot_file(&m, &self.path).map_err(|_| lost(None, "another file is there that is not a lease file"))?;
        match sys::try_lock_byte(&file, LOCK_BYTE) {
            Ok(true) => {}
            Ok(false) => {
                return Err(lost(record_pid(&file, &self.path), "another file is there, locked by another process"))
            }
            Err(e) => return Err(failed(&self.path, "locking", &e)),
        }
        let bytes = read_records(&file).map_err(|e| failed(&self.path, "reading", &e))?;
        match read_file(&bytes, &self.path) {
            Ok(Some(r)) if r.reaches(now) => {
                return Err(lost(Some(r.pid), "another file is there, with marks ahead of the clock"));
            }
            Ok(_) => {}
            Err(_) => return Err(lost(None, "another file is there that is not a lease record")),
        }
        if let Some(c) = claim {
            self.claims.push(c);
            self.claimed.push(dir.id);
        }
        let old = std::mem::replace(&mut self.file, file);
        // A deleted file is found by no one: only a file still in some directory is worth writing to.
        if sys::is_linked(&old).unwrap_or(false) {
            self.earlier.push(old);
        }
        self._dir = dir.dir;
        Ok(())
    }

    fn write(&mut self, record: &Record) -> Result<()> {
        write_record(&self.path, &self.file, &self.earlier, record)
    }

    fn in_place(&self) -> bool {
        let mine = sys::file_id(&self.file).ok();
        mine.is_some() && mine == sys::id_at(&self.path).ok()
    }
}
