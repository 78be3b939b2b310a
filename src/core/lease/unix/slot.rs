//! A held slot's file on Unix: found again from the configured path before each write, and taken over when the
//! path leads to a file no process holds (see [`SlotFile::locate`]).

use std::ffi::CString;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::super::super::error::Result;
use super::super::backend::{Sharing, SlotFile, Trouble};
use super::super::files::{failed, read_records, record_pid, write_record};
use super::super::record::{read_file, Record};
use super::super::space::Space;
use super::claim::{inode_name, Claim};
use super::dir::Directory;
use super::files::{check_slot_file, holder_in, identity, identity_at, my_uid, open_at};

/// A held slot's file, and what keeps the slot this process's.
pub struct UnixFile {
    /// The lease directory as configured, with how it is shared and the id space of its slots.
    pub(super) dir_path: PathBuf,
    pub(super) sharing: Sharing,
    pub(super) space: Space,
    /// The slot file's name, and its configured path.
    pub(super) name: CString,
    pub(super) path: PathBuf,
    pub(super) datacenter_id: u32,
    pub(super) worker_id: u32,
    /// The directory the slot file was last found in, at the configured path (kept for its shared lock).
    pub(super) _dir: Arc<File>,
    /// The locked slot file at the configured path: records are written here.
    pub(super) file: File,
    /// Slot files this holder took before its directory was moved or replaced, still locked and written to, so that
    /// whoever reaches one of them after this process exits finds every mark.
    pub(super) earlier: Vec<File>,
    /// The claims that make the slot this process's while it lives (see `claim`). Never released.
    pub(super) claims: Vec<Claim>,
    /// The (device, inode) of every directory whose claim is among `claims`.
    pub(super) claimed: Vec<(u64, u64)>,
    /// The slot's id-space claim, shared with any other lease of the slot in this process. Never released.
    pub(super) _space_claim: Arc<Claim>,
}

impl SlotFile for UnixFile {
    fn locate(&mut self, now: u64) -> std::result::Result<(), Trouble> {
        let lost = |holder: Option<u32>, why: &str| Trouble::Lost { holder, why: why.to_string() };
        let dir = Directory::open(&self.dir_path, self.sharing, self.space)
            .map_err(|e| lost(None, &format!("its directory cannot be used: {}", e.message())))?;
        let there = match identity_at(&dir.dir, &self.name) {
            Ok(id) => Some(id),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(failed(&self.path, "checking", &e)),
        };
        let mine = self.file.metadata().map_err(|e| failed(&self.path, "checking", &e))?;
        if there == Some(identity(&mine)) {
            return Ok(());
        }
        // The directory moved back: one of this holder's own earlier files is there again.
        if let Some(i) = self.earlier.iter().position(|f| f.metadata().ok().map(|m| identity(&m)) == there) {
            let file = self.earlier.swap_remove(i);
            self.earlier.push(std::mem::replace(&mut self.file, file));
            self._dir = dir.dir;
            return Ok(());
        }
        // Another directory: its claim is bound here, and kept only once its file is this holder's, so that a file
        // it then cannot take leaves no claim of its own behind to be taken for another process's.
        let mut claim = None;
        if !self.claimed.contains(&dir.id) {
            let name = inode_name(dir.id.0, dir.id.1, self.datacenter_id, self.worker_id);
            match Claim::take(&name) {
                Ok(Some(c)) => claim = Some(c),
                Ok(None) => {
                    let why =
                        "another process in this network namespace holds the slot in the directory now at that path";
                    return Err(lost(holder_in(&dir.dir, &self.name, &self.path), why));
                }
                Err(e) => return Err(failed(&self.path, "claiming", &e)),
            }
        }
        let file = open_at(&dir.dir, &self.name, libc::O_RDWR | libc::O_CREAT).map_err(|e| {
            lost(
                holder_in(&dir.dir, &self.name, &self.path),
                &format!("another file is there that it cannot open ({e})"),
            )
        })?;
        let m = file.metadata().map_err(|e| failed(&self.path, "checking", &e))?;
        check_slot_file(&m, &self.path).map_err(|_| lost(None, "another file is there that is not a lease file"))?;
        if m.uid() != my_uid() {
            return Err(lost(record_pid(&file, &self.path), "another user's file is there"));
        }
        file.try_lock()
            .map_err(|_| lost(record_pid(&file, &self.path), "another file is there, locked by another process"))?;
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
        if mine.nlink() > 0 {
            self.earlier.push(old);
        }
        self._dir = dir.dir;
        Ok(())
    }

    fn write(&mut self, record: &Record) -> Result<()> {
        write_record(&self.path, &self.file, &self.earlier, record)
    }

    fn in_place(&self) -> bool {
        let mine = self.file.metadata().ok().map(|m| identity(&m));
        let there = std::fs::symlink_metadata(&self.path).ok().map(|m| identity(&m));
        mine.is_some() && mine == there
    }
}
