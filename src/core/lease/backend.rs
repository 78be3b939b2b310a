//! The interface a platform implements for the host lease: [`Backend`] (an open lease directory, which takes slots
//! and lists them) and [`SlotFile`] (a held slot's file, where its records go).
//!
//! The portable layer keeps the rules: which slot to take (`slots`), the record and its marks (`record`), what a
//! holder does at each mark write and when its slot is lost (`holder`), and the thread that watches idle holders
//! (`repair`). A backend supplies only the mechanisms, and must give these guarantees:
//!
//! - **A claim no file operation removes.** A slot is taken only with claims that the OS frees when the process
//!   exits or is killed, and that no `unlink`, `rename`, mount or link switch can free or fake: named after the
//!   slot's id space ([`space_name`](super::space::space_name)), after the directory's configured path
//!   ([`path_name`](super::space::path_name)), and after anything else that makes two spellings of one directory
//!   one slot. Linux binds abstract sockets (`unix::claim`); Windows makes named events in `Global\`
//!   (`windows::claim`), which live while this process does.
//! - **A per-slot lock the OS frees on process death**, on the slot file itself, which also reaches processes the
//!   claims do not (another network namespace on Linux): `flock` on Unix, `LockFileEx` on Windows.
//! - **Marks in the slot's file**, as [`Record`]s: the two-record format is the backend's to write at
//!   [`Record::offset`], and to read back whole, refusing anything but a regular file of at most two records (with
//!   the helpers in `files`).
//!
//! Where a platform cannot give one of these, its backend fails [`Backend::open`] with a coded error that says what
//! to configure instead (see `none`, the stand-in for WASI).
//!
//! Apart from the lease, whether leases are on or off, a platform gives [`CopyClaim`]: one identity's claim within
//! the process, that every loaded copy of snowid sees.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use super::super::error::{Class, Code, Error, Result};
use super::record::Record;
use super::space::Space;

/// The limit of the OS that `e` says was reached, in words that say how to raise it: `None` for any other error.
pub fn limit_of(e: &std::io::Error) -> Option<&'static str> {
    const OPEN_FILES: &str = "the process's limit of open files (RLIMIT_NOFILE: raise it with `ulimit -n` or \
                              systemd's LimitNOFILE=, or open fewer files)";
    #[cfg_attr(windows, allow(dead_code))]
    const SYSTEM_FILES: &str = "the system's limit of open files (fs.file-max: close files, or raise it)";
    const MEMORY: &str = "the memory the kernel gives sockets, handles and files (free some, or raise the limit)";
    #[cfg(unix)]
    return match e.raw_os_error()? {
        libc::EMFILE => Some(OPEN_FILES),
        libc::ENFILE => Some(SYSTEM_FILES),
        libc::ENOMEM | libc::ENOBUFS => Some(MEMORY),
        _ => None,
    };
    // ERROR_TOO_MANY_OPEN_FILES, ERROR_NOT_ENOUGH_MEMORY, ERROR_OUTOFMEMORY, ERROR_NO_SYSTEM_RESOURCES,
    // ERROR_NONPAGED_SYSTEM_RESOURCES, ERROR_PAGED_SYSTEM_RESOURCES, ERROR_COMMITMENT_LIMIT.
    #[cfg(windows)]
    return match e.raw_os_error()? {
        4 => Some(OPEN_FILES),
        8 | 14 | 1450..=1453 | 1455 => Some(MEMORY),
        _ => None,
    };
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (e, OPEN_FILES, SYSTEM_FILES, MEMORY);
        None
    }
}

/// `ERR_SNOWID_CLAIM_REFUSED`: the OS refused `what` ("the claim of datacenterId 0 workerId 3 by this copy of
/// snowid") with `e`, so the identity cannot be proved this process's (or this copy's) alone, and is refused. Names
/// the limit reached, when it is one.
pub fn refused(what: &str, e: &std::io::Error) -> Error {
    let why = limit_of(e).map_or_else(|| format!("an error ({e})"), |limit| format!("{limit} ({e})"));
    Error::new(
        Code::ClaimRefused,
        Class::Error,
        format!(
            "{what}: expected the OS to grant it, so that the identity is proved this process's alone, found it \
             refused by {why}; no id is issued under an identity not proved"
        ),
    )
}

/// How a lease directory is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// A directory of this user's own: made private to the user when missing.
    Private,
    /// The default directory, shared by every user of the host: made so that each user's processes make, and own,
    /// their own slot files in it (mode 1777 on Unix; on Windows, as ProgramData's rights pass on).
    Shared,
}

/// Who holds a slot that could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// The process that locks its file here: the pid its record names, if readable.
    Here(Option<u32>),
    /// A process of the same id space, in this directory or another one.
    InSpace,
}

