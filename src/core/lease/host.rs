//! The host lease's slot logic, written once over what a platform supplies ([`Os`]): a slot taken with its claims,
//! then its file's lock ([`HostDir`], the [`Backend`]), and a held slot's file found again from the configured path
//! before each write, and taken over when the path leads to a file no process holds ([`HostFile`], the
//! [`SlotFile`]).

use std::fs::File;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::error::{quote_path, Code, Result};
use super::backend::{
    limit_of, Attempt, Backend, Dir, Holder, Opened, Os, Sharing, SlotFile, SlotHolder, Taken, Trouble,
};
use super::files::{dir_error, failed, read_records, record_pid, write_record};
use super::record::{read_file, Record};
use super::space::{path_name, slot_name, space_claim, Space};

impl<O: Os> Dir<O> {
    fn open(path: &Path, sharing: Sharing, space: Space) -> Result<Dir<O>> {
        let (dir, id) = O::open_dir(path, sharing)?;
        Ok(Dir { path: path.to_path_buf(), sharing, space, dir, id })
    }

    /// Takes the slot's claim `name`: `None` when another process holds it.
    fn claim(&self, name: &str) -> Result<Option<O::Claim>> {
        O::claim(name).map_err(|e| dir_error(&self.path, "claiming a slot", &e))
    }
}

/// An open lease directory of the platform `O`.
pub struct HostDir<O: Os>(pub Dir<O>);

impl<O: Os> Backend for HostDir<O> {
    type File = HostFile<O>;

    fn open(path: &Path, sharing: Sharing, space: Space) -> Result<Self> {
        Dir::open(path, sharing, space).map(HostDir)
    }

    fn path(&self) -> &Path {
        &self.0.path
    }

    /// The slot's three claims first, then its file's lock (which also reaches processes the claims do not).
    fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt<Taken<HostFile<O>>>> {
        let d = &self.0;
        let path = d.path.join(slot_name(datacenter_id, worker_id));
        let name = O::name(&d.path, &slot_name(datacenter_id, worker_id))?;
        let Some(by_path) = d.claim(&d.space.scoped(path_name(&d.path, datacenter_id, worker_id)))? else {
            return Ok(Attempt::Held(Holder::Here(O::holder(&d.dir, &name, &path))));
        };
        let Some(by_dir) = d.claim(&O::dir_claim_name(d.space, d.id, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(O::holder(&d.dir, &name, &path))));
        };
        let by_space = space_claim(d.space, datacenter_id, worker_id, O::claim)
            .map_err(|e| dir_error(&d.path, "claiming a slot", &e))?;
        let Some(by_space) = by_space else {
            return Ok(Attempt::Held(Holder::InSpace));
        };
        let (file, writable) = match O::open_slot(&d.dir, &d.path, &name, &path)? {
            Opened::Writable(f) => (f, true),
            Opened::ReadOnly(f) => (f, false),
            Opened::Busy => return Ok(Attempt::Held(Holder::Here(None))),
        };
        let reading = |e: &std::io::Error| dir_error(&d.path, &format!("reading {}", quote_path(&path)), e);
        match O::try_lock(&file) {
            Ok(true) => {}
            Ok(false) => return Ok(Attempt::Held(Holder::Here(record_pid(&file, &path)))),
            Err(e) => return Err(dir_error(&d.path, &format!("locking {}", quote_path(&path)), &e)),
        }
        if let Some(who) = O::foreign(&file.metadata().map_err(|e| reading(&e))?, writable) {
            return Ok(Attempt::Foreign(who));
        }
        let bytes = read_records(&file).map_err(|e| reading(&e))?;
        let previous = read_file(&bytes, &path)?.unwrap_or_default();
        let file = HostFile {
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
            claims: vec![by_path, by_dir],
            claimed: vec![d.id],
            _space_claim: by_space,
        };
        Ok(Attempt::Taken(Taken { file, previous }))
    }

    fn holders(&self, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
        O::holders(&self.0, datacenters)
    }
}

