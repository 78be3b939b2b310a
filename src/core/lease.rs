//! Host-local leases of (datacenterId, workerId) slots, and the high-water marks stored with them.
//!
//! Each slot is a file `dc<D>-worker<W>.lease` in the lease directory. A process takes a slot when it has bound the
//! slot's three claims ([`super::claim`]: abstract sockets named after the slot's id space, after the directory's
//! configured path and after its inode) and an exclusive, non-blocking `flock` on the file, and holds all four for
//! its whole life. The kernel frees them when the process exits or is killed. No file operation frees a claim, so
//! while a process lives no other process in its network namespace can take its slot, whatever happens to the file
//! or the directory, and whatever directory the other uses; the file's lock also reaches processes in other network
//! namespaces, for as long as the file is left alone. The file keeps the slot's marks, for the holders that come
//! after. `worker_threads` share their process's leases.
//!
//! ## The file (version 1)
//!
//! Two records of [`RECORD_SIZE`] bytes, at offsets 0 and [`RECORD_SIZE`]. Each is one ASCII line padded with
//! spaces and ended by `\n`:
//!
//! ```text
//! snowid-lease v1 seq=7 pid=4242 marks=0:1795316461930,1:1795316460210 sum=14128d3577de609c
//! ```
//!
//! - `seq` counts writes; record `seq % 2` is the one written, so the other always holds the previous state.
//! - `pid` is the holder that wrote it.
//! - `marks` lists, per clockBack value, a Unix ms up to which ids under that value may have been issued.
//!   Marks are kept while the record has room (a mark in the past still bounds its value's ids should the clock
//!   step back); when it has none, those already past are dropped.
//! - `sum` is the FNV-1a 64-bit hash, in hex, of the text before ` sum=`.
//!
//! The valid record with the highest `seq` wins. A torn write damages only the record being written, and it was
//! written before any id past its old mark was issued, so the other record is still a correct bound. An empty
//! file is a slot with no history. A file in which no record is valid is refused with `ERR_SNOWID_LEASE_CORRUPT`.

use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::ops::RangeInclusive;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use super::claim::{self, fnv1a, Claim, Space};
use super::error::{quote_path, Class, Code, Error, Result};
use super::generator::{Clock, Shared, SharedState, SystemClock};
use super::layout::Layout;
use super::time::format_iso;

pub const RECORD_SIZE: usize = 1024;
const MAGIC: &str = "snowid-lease v1 ";
/// A record holds at most this many marks: one per clockBack value still reserved in the future.
pub const MAX_MARKS: usize = 32;

/// The contents of one lease record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub pid: u32,
    /// (clockBack, Unix ms) pairs, at most one per clockBack value.
    pub marks: Vec<(u32, u64)>,
}

impl Record {
    pub fn mark(&self, clock_back: u32) -> u64 {
        super::generator::mark_of(&self.marks, clock_back)
    }

    /// The record as its padded line, or `None` when it does not fit.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let marks: Vec<String> = self.marks.iter().map(|(c, m)| format!("{c}:{m}")).collect();
        let body = format!("{MAGIC}seq={} pid={} marks={}", self.seq, self.pid, marks.join(","));
        let mut line = format!("{body} sum={:016x}", fnv1a(body.as_bytes())).into_bytes();
        if line.len() >= RECORD_SIZE {
            return None;
        }
        line.resize(RECORD_SIZE - 1, b' ');
        line.push(b'\n');
        Some(line)
    }

    /// Parses one record, or `None` when it is not a valid version-1 record.
    pub fn decode(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?.trim_end_matches(['\n', ' ', '\0']);
        let (body, sum) = text.rsplit_once(" sum=")?;
        if sum.len() != 16 || u64::from_str_radix(sum, 16).ok()? != fnv1a(body.as_bytes()) {
            return None;
        }
        let rest = body.strip_prefix(MAGIC)?;
        let mut parts = rest.split(' ');
        let seq = parts.next()?.strip_prefix("seq=")?.parse().ok()?;
        let pid = parts.next()?.strip_prefix("pid=")?.parse().ok()?;
        let marks_text = parts.next()?.strip_prefix("marks=")?;
        if parts.next().is_some() {
            return None;
        }
        let mut marks = Vec::new();
        for pair in marks_text.split(',').filter(|p| !p.is_empty()) {
            let (c, m) = pair.split_once(':')?;
            let c: u32 = c.parse().ok()?;
            if marks.iter().any(|(seen, _)| *seen == c) || marks.len() == MAX_MARKS {
                return None;
            }
            marks.push((c, m.parse().ok()?));
        }
        Some(Record { seq, pid, marks })
    }
}

/// What a slot file holds: nothing yet, or its newest valid record.
pub fn read_file(bytes: &[u8], path: &Path) -> Result<Option<Record>> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let best = bytes.chunks(RECORD_SIZE).take(2).filter_map(Record::decode).max_by_key(|r| r.seq);
    match best {
        Some(r) => Ok(Some(r)),
        None => Err(Error::new(
            Code::LeaseCorrupt,
            Class::Error,
            format!(
                "lease file {}: expected a snowid lease record (version 1), found {} bytes that are not one \
                     (their content is not shown), so which ids were issued from this slot is unknown. Remove the \
                     file only when no process uses the slot and the clock is past every id issued from it",
                quote_path(path),
                bytes.len()
            ),
        )),
    }
}

fn dir_error(dir: &Path, what: &str, e: &std::io::Error) -> Error {
    dir_problem(dir, &format!("that {what} failed: {e}"))
}

fn dir_problem(dir: &Path, found: &str) -> Error {
    Error::new(
        Code::LeaseDir,
        Class::Error,
        format!(
            "lease directory {}: expected a directory this process can create and lock files in, found {found}. Set \
             SNOWID_LEASE_DIR to another, or SNOWID_LEASE=off with SNOWID_WORKER_ID",
            quote_path(dir)
        ),
    )
}

/// The most slots one process holds at once (one open file each), so that generators of many identities cannot
/// use up the process's file descriptors.
pub const MAX_HELD: usize = 1024;

/// The (device, inode) of a file: what a path must still lead to for its holder to go on.
fn identity(m: &std::fs::Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

/// What a slot file's metadata says about it, refusing anything but a regular file of at most two records.
fn check_slot_file(m: &std::fs::Metadata, path: &Path) -> Result<()> {
    let kind = m.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(Error::new(
            Code::LeaseCorrupt,
            Class::Error,
            format!("lease file {}: expected a regular file, found {what}; it is left as found", quote_path(path)),
        ));
    }
    if m.len() > 2 * RECORD_SIZE as u64 {
        return Err(Error::new(
            Code::LeaseCorrupt,
            Class::Error,
            format!(
                "lease file {}: expected at most {} bytes (two records), found {}; it is not read, and is left as found",
                quote_path(path),
                2 * RECORD_SIZE,
                m.len()
            ),
        ));
    }
    Ok(())
}