/// How an attempt to take a slot ended: `T` is what a taken slot gives.
#[derive(Debug)]
pub enum Attempt<T> {
    Taken(T),
    /// Another process holds it.
    Held(Holder),
    /// Its file belongs to another user (named as "the user with uid 1001"): its lock and marks are honoured, but it
    /// is not this process's to take.
    Foreign(String),
}

/// A slot a backend took: its file, and the record the earlier holders left there.
#[derive(Debug)]
pub struct Taken<F> {
    pub file: F,
    pub previous: Record,
}

/// Why a holder's file could not be made the one a newcomer finds.
#[derive(Debug)]
pub enum Trouble {
    /// The path leads to something this holder cannot be sure of (`why`, as "that {why}" ends a sentence), whose
    /// record names `holder` when one can be read: the slot is lost, for good.
    Lost { holder: Option<u32>, why: String },
    /// An error that does not decide the slot (a failed read), returned to the caller as it is.
    Failed(Error),
}

/// A slot whose file holds a valid record, as a listing finds it: that record, and whether the process it names
/// still holds the slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotHolder {
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The slot file's newest valid record: its last holder's pid, host name, command line and since when.
    pub record: Record,
    /// Whether that process holds the slot now (see [`Backend::holders`]); `false`: it has gone (it exited or was
    /// killed, or let the slot go), and the file keeps its record for the holders that come after.
    pub live: bool,
}

/// An open lease directory of one platform.
pub trait Backend: Sized + Send + Sync {
    /// A held slot's file.
    type File: SlotFile;

    /// The lease directory at `path` (absolute), made when missing, whose slots are claimed in `space`. It must be
    /// one that no other user can replace this process's files in; anything else is `ERR_SNOWID_LEASE_DIR`.
    fn open(path: &Path, sharing: Sharing, space: Space) -> Result<Self>;

    /// The directory's path as configured.
    fn path(&self) -> &Path;

    /// Tries to take the slot `(datacenter_id, worker_id)`, without waiting: its claims first (the rule that keeps
    /// it to one live process, whatever happens to the files and whatever directory each process uses), then its
    /// file's lock. A file that is not a slot file is `ERR_SNOWID_LEASE_CORRUPT` (and is left as found).
    fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt<Taken<Self::File>>>;

    /// Every slot of the datacenter ids `datacenters` whose file holds a valid record, sorted, each with whether
    /// the process the record names holds the slot now, without taking any lock. Files that cannot be read, or
    /// are not slot files, are left out.
    fn holders(&self, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>>;

    /// The (datacenterId, workerId, pid) of every slot of the datacenter ids `datacenters` held by a live process,
    /// sorted, without taking any lock: the live ones of [`Backend::holders`] (what the tests compare).
    #[cfg(test)]
    fn recorded(&self, datacenters: RangeInclusive<u32>) -> Result<Vec<(u32, u32, u32)>> {
        let holders = self.holders(datacenters)?;
        Ok(holders.into_iter().filter(|h| h.live).map(|h| (h.datacenter_id, h.worker_id, h.record.pid)).collect())
    }
}

/// A held slot's file: where its records are written, found again from the configured path before each write.
pub trait SlotFile: Send + 'static {
    /// Makes the file records go to the one a newcomer would find at the configured path now (`now` is Unix ms):
    /// the same file; a new one, made or taken over, when the path leads to none or to a file no process holds
    /// that reserves nothing ahead of `now` (the file or directory deleted, moved, replaced, mounted over, reached
    /// through a switched link); or [`Trouble::Lost`] for anything else.
    fn locate(&mut self, now: u64) -> std::result::Result<(), Trouble>;

    /// Writes `record` at its offset, to the located file (and, best effort, to files this holder took before its
    /// directory moved, so that whoever reaches one of them finds every mark). Returns once it is written.
    fn write(&mut self, record: &Record) -> Result<()>;

    /// Whether the configured path still leads to the located file: a cheap check, off the id path.
    fn in_place(&self) -> bool;
}

/// An identity's claim by one loaded copy of snowid, that every other copy in this process sees, whatever the lease
/// setting. A copy installed with a binary file of its own has its own statics, so its own registry of generator
/// states (`core::registry`): without this claim, two copies given one identity would each start a state for it and
/// make the same ids. The registry takes it once per identity, when it first makes the identity's state, and keeps it
/// for the life of the process.
///
/// A backend names it after this process and `identity` (a hash of the layout, epoch, datacenterId and workerId), in
/// something every binary loaded in the process reaches and the OS frees when the process ends: Unix binds an abstract
/// socket named after the pid namespace and the pid (Linux, Android) or locks a per-pid file in a directory of the
/// user's own (elsewhere); Windows makes a named event `Local\snowid-copy-v1-<pid>-<identity>`, whose creation
/// reports `ERROR_ALREADY_EXISTS` while another copy holds it.
pub trait CopyClaim: Sized + Send + Sync + 'static {
    /// Claims `identity` for this copy of snowid while the value lives: `Ok(None)` when another copy in this process
    /// holds it. An error (the OS refused the means) leaves the identity unchecked.
    fn take(identity: u64) -> std::io::Result<Option<Self>>;
}