/// A held slot's file, and what keeps the slot this process's.
pub struct HostFile<O: Os> {
    /// The lease directory as configured, with how it is shared and the id space of its slots.
    dir_path: PathBuf,
    sharing: Sharing,
    space: Space,
    /// The slot file's name, and its configured path.
    name: O::Name,
    path: PathBuf,
    datacenter_id: u32,
    worker_id: u32,
    /// The directory the slot file was last found in, at the configured path, held open.
    _dir: Arc<File>,
    /// The locked slot file at the configured path: records are written here.
    file: File,
    /// Slot files this holder took before its directory was moved or replaced, still locked and written to, so that
    /// whoever reaches one of them after this process exits finds every mark.
    earlier: Vec<File>,
    /// The claims that make the slot this process's while it lives. Never released.
    claims: Vec<O::Claim>,
    /// The identity of every directory whose claim is among `claims`.
    claimed: Vec<O::Id>,
    /// The slot's id-space claim, shared with any other lease of the slot in this process. Never released.
    _space_claim: Arc<O::Claim>,
}

impl<O: Os> SlotFile for HostFile<O> {
    fn locate(&mut self, now: u64) -> std::result::Result<(), Trouble> {
        let lost = |holder: Option<u32>, why: &str| Trouble::Lost { holder, why: why.to_string() };
        let dir = Dir::<O>::open(&self.dir_path, self.sharing, self.space).map_err(|e| match e.code() {
            // A limit of the OS reached decides nothing about the directory.
            Code::ClaimRefused => Trouble::Failed(e),
            _ => lost(None, &format!("its directory cannot be used: {}", e.message())),
        })?;
        let there = O::id_at(&dir.dir, &self.name).map_err(|e| failed(&self.path, "checking", &e))?;
        let mine = O::id_of(&self.file).map_err(|e| failed(&self.path, "checking", &e))?;
        if there == Some(mine) {
            return Ok(());
        }
        // The directory moved back: one of this holder's own earlier files is there again.
        if let Some(i) = self.earlier.iter().position(|f| O::id_of(f).ok() == there) {
            let file = self.earlier.swap_remove(i);
            self.earlier.push(std::mem::replace(&mut self.file, file));
            self._dir = dir.dir;
            return Ok(());
        }
        let holder = || O::holder(&dir.dir, &self.name, &self.path);
        // Another directory: its claim is taken here, and kept only once its file is this holder's, so that a file
        // it then cannot take leaves no claim of its own behind to be taken for another process's.
        let mut claim = None;
        if !self.claimed.contains(&dir.id) {
            match O::claim(&O::dir_claim_name(self.space, dir.id, self.datacenter_id, self.worker_id)) {
                Ok(Some(c)) => claim = Some(c),
                Ok(None) => {
                    let why =
                        format!("another process{} holds the slot in the directory now at that path", O::CLAIMS_REACH);
                    return Err(lost(holder(), &why));
                }
                Err(e) => return Err(failed(&self.path, "claiming", &e)),
            }
        }
        let file = O::open_rw(&dir.dir, &self.name).map_err(|e| match limit_of(&e) {
            // A limit of the OS reached decides nothing about the file there.
            Some(_) => failed(&self.path, "opening", &e),
            None => lost(holder(), &format!("another file is there that it cannot open ({e})")),
        })?;
        let m = file.metadata().map_err(|e| failed(&self.path, "checking", &e))?;
        O::check_slot_file(&m, &self.path).map_err(|_| lost(None, "another file is there that is not a lease file"))?;
        if O::foreign(&m, true).is_some() {
            return Err(lost(record_pid(&file, &self.path), "another user's file is there"));
        }
        match O::try_lock(&file) {
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
        if O::is_linked(&old) {
            self.earlier.push(old);
        }
        self._dir = dir.dir;
        Ok(())
    }

    fn write(&mut self, record: &Record) -> Result<()> {
        write_record(&self.path, &self.file, &self.earlier, record)
    }

    fn in_place(&self) -> bool {
        let mine = O::id_of(&self.file).ok();
        mine.is_some() && mine == O::id_at_path(&self.path)
    }
}