/// Reads a slot file's records: at most two records' worth, whatever the file.
fn read_records(file: &File) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 2 * RECORD_SIZE];
    let mut filled = 0;
    while filled < buf.len() {
        let rest = buf.get_mut(filled..).unwrap_or_default();
        match file.read_at(rest, filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Where a lease's marks are written, and the record written last, changed together.
#[derive(Debug)]
struct Held {
    /// The directory the slot file was last found in, at the configured path.
    dir: Arc<File>,
    /// The locked slot file at the configured path: marks are written here.
    file: File,
    /// Slot files this holder took before its directory was moved or replaced, still locked and written to, so that
    /// whoever reaches one of them after this process exits finds every mark.
    earlier: Vec<File>,
    /// The claims that make the slot this process's while it lives (see [`super::claim`]). Never released.
    claims: Vec<Claim>,
    /// The (device, inode) of every directory whose claim is among `claims`.
    claimed: Vec<(u64, u64)>,
    /// The slot's id-space claim, shared with any other lease of the slot in this process. Never released.
    _space_claim: Arc<Claim>,
    record: Record,
    loss: Loss,
}

/// What a holder knows of losing its slot, and whom it stops when it does.
#[derive(Debug, Default)]
struct Loss {
    /// The `ERR_SNOWID_LEASE_LOST` the holder met, once it met one: it is for good, and every mark write returns it.
    error: Option<Error>,
    /// Unix ms of the last check that found the configured path leading to this holder's own file.
    confirmed: u64,
    /// The states of the generators that write marks here, to stop when the slot is lost (see
    /// [`Lease::stop_on_loss`]). Emptied once they are stopped.
    stops: Vec<(Weak<Shared>, Layout)>,
}

/// A slot this process holds, with its record.
///
/// The slot is this process's for its whole life: its claims are bound before it takes the slot and are freed only
/// by its exit, whatever happens to the files. At every mark write it finds the slot file again from the configured
/// path, as a newcomer would, so that its marks are where the next holder will look:
/// - the same file: the mark is written there;
/// - no file, or an unlocked file with no mark ahead of the clock (the file or directory deleted, moved, replaced,
///   mounted over, or reached through a switched link): it takes that file, writes its record there, and goes on;
/// - anything else (a file another process locked, another user's file, marks ahead of the clock, a path it cannot
///   use): it stops with `ERR_SNOWID_LEASE_LOST`, because it cannot be sure whose ids those are. The loss is for good.
///
/// While its marks reach past the clock, the repair thread does the same every [`REPAIR_EVERY_MS`], off the id path
/// (see [`Lease::repair`]); when it finds the slot lost, it stops every generator writing marks here at once, so
/// that a process in another network namespace, which the claims do not reach, that took the slot in a directory
/// put in place of this one shares at most that long of ids with it.
#[derive(Debug)]
pub struct Lease {
    /// The lease directory as configured.
    dir_path: PathBuf,
    sharing: Sharing,
    space: Space,
    name: CString,
    path: PathBuf,
    datacenter_id: u32,
    worker_id: u32,
    /// The record as found when the slot was taken: the earlier holders' marks.
    previous: Record,
    held: Mutex<Held>,
}

impl Lease {
    pub fn worker_id(&self) -> u32 {
        self.worker_id
    }

    pub fn datacenter_id(&self) -> u32 {
        self.datacenter_id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The marks earlier holders left, as found when this process took the slot.
    pub fn previous(&self) -> &Record {
        &self.previous
    }

    /// Records that ids under `clock_back` may be issued up to Unix ms `until`, dropping marks before `now`, and
    /// writes the record before returning. The caller issues no id past the old mark unless this succeeded.
    pub fn reserve(&self, clock_back: u32, until: u64, now: u64) -> Result<()> {
        self.advance(now, |next| {
            let kept = until.max(next.mark(clock_back));
            next.marks.retain(|(c, _)| *c != clock_back);
            next.marks.push((clock_back, kept));
            // A mark in the past still bounds the ids of its value should the clock step back behind it, so marks
            // are kept while the record has room; only when it has none are those already past dropped.
            if next.marks.len() > MAX_MARKS {
                next.marks.retain(|(c, m)| *m >= now || *c == clock_back);
            }
            next.marks.sort_unstable();
            if next.marks.len() > MAX_MARKS {
                return Err(Error::new(
                    Code::ClockBackwards,
                    Class::Error,
                    format!(
                        "clock: expected at most {MAX_MARKS} clockBack values reserved ahead of the clock at once (what a \
                         lease record holds), found {}: the clock stepped back that many times within the marks' reach",
                        next.marks.len()
                    ),
                ));
            }
            Ok(())
        })
    }

    /// Writes the next version of the record: the current one changed by `edit`, naming this process as holder,
    /// to the slot file the configured path leads to now (see [`Lease::locate`]).
    fn advance(&self, now: u64, edit: impl FnOnce(&mut Record) -> Result<()>) -> Result<()> {
        let mut held = self.held.lock();
        self.advance_held(&mut held, now, edit)
    }

    fn advance_held(&self, held: &mut Held, now: u64, edit: impl FnOnce(&mut Record) -> Result<()>) -> Result<()> {
        if let Some(e) = &held.loss.error {
            return Err(e.clone());
        }
        let mut next = held.record.clone();
        next.seq += 1;
        next.pid = std::process::id();
        edit(&mut next)?;
        if let Err(e) = self.locate(held, now) {
            if e.code() == Code::LeaseLost {
                held.loss.error = Some(e.clone());
            }
            return Err(e);
        }
        self.write(&held.file, &next)?;
        // Best effort: a file of a directory moved away is no longer where this slot is found.
        for file in &held.earlier {
            let _ = self.write(file, &next);
        }
        held.record = next;
        Ok(())
    }

    /// Off the id path: while the record's marks reach past the clock (the only time they constrain anyone, and
    /// the only time ids may be being issued), puts them back where newcomers look when the configured path no
    /// longer leads to this holder's file, so that a file or directory deleted or moved under an idle holder does
    /// not take them away should it exit next. When that finds the slot lost (`ERR_SNOWID_LEASE_LOST`), or a mark
    /// write has, it stops every generator writing marks here at once. Any other error is left for the next mark
    /// write to report.
    fn repair(&self, now: u64) {
        let (why, stops) = {
            let mut held = self.held.lock();
            if held.loss.error.is_none() {
                if !held.record.marks.iter().any(|(_, m)| *m >= now) {
                    return;
                }
                let mine = held.file.metadata().ok().map(|m| identity(&m));
                let there = std::fs::symlink_metadata(&self.path).ok().map(|m| identity(&m));
                if mine.is_some() && mine == there {
                    held.loss.confirmed = now;
                    return;
                }
                let _ = self.advance_held(&mut held, now, |_| Ok(()));
            }
            match &held.loss.error {
                Some(e) if !held.loss.stops.is_empty() => (e.clone(), std::mem::take(&mut held.loss.stops)),
                _ => return,
            }
        };
        // With the lease's lock let go: a generator writing a mark holds its state's lock, then takes this one.
        for (state, layout) in stops {
            if let Some(state) = state.upgrade() {
                state.stop(&layout, why.clone());
            }
        }
    }

    /// Has `state` (of `layout`), whose generators write their marks here, stopped as soon as the slot is found
    /// lost (see [`Lease::repair`]); at once when it already is.
    pub fn stop_on_loss(&self, state: &SharedState, layout: &Layout) {
        let lost = {
            let mut held = self.held.lock();
            if !held.loss.stops.iter().any(|(s, _)| std::ptr::eq(s.as_ptr(), Arc::as_ptr(state))) {
                held.loss.stops.push((Arc::downgrade(state), *layout));
            }
            held.loss.error.clone()
        };
        if let Some(why) = lost {
            state.stop(layout, why);
        }
    }

    /// Makes `held.file` the slot file the configured path leads to now, taking it over when it is another file
    /// that no process holds and that reserves nothing ahead of the clock; the directory is made again when missing.
    fn locate(&self, held: &mut Held, now: u64) -> Result<()> {
        let since = held.loss.confirmed;
        let lost = |holder: Option<u32>, why: &str| self.lost(holder, why, since, now);
        let dir = LeaseDir::open(&self.dir_path, self.sharing, self.space)
            .map_err(|e| lost(None, &format!("its directory cannot be used: {}", e.message())))?;
        let there = match identity_at(&dir.dir, &self.name) {
            Ok(id) => Some(id),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(self.file_error("checking", &e)),
        };
        let mine = held.file.metadata().map_err(|e| self.file_error("checking", &e))?;
        if there == Some(identity(&mine)) {
            held.loss.confirmed = now;
            return Ok(());
        }
        // The directory moved back: one of this holder's own earlier files is there again.
        if let Some(i) = held.earlier.iter().position(|f| f.metadata().ok().map(|m| identity(&m)) == there) {
            let file = held.earlier.swap_remove(i);
            held.earlier.push(std::mem::replace(&mut held.file, file));
            held.dir = dir.dir;
            held.loss.confirmed = now;
            return Ok(());
        }
        // Another directory: its claim is bound here, and kept only once its file is this holder's, so that a file
        // it then cannot take leaves no claim of its own behind to be taken for another process's.
        let mut claim = None;
        if !held.claimed.contains(&dir.id) {
            let name = claim::inode_name(dir.id.0, dir.id.1, self.datacenter_id, self.worker_id);
            match Claim::take(&name) {
                Ok(Some(c)) => claim = Some(c),
                Ok(None) => {
                    let why =
                        "another process in this network namespace holds the slot in the directory now at that path";
                    return Err(lost(holder_in(&dir.dir, &self.name, &self.path), why));
                }
                Err(e) => return Err(self.file_error("claiming", &e)),
            }
        }
        let file = open_at(&dir.dir, &self.name, libc::O_RDWR | libc::O_CREAT).map_err(|e| {
            lost(
                holder_in(&dir.dir, &self.name, &self.path),
                &format!("another file is there that it cannot open ({e})"),
            )
        })?;
        let m = file.metadata().map_err(|e| self.file_error("checking", &e))?;
        check_slot_file(&m, &self.path).map_err(|_| lost(None, "another file is there that is not a lease file"))?;
        // SAFETY: geteuid has no preconditions.
        if m.uid() != unsafe { libc::geteuid() } {
            return Err(lost(record_pid(&file, &self.path), "another user's file is there"));
        }
        file.try_lock()
            .map_err(|_| lost(record_pid(&file, &self.path), "another file is there, locked by another process"))?;
        let bytes = read_records(&file).map_err(|e| self.file_error("reading", &e))?;
        match read_file(&bytes, &self.path) {
            Ok(Some(r)) if r.marks.iter().any(|(_, m)| *m >= now) => {
                return Err(lost(Some(r.pid), "another file is there, with marks ahead of the clock"));
            }
            Ok(_) => {}
            Err(_) => return Err(lost(None, "another file is there that is not a lease record")),
        }
        if let Some(c) = claim {
            held.claims.push(c);
            held.claimed.push(dir.id);
        }
        let old = std::mem::replace(&mut held.file, file);
        // A deleted file is found by no one: only a file still in some directory is worth writing to.
        if mine.nlink() > 0 {
            held.earlier.push(old);
        }
        held.dir = dir.dir;
        held.loss.confirmed = now;
        Ok(())
    }

    /// `ERR_SNOWID_LEASE_LOST`, found at `now`: the path leads to what `why` says, whose record names `holder` (when
    /// one can be read). The last check that found this holder's own file there was at `since`: ids issued after it
    /// may also have been issued by the process that took the slot.
    fn lost(&self, holder: Option<u32>, why: &str, since: u64, now: u64) -> Error {
        let holder = match holder {
            Some(pid) if pid == std::process::id() => {
                format!("the record there names this process (pid {pid}): a copy of its own file")
            }
            Some(pid) => format!("the record there names pid {pid} as its holder"),
            None => "no lease record there can be read, so its holder cannot be named".to_string(),
        };
        Error::new(
            Code::LeaseLost,
            Class::Error,
            format!(
                "lease file {}: expected the file this process locked, found that {why}; {holder}. It issues no more ids \
                 on workerId {} (restart it to take a slot again); ids it issued after its last check that found its own \
                 file there, at {} ({} ms before), may collide with that holder's",
                quote_path(&self.path),
                self.worker_id,
                format_iso(since),
                now.saturating_sub(since)
            ),
        )
    }

    fn file_error(&self, what: &str, e: &std::io::Error) -> Error {
        Error::new(
            Code::LeaseDir,
            Class::Error,
            format!("lease file {}: expected {what} it to work, found: {e}", quote_path(&self.path)),
        )
    }

    fn write(&self, file: &File, rec: &Record) -> Result<()> {
        let bytes = rec.encode().ok_or_else(|| {
            Error::new(
                Code::LeaseDir,
                Class::Error,
                format!(
                    "lease file {}: expected its record to fit in {RECORD_SIZE} bytes, found it longer",
                    quote_path(&self.path)
                ),
            )
        })?;
        let offset = (rec.seq % 2) * RECORD_SIZE as u64;
        file.write_all_at(&bytes, offset).map_err(|e| self.file_error("writing", &e))
    }
}

/// The (device, inode) of `name` in `dir`, by `fstatat` without following a link (so, of the link itself).
fn identity_at(dir: &File, name: &CStr) -> std::io::Result<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `dir` is an open directory, `name` a NUL-terminated file name and `st` a valid out-pointer.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fstatat succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    // The same widening as `MetadataExt::dev` and `ino`, so the two compare.
    #[allow(clippy::unnecessary_cast)]
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// The pid the record in `file` names, when it holds a valid one.
fn record_pid(file: &File, path: &Path) -> Option<u32> {
    read_records(file).ok().and_then(|b| read_file(&b, path).ok().flatten()).map(|r| r.pid)
}

/// The pid the record of the slot file `name` in `dir` names, when it is a regular file with a valid one.
fn holder_in(dir: &File, name: &CStr, path: &Path) -> Option<u32> {
    let file = open_at(dir, name, libc::O_RDONLY).ok()?;
    check_slot_file(&file.metadata().ok()?, path).ok()?;
    record_pid(&file, path)
}

/// `openat` of `name` in `dir` with `flags`, never following a link, never blocking, closed on exec; a file made
/// by it is readable by all (so other users' processes can honour its marks) and writable by its owner only.
fn open_at(dir: &File, name: &CStr, flags: libc::c_int) -> std::io::Result<File> {
    let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: `dir` is an open directory and `name` a NUL-terminated file name; the fd returned is owned below.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Where leases live, and the leases this process holds there.
pub struct LeaseDir {
    path: PathBuf,
    sharing: Sharing,
    /// The id space its slots are claimed in.
    space: Space,
    dir: Arc<File>,
    /// The directory's (device, inode).
    id: (u64, u64),
}

/// The leases this process holds, by (directory, datacenterId, workerId). Kept for the life of the process.
type HeldMap = Mutex<HashMap<(PathBuf, u32, u32), Arc<Lease>>>;

fn held() -> &'static HeldMap {
    static HELD: OnceLock<HeldMap> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// How often the repair thread looks at the leases whose marks reach past the clock.
pub const REPAIR_EVERY_MS: u64 = 10;

/// Starts, once per process, the thread that calls [`Lease::repair`] on every lease held. It holds no lock while it
/// sleeps and keeps no event loop alive.
fn start_repairs() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new().name("snowid-lease".into()).spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_millis(REPAIR_EVERY_MS));
            let leases: Vec<Arc<Lease>> = held().lock().values().cloned().collect();
            let now = SystemClock.now_ms();
            for lease in leases {
                lease.repair(now);
            }
        });
        // Without the thread, marks are still put back at the holder's next mark write.
        drop(spawned);
    });
}