/// How a slot file was opened to take it.
pub enum Opened {
    /// Read and write: this user's to take, once locked.
    Writable(std::fs::File),
    /// Read only (another user's file): its lock and marks are honoured, but it is not this user's to take.
    ReadOnly(std::fs::File),
    /// Another program has it open and shares it with no one (Windows).
    #[cfg_attr(not(windows), allow(dead_code))]
    Busy,
}

/// What a platform supplies to the host lease where one is (`unix`, `windows`): only the mechanisms, over which the
/// portable layer (`host`) writes the slot logic once: a slot's claims, then its file and lock ([`Backend::attempt`]),
/// and a held slot's file found again before each write ([`SlotFile::locate`]).
pub trait Os: Sized + Send + Sync + 'static {
    /// A slot's claim, held for as long as the value lives (see the backend's guarantees above).
    type Claim: std::any::Any + Send + Sync;
    /// A file's or directory's identity: what a path must still lead to for a holder to go on.
    type Id: Copy + PartialEq + Send + Sync + 'static;
    /// A slot file's name, as the platform opens it (relative to the open directory on Unix).
    type Name: Send + Sync + 'static;

    /// Where a slot's claims reach, as words that follow "another process" ("in this network namespace"), or none.
    const CLAIMS_REACH: &'static str;

    /// The lease directory at `path` (absolute), made when missing and checked safe, opened and held: the open
    /// directory and its identity. Anything else is `ERR_SNOWID_LEASE_DIR`.
    fn open_dir(path: &Path, sharing: Sharing) -> Result<(std::sync::Arc<std::fs::File>, Self::Id)>;

    /// The name of the slot file `file` in the directory at `dir`.
    fn name(dir: &Path, file: &str) -> Result<Self::Name>;

    /// Takes the claim `name`: `Ok(None)` when another holds it.
    fn claim(name: &str) -> std::io::Result<Option<Self::Claim>>;

    /// The name of a slot's claim by its directory's identity (so that two spellings of one directory are one slot),
    /// for a process of the id space `space`.
    fn dir_claim_name(space: Space, dir: Self::Id, datacenter_id: u32, worker_id: u32) -> String;

    /// The identity of an open file.
    fn id_of(file: &std::fs::File) -> std::io::Result<Self::Id>;

    /// The identity of what `name` in `dir` is now, not following a link: `None` when there is nothing.
    fn id_at(dir: &std::fs::File, name: &Self::Name) -> std::io::Result<Option<Self::Id>>;

    /// The identity of what the path `path` leads to now, not following a last link: `None` when it cannot be read.
    fn id_at_path(path: &Path) -> Option<Self::Id>;

    /// Opens the slot file `name` (at `path`) in `dir` (at `dir_path`) to take it, made when missing: read and write
    /// when this user may, else read only to see its lock. Only a regular file of at most two records is accepted;
    /// anything else is `ERR_SNOWID_LEASE_CORRUPT`.
    fn open_slot(dir: &std::fs::File, dir_path: &Path, name: &Self::Name, path: &Path) -> Result<Opened>;

    /// Opens the slot file `name` in `dir` read and write, made when missing, never through a link.
    fn open_rw(dir: &std::fs::File, name: &Self::Name) -> std::io::Result<std::fs::File>;

    /// Refuses anything but a regular file of at most two records (`ERR_SNOWID_LEASE_CORRUPT`).
    fn check_slot_file(m: &std::fs::Metadata, path: &Path) -> Result<()>;

    /// Who the file is of (as "the user with uid 1001"), when it is not this user's to take: another user's, or
    /// opened read only (`writable` false).
    fn foreign(m: &std::fs::Metadata, writable: bool) -> Option<String>;

    /// Takes the file's lock without waiting: `false` when another open file holds it.
    fn try_lock(file: &std::fs::File) -> std::io::Result<bool>;

    /// Whether the open file is still in some directory.
    fn is_linked(file: &std::fs::File) -> bool;

    /// The pid the record of the slot file `name` (at `path`) in `dir` names, when it is a regular file with one.
    fn holder(dir: &std::fs::File, name: &Self::Name, path: &Path) -> Option<u32>;

    /// Every slot of `datacenters` whose file in the directory holds a valid record, sorted, with whether its
    /// holder lives (see [`Backend::holders`]).
    fn holders(dir: &Dir<Self>, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>>;
}

/// An open lease directory.
pub struct Dir<O: Os> {
    /// Its configured path.
    pub path: PathBuf,
    pub sharing: Sharing,
    /// The id space its slots are claimed in.
    pub space: Space,
    /// The open directory, kept by every slot file found in it (on Unix, for its shared lock; on Windows, so that it
    /// stays where it is).
    pub dir: std::sync::Arc<std::fs::File>,
    /// The directory's identity.
    pub id: O::Id,
}