fn auto_slots() -> &'static Mutex<HashMap<(PathBuf, u32), u32>> {
    static AUTO: OnceLock<Mutex<HashMap<(PathBuf, u32), u32>>> = OnceLock::new();
    AUTO.get_or_init(Default::default)
}

/// The id-space claims this process holds, by name (see [`super::claim`]).
fn space_claims() -> &'static Mutex<HashMap<String, Weak<Claim>>> {
    static SPACE: OnceLock<Mutex<HashMap<String, Weak<Claim>>>> = OnceLock::new();
    SPACE.get_or_init(Default::default)
}

/// Who holds a slot that could not be taken.
enum Holder {
    /// The process that locks its file here: the pid its record names, if readable.
    Here(Option<u32>),
    /// A process of the same id space, in this directory or another one.
    InSpace,
}

/// How an attempt to take a slot ended.
enum Attempt {
    Taken(Box<Lease>),
    /// Another process holds it.
    Held(Holder),
    /// Its file belongs to another user: its lock and marks are honoured, but it is not this process's to take.
    Foreign(u32),
}

/// How a lease directory is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// A directory of this user's own: made with mode 0700 when missing.
    Private,
    /// The default directory, shared by every user of the host: made sticky and writable by all (mode 1777) when
    /// missing, so that each user's processes make, and own, their own slot files in it.
    Shared,
}

impl LeaseDir {
    /// The lease directory at `path` (absolute), made when missing, whose slots are claimed in `space`.
    ///
    /// It must be a directory, not a link to one, and no other user may be able to replace this process's files
    /// in it: it belongs to this user and no one else may write to it, or it is sticky (mode 1777, as the OS temp
    /// dir is), where only a file's owner may remove or rename it.
    pub fn open(path: &Path, sharing: Sharing, space: Space) -> Result<LeaseDir> {
        if let Some(parent) = path.parent() {
            if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent) {
                return Err(dir_error(path, "making its parent", &e));
            }
        }
        match std::fs::DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => {
                // The mode is set explicitly: the umask would take the sticky bit and the others' bits away.
                let mode = if sharing == Sharing::Shared { 0o1777 } else { 0o700 };
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| dir_error(path, "setting its mode", &e))?;
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(dir_error(path, "making it", &e)),
        }
        if std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false) {
            return Err(dir_problem(path, "a symbolic link (snowid does not follow links)"));
        }
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => dir_problem(path, "a symbolic link (snowid does not follow links)"),
                Some(libc::ENOTDIR) => dir_problem(path, "something that is not a directory"),
                _ => dir_error(path, "opening it", &e),
            })?;
        let m = dir.metadata().map_err(|e| dir_error(path, "reading it", &e))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let sticky = m.mode() & 0o1000 != 0;
        let others_write = m.mode() & 0o022 != 0;
        if m.uid() == me && others_write && !sticky {
            return Err(dir_problem(
                path,
                &format!(
                    "mode {:o}: others may write to it but it is not sticky, so they could replace this process's \
                     files (chmod 700 or 1777)",
                    m.mode() & 0o7777
                ),
            ));
        }
        if m.uid() != me && !sticky {
            return Err(dir_problem(
                path,
                &format!(
                    "that it belongs to uid {} and is not sticky (mode {:o}), so its owner could replace this process's \
                     files (chmod 1777 shares it)",
                    m.uid(),
                    m.mode() & 0o7777
                ),
            ));
        }
        // A shared BSD lock on the directory for as long as a lease in it is held: systemd-tmpfiles skips a
        // directory another process has locked, so an age-based cleaner leaves a live process's lease files alone.
        // Best effort: should a cleaner hold its lock at this very moment, a deleted file is re-made (see `still_ours`).
        // SAFETY: `dir` is an open directory; flock has no other preconditions.
        unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
        Ok(LeaseDir { path: path.to_path_buf(), sharing, space, dir: Arc::new(dir), id: identity(&m) })
    }

    fn slot_name(datacenter_id: u32, worker_id: u32) -> String {
        format!("dc{datacenter_id}-worker{worker_id}.lease")
    }

    pub fn slot_path(&self, datacenter_id: u32, worker_id: u32) -> PathBuf {
        self.path.join(Self::slot_name(datacenter_id, worker_id))
    }

    /// Opens a slot file to take it: read-write (made if missing) when this user may, else read-only to see its
    /// lock. Only a regular file of at most two records is accepted.
    fn open_slot(&self, name: &CStr, path: &Path) -> Result<(File, bool)> {
        let (file, writable) = match open_at(&self.dir, name, libc::O_RDWR | libc::O_CREAT) {
            Ok(f) => (f, true),
            // Another user's file: it is read to honour its lock and marks.
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                (open_at(&self.dir, name, libc::O_RDONLY).map_err(|e| self.open_error(path, &e))?, false)
            }
            Err(e) => return Err(self.open_error(path, &e)),
        };
        let m = file.metadata().map_err(|e| dir_error(&self.path, &format!("reading {}", quote_path(path)), &e))?;
        check_slot_file(&m, path)?;
        // SAFETY: geteuid has no preconditions.
        let mine = m.uid() == unsafe { libc::geteuid() };
        Ok((file, writable && mine))
    }

    fn open_error(&self, path: &Path, e: &std::io::Error) -> Error {
        match e.raw_os_error() {
            Some(libc::ELOOP) => Error::new(
                Code::LeaseCorrupt,
                Class::Error,
                format!("lease file {}: expected a regular file, found a symbolic link (snowid does not follow links); it is left as found", quote_path(path)),
            ),
            _ => dir_error(&self.path, &format!("opening {}", quote_path(path)), e),
        }
    }

    /// Binds the slot's claim `name`: `None` when another process holds it.
    fn claim(&self, name: &str) -> Result<Option<Claim>> {
        Claim::take(name).map_err(|e| dir_error(&self.path, "claiming a slot", &e))
    }

    /// Binds the slot's id-space claim, or shares it when this process holds it already: `None` when another
    /// process holds it.
    fn space_claim(&self, datacenter_id: u32, worker_id: u32) -> Result<Option<Arc<Claim>>> {
        let name = claim::space_name(self.space, datacenter_id, worker_id);
        let mut held = space_claims().lock();
        if let Some(mine) = held.get(&name).and_then(Weak::upgrade) {
            return Ok(Some(mine));
        }
        let Some(taken) = self.claim(&name)? else {
            return Ok(None);
        };
        let taken = Arc::new(taken);
        held.retain(|_, c| c.strong_count() > 0);
        held.insert(name, Arc::downgrade(&taken));
        Ok(Some(taken))
    }

    /// Tries to take the slot: its three claims first (the rule that keeps it to one live process, whatever happens
    /// to the files and whatever directory each process uses), then its file's lock (which also reaches processes
    /// in other network namespaces).
    fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt> {
        let path = self.slot_path(datacenter_id, worker_id);
        let name = CString::new(Self::slot_name(datacenter_id, worker_id))
            .map_err(|_| dir_problem(&self.path, "a slot name with a NUL"))?;
        let held_by = |file: Option<&File>| {
            let file = file.map(|f| f.try_clone()).or_else(|| Some(open_at(&self.dir, &name, libc::O_RDONLY)))?.ok()?;
            read_records(&file).ok().and_then(|b| read_file(&b, &path).ok().flatten()).map(|r| r.pid)
        };
        let Some(by_path) = self.claim(&claim::path_name(&self.path, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(held_by(None))));
        };
        let Some(by_inode) = self.claim(&claim::inode_name(self.id.0, self.id.1, datacenter_id, worker_id))? else {
            return Ok(Attempt::Held(Holder::Here(held_by(None))));
        };
        let Some(by_space) = self.space_claim(datacenter_id, worker_id)? else {
            return Ok(Attempt::Held(Holder::InSpace));
        };
        let (file, ours) = self.open_slot(&name, &path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(Attempt::Held(Holder::Here(held_by(Some(&file))))),
            Err(TryLockError::Error(e)) => {
                return Err(dir_error(&self.path, &format!("locking {}", quote_path(&path)), &e))
            }
        }
        if !ours {
            let m =
                file.metadata().map_err(|e| dir_error(&self.path, &format!("reading {}", quote_path(&path)), &e))?;
            return Ok(Attempt::Foreign(m.uid()));
        }
        let bytes =
            read_records(&file).map_err(|e| dir_error(&self.path, &format!("reading {}", quote_path(&path)), &e))?;
        let previous = read_file(&bytes, &path)?.unwrap_or_default();
        let lease = Lease {
            dir_path: self.path.clone(),
            sharing: self.sharing,
            space: self.space,
            name,
            path,
            datacenter_id,
            worker_id,
            held: Mutex::new(Held {
                dir: Arc::clone(&self.dir),
                file,
                earlier: Vec::new(),
                claims: vec![by_path, by_inode],
                claimed: vec![self.id],
                _space_claim: by_space,
                record: previous.clone(),
                loss: Loss::default(),
            }),
            previous,
        };
        // Name this process as the holder at once, keeping the earlier marks.
        lease.advance(SystemClock.now_ms(), |_| Ok(()))?;
        Ok(Attempt::Taken(Box::new(lease)))
    }

    /// Refuses a new slot when the process holds `held` slots, [`MAX_HELD`] or more, already.
    fn check_room(held: usize) -> Result<()> {
        if held >= MAX_HELD {
            return Err(Error::new(
                Code::LeaseDir,
                Class::Error,
                format!(
                    "lease: expected this process to hold at most {MAX_HELD} slots (one open file each), found it holds \
                     {} already: generators of that many (datacenterId, workerId) identities in one process. Use fewer, \
                     or lease: false for generators that need no host lease",
                    held
                ),
            ));
        }
        Ok(())
    }

    /// Takes the slot `(datacenter_id, worker_id)` for this process, or returns the lease it already holds.
    /// A slot another live process holds is `ERR_SNOWID_WORKER_ID_IN_USE`, naming that process; so is one whose file
    /// another user owns.
    pub fn acquire(&self, datacenter_id: u32, worker_id: u32, what: &str) -> Result<Arc<Lease>> {
        let mut map = held().lock();
        let key = (self.path.clone(), datacenter_id, worker_id);
        if let Some(l) = map.get(&key) {
            return Ok(Arc::clone(l));
        }
        Self::check_room(map.len())?;
        let holder = match self.attempt(datacenter_id, worker_id)? {
            Attempt::Taken(lease) => {
                start_repairs();
                return Ok(Arc::clone(map.entry(key).or_insert(Arc::new(*lease))));
            }
            Attempt::Held(Holder::Here(pid)) => pid.map_or("another process".to_string(), |p| format!("pid {p}")),
            Attempt::Held(Holder::InSpace) => {
                "another process of the same id space on this host (layout, epoch and lease \
                namespace; its lease directory may differ)"
                    .to_string()
            }
            Attempt::Foreign(uid) => format!("the user with uid {uid}, whose file it is"),
        };
        Err(Error::new(
            Code::WorkerIdInUse,
            Class::Error,
            format!(
                "{what}: expected a worker id no other live process holds, found datacenterId {datacenter_id} workerId \
                 {worker_id} held by {holder} (lease file {}); SNOWID_WORKER_ID_IF_TAKEN=next moves on to a free one",
                quote_path(&self.slot_path(datacenter_id, worker_id))
            ),
        ))
    }

    /// This process's automatic slot among the datacenter ids `datacenters`: the first time, the lowest worker id
    /// below `slots` of the lowest datacenter id (datacenterId 0's worker ids, then 1's, and so on) that no process
    /// holds, whose file is this user's (or can be made), and that `usable` accepts; after that, the same slot. A slot
    /// it cannot use (another user's file, a corrupt or special file, marks too far ahead) is skipped, and left as found.
    pub fn acquire_auto(
        &self,
        datacenters: RangeInclusive<u32>,
        slots: u64,
        usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        self.choose(datacenters, slots, 0, usable)
    }

    /// As [`LeaseDir::acquire_auto`] within `datacenter_id`, trying the slots from `first` upwards, then from 0.
    pub fn acquire_from(
        &self,
        datacenter_id: u32,
        slots: u64,
        first: u64,
        usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        self.choose(datacenter_id..=datacenter_id, slots, first, usable)
    }

    /// The automatic slot: for each datacenter id of `datacenters` in turn, its worker ids from `first` upwards, then
    /// from 0. A slot this process already took automatically within `datacenters` is kept (the lowest, should there
    /// be several).
    fn choose(
        &self,
        datacenters: RangeInclusive<u32>,
        slots: u64,
        first: u64,
        usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        let mut auto = auto_slots().lock();
        let kept = auto
            .iter()
            .filter(|((p, d), _)| *p == self.path && datacenters.contains(d))
            .map(|((_, d), w)| (*d, *w))
            .min();
        if let Some((d, w)) = kept {
            return self.acquire(d, w, "workerId");
        }
        let mut map = held().lock();
        let mut skipped = 0u64;
        let first = first.min(slots);
        for dc in datacenters.clone() {
            for w in (first..slots).chain(0..first) {
                let w = w as u32;
                let key = (self.path.clone(), dc, w);
                if map.contains_key(&key) {
                    continue;
                }
                Self::check_room(map.len())?;
                match self.attempt(dc, w) {
                    Ok(Attempt::Taken(lease)) if usable(&lease.previous) => {
                        start_repairs();
                        auto.insert((self.path.clone(), dc), w);
                        return Ok(Arc::clone(map.entry(key).or_insert(Arc::new(*lease))));
                    }
                    // Dropping the lease closes its file, which frees the lock; its marks stay.
                    Ok(Attempt::Taken(_)) | Ok(Attempt::Foreign(_)) => skipped += 1,
                    Ok(Attempt::Held(_)) => {}
                    Err(e) if e.code() == Code::LeaseCorrupt => skipped += 1,
                    Err(e) => return Err(e),
                }
            }
        }
        Err(self.no_free_slot(&datacenters, slots, skipped))
    }

    /// `ERR_SNOWID_NO_FREE_WORKER_ID` for an automatic lease that found every slot of `datacenters` held or skipped,
    /// saying what to set.
    fn no_free_slot(&self, datacenters: &RangeInclusive<u32>, slots: u64, skipped: u64) -> Error {
        let (lo, hi) = (*datacenters.start(), *datacenters.end());
        let total = u64::from(hi - lo).saturating_mul(slots).saturating_add(slots);
        let bits = slots.trailing_zeros();
        let widen = if bits < 32 {
            format!(
                "widen workerBits alike on every process that makes these ids (SNOWID_WORKER_BITS={} doubles the slots to {})",
                bits + 1,
                total.saturating_mul(2)
            )
        } else {
            "use fewer processes per lease directory".to_string()
        };
        let (which, found, advice) = if lo == hi {
            (
                format!("for datacenterId {lo}"),
                format!("all {slots} held ({skipped} skipped"),
                format!("Stop a process, give some processes another datacenter id (SNOWID_DATACENTER_ID), or {widen}"),
            )
        } else {
            (
                format!("for any datacenterId from {lo} to {hi}"),
                format!("all {total} held ({slots} worker ids each; {skipped} skipped"),
                format!("Stop a process, or {widen}"),
            )
        };
        Error::new(
            Code::NoFreeWorkerId,
            Class::Error,
            format!(
                "workerId: expected a free slot {which} in lease directory {}, found {found}: another user's, unreadable, or \
                 marked ahead). {advice}",
                quote_path(&self.path)
            ),
        )
    }

    /// The (workerId, pid) of every slot of `datacenter_id` held by a live process, sorted by workerId, without
    /// taking any lock: the pid its file names, where that process holds the file's lock (on Linux, as
    /// `/proc/locks` shows; elsewhere the file's word is taken). Files that cannot be read, or are not regular files
    /// of a lease's size, are left out.
    pub fn recorded(&self, datacenter_id: u32) -> Result<Vec<(u32, u32)>> {
        let prefix = format!("dc{datacenter_id}-worker");
        let entries = std::fs::read_dir(&self.path).map_err(|e| dir_error(&self.path, "listing it", &e))?;
        let locks = flock_holders();
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(worker) = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .and_then(|n| n.strip_suffix(".lease"))
                .and_then(|w| w.parse::<u32>().ok())
            else {
                continue;
            };
            let path = entry.path();
            let Ok(cname) = CString::new(name.as_bytes()) else { continue };
            let Some((file, m)) = open_at(&self.dir, &cname, libc::O_RDONLY)
                .ok()
                .and_then(|f| f.metadata().ok().map(|m| (f, m)))
                .filter(|(_, m)| check_slot_file(m, &path).is_ok())
            else {
                continue;
            };
            let record = read_records(&file).ok().and_then(|b| read_file(&b, &path).ok().flatten());
            if let Some(r) = record {
                let holds = locks.as_ref().is_none_or(|l| l.contains(&FlockHolder::of(r.pid, &m)));
                if holds {
                    out.push((worker, r.pid));
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}

/// A process holding an exclusive `flock` on a file, as `/proc/locks` names them: pid, device, inode.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FlockHolder {
    pid: u32,
    major: u64,
    minor: u64,
    ino: u64,
}

impl FlockHolder {
    fn of(pid: u32, m: &std::fs::Metadata) -> FlockHolder {
        let dev = m.dev();
        // dev_t and the width of major and minor differ between systems; /proc/locks is Linux's, where they fit.
        #[allow(clippy::unnecessary_cast)]
        let (major, minor) = (libc::major(dev as libc::dev_t) as u64, libc::minor(dev as libc::dev_t) as u64);
        FlockHolder { pid, major, minor, ino: m.ino() }
    }

    /// One line of `/proc/locks`, such as `3: FLOCK  ADVISORY  WRITE 4242 08:01:131 0 EOF`, when it is a granted
    /// exclusive flock (blocked requests, marked `->`, are not).
    fn parse(line: &str) -> Option<FlockHolder> {
        let mut words = line.split_whitespace().skip(1);
        if (words.next()?, words.next()?, words.next()?) != ("FLOCK", "ADVISORY", "WRITE") {
            return None;
        }
        let pid = words.next()?.parse().ok()?;
        let mut dev = words.next()?.split(':');
        let major = u64::from_str_radix(dev.next()?, 16).ok()?;
        let minor = u64::from_str_radix(dev.next()?, 16).ok()?;
        let ino = dev.next()?.parse().ok()?;
        Some(FlockHolder { pid, major, minor, ino })
    }
}

/// Every granted exclusive flock on the host, or `None` where `/proc/locks` cannot be read. Read bounded.
///
/// The kernel makes `/proc/locks` as it is read, and a read that does not start at the beginning finds its place
/// again by counting entries of a list that other processes change meanwhile: a lock taken or dropped elsewhere
/// between two reads makes the next one skip (or repeat) a lock held all along. So each reading asks for a large
/// block at once (the kernel then lists a page of entries in one pass, where a reading that starts small, as std's
/// `read_to_string` does with 32 bytes, starts again at every entry), and the readings are repeated until two in a
/// row agree, at most [`LOCK_READINGS`] times. A lock seen in any of them counts.
fn flock_holders() -> Option<HashSet<FlockHolder>> {
    let mut seen = HashSet::new();
    let mut last: Option<Vec<u8>> = None;
    for _ in 0..LOCK_READINGS {
        let text = read_proc_locks()?;
        seen.extend(String::from_utf8_lossy(&text).lines().filter_map(FlockHolder::parse));
        if last.as_ref() == Some(&text) {
            break;
        }
        last = Some(text);
    }
    Some(seen)
}

/// How many times [`flock_holders`] reads `/proc/locks` at most.
const LOCK_READINGS: usize = 5;

/// One reading of `/proc/locks`, at most 16 MiB. With room reserved, std reads in blocks of 8 KiB or more, and
/// makes no 32-byte first read.
fn read_proc_locks() -> Option<Vec<u8>> {
    use std::io::Read;
    let mut text = Vec::with_capacity(64 << 10);
    File::open("/proc/locks").ok()?.take(16 << 20).read_to_end(&mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::layout::{Layout, Widths, DEFAULT_EPOCH};

    /// A directory of the test's own under the OS temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let p = std::env::temp_dir().join(format!("snowid-test-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            TempDir(p)
        }

        fn join(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }

        /// The test's own id space (a namespace named after its directory), so that tests running at once, and
        /// other processes on the host, do not meet each other's slots.
        fn space(&self) -> Space {
            let name = self.0.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Space::new(&default_layout(), Some(&name))
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn default_layout() -> Layout {
        Layout::new(Widths::default(), DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap()
    }

    fn private(t: &TempDir) -> LeaseDir {
        LeaseDir::open(&t.0, Sharing::Private, t.space()).unwrap()
    }

    const ANY: &dyn Fn(&Record) -> bool = &|_| true;

    #[test]
    fn records_round_trip_and_refuse_damage() {
        let r = Record { seq: 7, pid: 4242, marks: vec![(0, 1_795_316_461_930), (3, 1_795_316_460_210)] };
        let bytes = r.encode().unwrap();
        assert_eq!(bytes.len(), RECORD_SIZE);
        assert_eq!(Record::decode(&bytes), Some(r.clone()));
        let empty = Record::default();
        assert_eq!(Record::decode(&empty.encode().unwrap()), Some(empty));
        for i in [0, 20, 40, 60] {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert_eq!(Record::decode(&bad), None, "flipped byte {i}");
        }
        assert_eq!(Record::decode(b"garbage"), None);
        assert_eq!(Record::decode(&bytes[..30]), None);
        let too_many = Record { seq: 1, pid: 1, marks: (0..200).map(|c| (c, 1_795_316_461_930)).collect() };
        assert_eq!(too_many.encode(), None);
    }

    #[test]
    fn the_documented_record_is_one_snowid_reads() {
        let line = "snowid-lease v1 seq=7 pid=4242 marks=0:1795316461930,1:1795316460210 sum=14128d3577de609c";
        assert!(include_str!("../../docs/one-host.md").contains(line), "docs/one-host.md shows this record");
        let r = Record::decode(line.as_bytes()).unwrap();
        assert_eq!(r, Record { seq: 7, pid: 4242, marks: vec![(0, 1_795_316_461_930), (1, 1_795_316_460_210)] });
        assert_eq!(r.encode().unwrap().trim_ascii_end(), line.as_bytes());
    }

    #[test]
    fn the_newest_valid_record_wins_and_a_torn_one_falls_back() {
        let p = Path::new("/x");
        let a = Record { seq: 4, pid: 1, marks: vec![(0, 100)] }.encode().unwrap();
        let b = Record { seq: 5, pid: 2, marks: vec![(0, 200)] }.encode().unwrap();
        let both = [a.clone(), b.clone()].concat();
        assert_eq!(read_file(&both, p).unwrap().unwrap().seq, 5);
        let mut torn = both.clone();
        torn[RECORD_SIZE + 50] = b'#';
        assert_eq!(read_file(&torn, p).unwrap().unwrap().seq, 4);
        assert_eq!(read_file(&[], p).unwrap(), None);
        let e = read_file(b"hello, world", p).unwrap_err();
        assert_eq!(e.code(), Code::LeaseCorrupt);
        assert!(e.message().contains("lease file \"/x\""), "{e}");
        assert!(!e.message().contains("hello"), "file content is never echoed: {e}");
    }

    #[test]
    fn a_slot_is_held_once_and_marks_persist() {
        let t = TempDir::new("slots");
        let dir = private(&t);
        let a = dir.acquire(1, 2, "workerId").unwrap();
        let again = dir.acquire(1, 2, "workerId").unwrap();
        assert!(Arc::ptr_eq(&a, &again), "one lease per slot per process");
        // Another open file description (as another process would have) cannot take it.
        assert!(
            matches!(dir.attempt(1, 2).unwrap(), Attempt::Held(Holder::Here(Some(pid))) if pid == std::process::id())
        );
        a.reserve(0, 5_000, 1_000).unwrap();
        a.reserve(1, 7_000, 1_000).unwrap();
        a.reserve(0, 6_000, 1_000).unwrap();
        let bytes = std::fs::read(a.path()).unwrap();
        let r = read_file(&bytes, a.path()).unwrap().unwrap();
        assert_eq!(r.marks, vec![(0, 6_000), (1, 7_000)]);
        // A mark in the past is kept: should the clock step back behind it, it still bounds clockBack 1's ids.
        a.reserve(0, 9_000, 7_500).unwrap();
        let r = read_file(&std::fs::read(a.path()).unwrap(), a.path()).unwrap().unwrap();
        assert_eq!(r.marks, vec![(0, 9_000), (1, 7_000)]);
    }

    #[test]
    fn automatic_slots_skip_held_ones_and_run_out_loudly() {
        let t = TempDir::new("auto");
        let dir = private(&t);
        let explicit = dir.acquire(0, 0, "workerId").unwrap();
        let auto = dir.acquire_auto(0..=0, 4, ANY).unwrap();
        assert_eq!((explicit.worker_id(), auto.worker_id()), (0, 1));
        assert_eq!(dir.acquire_auto(0..=0, 4, ANY).unwrap().worker_id(), 1, "the process keeps its automatic slot");
        let me = std::process::id();
        assert_eq!(dir.recorded(0).unwrap(), vec![(0, me), (1, me)]);
        assert_eq!(dir.recorded(1).unwrap(), vec![]);
        let t2 = TempDir::new("auto2");
        let dir2 = private(&t2);
        for w in 0..2 {
            dir2.acquire(5, w, "workerId").unwrap();
        }
        assert_eq!(dir2.acquire_auto(5..=5, 2, ANY).unwrap_err().code(), Code::NoFreeWorkerId);
    }

    #[test]
    fn among_datacenter_ids_it_fills_datacenter_0_then_1_and_skips_what_it_cannot_use() {
        let t = TempDir::new("dcs");
        let dir = private(&t);
        for w in 0..4 {
            dir.acquire(0, w, "workerId").unwrap();
        }
        // (1, 0) reserved far ahead by an earlier holder: `usable` refuses it, so it is skipped, its marks kept.
        let far = SystemClock.now_ms() + 3_600_000;
        std::fs::write(dir.slot_path(1, 0), Record { seq: 3, pid: 1, marks: vec![(0, far)] }.encode().unwrap())
            .unwrap();
        let usable = |r: &Record| r.marks.iter().all(|&(_, m)| m < far);
        let auto = dir.acquire_auto(0..=3, 4, &usable).unwrap();
        assert_eq!((auto.datacenter_id(), auto.worker_id()), (1, 1));
        assert_eq!(marks_at(&dir.slot_path(1, 0)), vec![(0, far)]);
        // The process keeps that slot, asked among every datacenter id or within datacenterId 1.
        assert!(Arc::ptr_eq(&auto, &dir.acquire_auto(0..=3, 4, ANY).unwrap()));
        assert!(Arc::ptr_eq(&auto, &dir.acquire_auto(1..=1, 4, ANY).unwrap()));
        // Within datacenterId 2 alone, a slot of its own there.
        let two = dir.acquire_auto(2..=2, 4, ANY).unwrap();
        assert_eq!((two.datacenter_id(), two.worker_id()), (2, 0));
    }

    #[test]
    fn one_datacenter_id_stays_put_and_running_out_says_what_to_set() {
        let t = TempDir::new("dc-full");
        let dir = private(&t);
        for w in 0..2 {
            dir.acquire(0, w, "workerId").unwrap();
        }
        // datacenterId 1 has free slots, but a lease within datacenterId 0 does not move there.
        let e = dir.acquire_auto(0..=0, 2, ANY).unwrap_err();
        assert_eq!(e.code(), Code::NoFreeWorkerId);
        assert!(e.message().contains("for datacenterId 0 in lease directory"), "{e}");
        assert!(e.message().contains("found all 2 held (0 skipped: "), "{e}");
        assert!(e.message().contains("another datacenter id (SNOWID_DATACENTER_ID)"), "{e}");
        assert!(e.message().contains("SNOWID_WORKER_BITS=2 doubles the slots to 4"), "{e}");
        let e = dir.acquire_from(0, 2, 1, ANY).unwrap_err();
        assert_eq!(e.code(), Code::NoFreeWorkerId);
        assert!(dir.recorded(1).unwrap().is_empty(), "nothing was taken in datacenterId 1");
        // Among both, it moves on to datacenterId 1; once that is full too, the message counts every slot.
        let t2 = TempDir::new("dcs-full");
        let dir2 = private(&t2);
        for w in 0..2 {
            dir2.acquire(0, w, "workerId").unwrap();
        }
        let auto = dir2.acquire_auto(0..=1, 2, ANY).unwrap();
        assert_eq!((auto.datacenter_id(), auto.worker_id()), (1, 0));
        dir2.acquire(1, 1, "workerId").unwrap();
        let t3 = TempDir::new("dcs-full-2");
        let dir3 = private(&t3);
        for (dc, w) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            dir3.acquire(dc, w, "workerId").unwrap();
        }
        let e = dir3.acquire_auto(0..=1, 2, ANY).unwrap_err();
        assert_eq!(e.code(), Code::NoFreeWorkerId);
        assert!(e.message().contains("for any datacenterId from 0 to 1 in lease directory"), "{e}");
        assert!(e.message().contains("found all 4 held (2 worker ids each; 0 skipped: "), "{e}");
        assert!(e.message().contains("Stop a process, or widen workerBits alike on every process"), "{e}");
        assert!(e.message().contains("SNOWID_WORKER_BITS=2 doubles the slots to 8"), "{e}");
    }

    #[test]
    fn an_unusable_directory_is_a_coded_error() {
        let t = TempDir::new("not-a-dir");
        std::fs::create_dir_all(&t.0).unwrap();
        let file = t.join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = LeaseDir::open(&file, Sharing::Private, t.space()).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::LeaseDir);
        assert!(e.message().starts_with(&format!("lease directory {}", quote_path(&file))), "{e}");
        let e = LeaseDir::open(&file.join("sub"), Sharing::Private, t.space()).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::LeaseDir);
    }

    #[test]
    fn a_garbage_slot_file_is_refused_not_overwritten() {
        let t = TempDir::new("garbage");
        let dir = private(&t);
        std::fs::write(dir.slot_path(0, 9), b"\x00\x01 not a lease").unwrap();
        let e = dir.acquire(0, 9, "workerId").unwrap_err();
        assert_eq!(e.code(), Code::LeaseCorrupt);
        assert_eq!(std::fs::read(dir.slot_path(0, 9)).unwrap(), b"\x00\x01 not a lease");
    }

    #[test]
    fn writer_and_reader_agree_for_every_clock_back_width() {
        // Every clockBackBits a layout allows (0 to 24 leaves a timestamp field that lasts), with as many marks in
        // the future as a record holds, at the largest values: each record the writer writes, the reader reads back.
        let t = TempDir::new("marks");
        let dir = private(&t);
        let now = 1_795_000_000_000u64;
        for bits in 0..=24u32 {
            let values = 1u64 << bits;
            let lease = dir.acquire(bits, 0, "workerId").unwrap();
            let n = values.min(MAX_MARKS as u64);
            for i in 0..n {
                // The highest clockBack values, each reserved further ahead.
                let c = (values - 1 - i) as u32;
                lease.reserve(c, now + 1_000_000 + i, now).unwrap();
                let bytes = std::fs::read(lease.path()).unwrap();
                let r = read_file(&bytes, lease.path()).unwrap().unwrap();
                assert_eq!(r.marks.len() as u64, i + 1, "bits {bits}");
            }
            if values > MAX_MARKS as u64 {
                // One more reserved value than a record holds: refused before any id, and the file still reads.
                let e = lease.reserve(0, now + 2_000_000, now).unwrap_err();
                assert_eq!(e.code(), Code::ClockBackwards, "bits {bits}: {e}");
                let bytes = std::fs::read(lease.path()).unwrap();
                assert_eq!(read_file(&bytes, lease.path()).unwrap().unwrap().marks.len(), MAX_MARKS);
            }
        }
    }

    fn marks_at(path: &Path) -> Vec<(u32, u64)> {
        read_file(&std::fs::read(path).unwrap(), path).unwrap().unwrap().marks
    }

    #[test]
    fn a_slot_stays_held_whatever_happens_to_its_file() {
        let t = TempDir::new("deleted");
        let dir = private(&t);
        let lease = dir.acquire(7, 1, "workerId").unwrap();
        lease.reserve(0, 5_000, 1_000).unwrap();
        std::fs::remove_file(lease.path()).unwrap();
        // Before the holder writes again, nothing at the path: a newcomer still cannot take the slot.
        let newcomer = private(&t);
        assert!(matches!(newcomer.attempt(7, 1).unwrap(), Attempt::Held(_)));
        assert!(!lease.path().exists(), "and it left no file");
        lease.reserve(0, 6_000, 1_000).unwrap();
        assert_eq!(marks_at(lease.path()), vec![(0, 6_000)], "the file is back, with the marks");
        // Replaced by a file no one holds, with no mark ahead: taken over, and the marks written there.
        std::fs::write(t.join("other"), b"").unwrap();
        std::fs::rename(t.join("other"), lease.path()).unwrap();
        lease.reserve(0, 7_000, 1_000).unwrap();
        assert_eq!(marks_at(lease.path()), vec![(0, 7_000)]);
        assert!(matches!(newcomer.attempt(7, 1).unwrap(), Attempt::Held(_)));
    }

    #[test]
    fn an_idle_holder_puts_back_marks_that_reach_past_the_clock() {
        let t = TempDir::new("repair");
        std::fs::create_dir_all(&t.0).unwrap();
        let path = t.join("lease");
        let dir = LeaseDir::open(&path, Sharing::Private, t.space()).unwrap();
        let lease = dir.acquire(4, 4, "workerId").unwrap();
        let now = SystemClock.now_ms();
        lease.reserve(0, now + 600, now).unwrap();
        let file = path.join("dc4-worker4.lease");
        std::fs::remove_dir_all(&path).unwrap();
        // No id is issued: the repair thread alone puts the directory and the marks back.
        let back = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(REPAIR_EVERY_MS));
            std::fs::read(&file).ok().and_then(|b| read_file(&b, &file).ok().flatten()).is_some()
        });
        assert!(back, "marks back within 2 s");
        assert_eq!(marks_at(&file), vec![(0, now + 600)]);
        // Once the marks are past, nothing is put back: a removed directory stays removed.
        std::thread::sleep(std::time::Duration::from_millis(700));
        std::fs::remove_dir_all(&path).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10 * REPAIR_EVERY_MS));
        assert!(!path.exists());
    }

    #[test]
    fn a_file_it_cannot_be_sure_of_stops_the_holder() {
        let t = TempDir::new("unsure");
        let dir = private(&t);
        let lease = dir.acquire(7, 2, "workerId").unwrap();
        lease.reserve(0, 5_000, 1_000).unwrap();
        // Marks ahead of the clock: another holder's ids may reach there.
        let ahead = Record { seq: 3, pid: 1, marks: vec![(1, 9_000)] }.encode().unwrap();
        std::fs::write(t.join("ahead"), ahead).unwrap();
        std::fs::rename(t.join("ahead"), lease.path()).unwrap();
        let e = lease.reserve(0, 6_000, 1_000).unwrap_err();
        assert_eq!(e.code(), Code::LeaseLost);
        assert!(
            e.message().contains("with marks ahead of the clock; the record there names pid 1 as its holder"),
            "{e}"
        );
        // For good: the file gone again, the holder still cannot be sure which ids the other one issued.
        std::fs::remove_file(lease.path()).unwrap();
        assert_eq!(lease.reserve(0, 6_000, 1_000).unwrap_err(), e);
        // Locked by another open file (as a process in another network namespace would hold it).
        let lease = dir.acquire(7, 3, "workerId").unwrap();
        std::fs::write(t.join("locked"), b"").unwrap();
        let other = File::open(t.join("locked")).unwrap();
        other.try_lock().unwrap();
        std::fs::rename(t.join("locked"), lease.path()).unwrap();
        let e = lease.reserve(0, 6_000, 1_000).unwrap_err();
        assert_eq!(e.code(), Code::LeaseLost);
        assert!(
            e.message().contains("locked by another process; no lease record there can be read")
                && e.message().len() <= 600,
            "{e}"
        );
    }

    /// Swaps two paths at once (`renameat2` with `RENAME_EXCHANGE`): no moment in which the first is missing.
    #[cfg(target_os = "linux")]
    fn exchange(a: &Path, b: &Path) {
        let (a, b) = (CString::new(a.as_os_str().as_bytes()).unwrap(), CString::new(b.as_os_str().as_bytes()).unwrap());
        // SAFETY: two NUL-terminated paths, relative to nothing (both absolute).
        let rc =
            unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
        assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_directory_replaced_under_a_holder_stops_its_generator_within_a_repair_period() {
        use crate::core::generator::tests::settings;
        use crate::core::generator::{ClockBackPolicy, Generator, State};
        use crate::core::layout::Widths;
        let t = TempDir::new("replaced");
        std::fs::create_dir_all(&t.0).unwrap();
        let path = t.join("lease");
        let dir = LeaseDir::open(&path, Sharing::Private, t.space()).unwrap();
        let s = settings(Widths::default(), ClockBackPolicy::Bits);
        let lease = dir.acquire(s.datacenter_id, s.worker_id, "workerId").unwrap();
        let state = Shared::new(State::resume(&s, 0, Vec::new(), lease.clone(), &SystemClock).unwrap());
        lease.stop_on_loss(&state, &s.layout);
        let g = Generator::new(s, state, SystemClock).unwrap();
        g.next_id().unwrap();
        // Another directory, whose slot file a process in another network namespace (which the claims do not reach)
        // holds: locked by another open file, with its record. It takes the configured path's place at once.
        let other = t.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
        let theirs = other.join("dc1-worker3.lease");
        std::fs::write(&theirs, Record { seq: 1, pid: 4242, marks: vec![] }.encode().unwrap()).unwrap();
        let locked = File::open(&theirs).unwrap();
        locked.try_lock().unwrap();
        let new_dir = std::fs::metadata(&other).unwrap();
        exchange(&path, &other);
        let changed = std::time::Instant::now();
        // No id is asked for: the repair thread alone finds the slot lost.
        while lease.held.lock().loss.error.is_none() && changed.elapsed().as_secs() < 2 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let found = changed.elapsed().as_millis() as u64;
        assert!(
            found < crate::core::generator::MARK_WINDOW_MS,
            "found lost after {found} ms, no sooner than a mark write would have"
        );
        // The mark the first id wrote still covers the clock, yet the next id is refused.
        let e = g.next_id().unwrap_err();
        assert_eq!(g.snapshot().stats.mark_writes, 1, "no mark was written after the first");
        assert_eq!(e.code(), Code::LeaseLost);
        let m = e.message();
        assert!(m.contains("found that another file is there, locked by another process"), "{m}");
        assert!(m.contains("the record there names pid 4242 as its holder"), "{m}");
        assert!(
            m.contains("ids it issued after its last check that found its own file there, at ")
                && m.contains("may collide"),
            "{m}"
        );
        assert_eq!(g.next_id().unwrap_err(), e, "for good");
        assert_eq!(lease.reserve(0, u64::MAX, 0).unwrap_err(), e, "and at every mark write");
        // The new directory's claim was not kept: had it been, the holder's own claim would later have been blamed
        // on "another process".
        let name = claim::inode_name(new_dir.dev(), new_dir.ino(), 1, 3);
        assert!(Claim::take(&name).unwrap().is_some(), "the holder left the new directory's claim free");
    }

    #[test]
    fn a_moved_or_deleted_directory_is_followed_and_the_slot_kept() {
        let t = TempDir::new("moved");
        std::fs::create_dir_all(&t.0).unwrap();
        let path = t.join("lease");
        let dir = LeaseDir::open(&path, Sharing::Private, t.space()).unwrap();
        let lease = dir.acquire(3, 4, "workerId").unwrap();
        lease.reserve(0, 5_000, 1_000).unwrap();
        std::fs::rename(&path, t.join("lease.old")).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A newcomer at the path finds a fresh directory, and still cannot take the slot.
        let newcomer = LeaseDir::open(&path, Sharing::Private, t.space()).unwrap();
        assert!(matches!(newcomer.attempt(3, 4).unwrap(), Attempt::Held(_)));
        // Nor through the old directory's new name.
        let old = LeaseDir::open(&t.join("lease.old"), Sharing::Private, t.space()).unwrap();
        assert!(matches!(old.attempt(3, 4).unwrap(), Attempt::Held(_)));
        lease.reserve(0, 6_000, 1_000).unwrap();
        assert_eq!(
            marks_at(&path.join("dc3-worker4.lease")),
            vec![(0, 6_000)],
            "the holder writes where newcomers look"
        );
        assert_eq!(marks_at(&t.join("lease.old/dc3-worker4.lease")), vec![(0, 6_000)], "and in the old file too");
        std::fs::remove_dir_all(&path).unwrap();
        lease.reserve(0, 7_000, 1_000).unwrap();
        assert_eq!(marks_at(&path.join("dc3-worker4.lease")), vec![(0, 7_000)], "the directory is made again");
    }

    #[test]
    fn only_the_process_that_holds_a_slot_is_named_as_its_holder() {
        let line = FlockHolder::parse("3: FLOCK  ADVISORY  WRITE 4242 fd:01:131 0 EOF").unwrap();
        assert_eq!(line, FlockHolder { pid: 4242, major: 0xfd, minor: 1, ino: 131 });
        assert_eq!(FlockHolder::parse("3: -> FLOCK  ADVISORY  WRITE 4242 fd:01:131 0 EOF"), None);
        assert_eq!(FlockHolder::parse("4: POSIX  ADVISORY  WRITE 4242 fd:01:131 0 EOF"), None);
        assert_eq!(FlockHolder::parse("5: FLOCK  ADVISORY  READ 4242 fd:01:131 0 EOF"), None);
        let t = TempDir::new("recorded");
        let dir = private(&t);
        let me = std::process::id();
        dir.acquire(2, 0, "workerId").unwrap();
        // A record naming this process on a slot it does not hold (a stale file, or a forged one).
        std::fs::write(dir.slot_path(2, 1), Record { seq: 1, pid: me, marks: vec![] }.encode().unwrap()).unwrap();
        assert_eq!(dir.recorded(2).unwrap(), vec![(0, me)]);
    }

    #[test]
    fn a_held_slot_is_listed_while_other_locks_come_and_go() {
        let t = TempDir::new("churn");
        let dir = private(&t);
        let me = std::process::id();
        // Slots held all along, among locks that other threads take and drop as fast as they can (as other
        // processes on a busy host do): /proc/locks changes between the reads that list it.
        for w in 0..4 {
            dir.acquire(5, w, "workerId").unwrap();
        }
        let held: Vec<(u32, u32)> = (0..4).map(|w| (w, me)).collect();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churners: Vec<_> = (0..2)
            .map(|k| {
                let (stop, path) = (stop.clone(), t.join(&format!("churn-{k}")));
                std::thread::spawn(move || {
                    let files: Vec<File> =
                        (0..8).map(|i| File::create(path.with_extension(i.to_string())).unwrap()).collect();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for f in &files {
                            f.lock().unwrap();
                        }
                        for f in &files {
                            f.unlock().unwrap();
                        }
                    }
                })
            })
            .collect();
        let mut missed = 0;
        for _ in 0..2_000 {
            if dir.recorded(5).unwrap() != held {
                missed += 1;
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for c in churners {
            c.join().unwrap();
        }
        assert_eq!(missed, 0, "a held slot was left out of {missed} of 2000 listings");
    }

    /// The child half of [`one_id_space_is_one_set_of_slots_whatever_the_directory`]: with `LEASE_TEST_HOLDER` set
    /// to `<dir>:<namespace>`, takes slot (1, 0) there and holds it until its stdin closes. Else nothing.
    #[test]
    fn holds_a_slot_for_another_test() {
        let Some(spec) = std::env::var("LEASE_TEST_HOLDER").ok() else { return };
        let (path, namespace) = spec.rsplit_once(':').unwrap();
        let dir =
            LeaseDir::open(Path::new(path), Sharing::Private, Space::new(&default_layout(), Some(namespace))).unwrap();
        dir.acquire(1, 0, "workerId").unwrap();
        // On a line of its own: the test harness has written the test's name without ending its line.
        println!("\nsnowid-test-held");
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new()).unwrap();
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn one_id_space_is_one_set_of_slots_whatever_the_directory() {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let (mine, theirs) = (TempDir::new("space-mine"), TempDir::new("space-theirs"));
        let namespace = format!("snowid-test-{}-space", std::process::id());
        let space = Space::new(&default_layout(), Some(&namespace));
        // Another process holds (1, 0) of this id space, in a directory of its own.
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "core::lease::tests::holds_a_slot_for_another_test", "--nocapture", "--test-threads=1"])
            .env("LEASE_TEST_HOLDER", format!("{}:{namespace}", theirs.0.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(out.by_ref().map_while(|l| l.ok()).any(|l| l == "snowid-test-held"), "the other process took the slot");
        let dir = LeaseDir::open(&mine.0, Sharing::Private, space).unwrap();
        assert!(matches!(dir.attempt(1, 0).unwrap(), Attempt::Held(Holder::InSpace)));
        let e = dir.acquire(1, 0, "workerId").map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::WorkerIdInUse);
        assert!(e.message().contains("held by another process of the same id space on this host"), "{e}");
        assert_eq!(dir.acquire_auto(1..=1, 4, ANY).unwrap().worker_id(), 1, "the automatic lease moves on");
        // Another namespace, or another layout, is another set of slots.
        let other = |space| {
            matches!(
                LeaseDir::open(&mine.0, Sharing::Private, space).unwrap().attempt(1, 0).unwrap(),
                Attempt::Taken(_)
            )
        };
        assert!(other(Space::new(&default_layout(), Some(&format!("{namespace}-2")))));
        let narrower =
            Layout::new(Widths { sequence: 11, ..Widths::default() }, DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
        assert!(other(Space::new(&narrower, Some(&namespace))));
        let later = Layout::new(Widths::default(), DEFAULT_EPOCH + 1, DEFAULT_EPOCH + 2).unwrap();
        assert!(other(Space::new(&later, Some(&namespace))));
        // A second lease of a slot this process holds, in another directory, shares its claim.
        let third = TempDir::new("space-third");
        let again = LeaseDir::open(&third.0, Sharing::Private, space).unwrap();
        assert_eq!(again.acquire(1, 1, "workerId").unwrap().worker_id(), 1);
        // Once the other process has exited, the slot is free.
        drop(child.stdin.take());
        out.for_each(drop);
        assert!(child.wait().unwrap().success());
        assert!(matches!(dir.attempt(1, 0).unwrap(), Attempt::Taken(_)));
    }

    #[test]
    fn a_process_holds_a_bounded_number_of_slots() {
        assert!(LeaseDir::check_room(MAX_HELD - 1).is_ok());
        let e = LeaseDir::check_room(MAX_HELD).unwrap_err();
        assert_eq!(e.code(), Code::LeaseDir);
        assert!(e.message().contains(&format!("at most {MAX_HELD} slots")), "{e}");
    }
}
