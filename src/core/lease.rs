//! Host-local leases of (datacenterId, workerId) slots, and the high-water marks stored with them.
//!
//! Each slot is a file `dc<D>-worker<W>.lease` in the lease directory. A process holds its slot with an exclusive,
//! non-blocking `flock` on that file for its whole life, so the OS frees the slot when the process exits or is
//! killed. `worker_threads` share their process's leases.
//!
//! ## The file (version 1)
//!
//! Two records of [`RECORD_SIZE`] bytes, at offsets 0 and [`RECORD_SIZE`]. Each is one ASCII line padded with
//! spaces and ended by `\n`:
//!
//! ```text
//! snowid-lease v1 seq=7 pid=4242 marks=0:1795316461930,1:1795316460210 sum=5c1f0e0d2a9b7c11
//! ```
//!
//! - `seq` counts writes; record `seq % 2` is the one written, so the other always holds the previous state.
//! - `pid` is the holder that wrote it.
//! - `marks` lists, per clockBack value, a Unix ms up to which ids under that value may have been issued.
//!   Marks already in the past are dropped, because they no longer constrain anything.
//! - `sum` is the FNV-1a 64-bit hash, in hex, of the text before ` sum=`.
//!
//! The valid record with the highest `seq` wins. A torn write damages only the record being written, and it was
//! written before any id past its old mark was issued, so the other record is still a correct bound. An empty
//! file is a slot with no history. A file in which no record is valid is refused with `ERR_SNOWID_LEASE_CORRUPT`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::error::{quote_path, Class, Code, Error, Result};

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

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
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
        None => {
            Err(Error::new(
                Code::LeaseCorrupt,
                Class::Error,
                format!(
                    "lease file {}: expected a snowid lease record (version 1), found {} bytes that are not one \
                     (their content is not shown), so which ids were issued from this slot is unknown. Remove the \
                     file only when no process uses the slot and the clock is past every id issued from it",
                    quote_path(path),
                    bytes.len()
                ),
            ))
        }
    }
}

fn dir_error(dir: &Path, what: &str, e: &std::io::Error) -> Error {
    Error::new(
        Code::LeaseDir,
        Class::Error,
        format!(
            "lease directory {}: expected a directory this process can create and lock files in, found that {what} \
             failed: {e}. Set SNOWID_LEASE_DIR to a usable directory, or SNOWID_LEASE=off with an explicit \
             SNOWID_WORKER_ID",
            quote_path(dir)
        ),
    )
}

/// A slot this process holds, with its record.
#[derive(Debug)]
pub struct Lease {
    file: File,
    path: PathBuf,
    worker_id: u32,
    /// The record as found when the slot was taken: the earlier holders' marks.
    previous: Record,
    record: Mutex<Record>,
}

impl Lease {
    pub fn worker_id(&self) -> u32 {
        self.worker_id
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
        self.advance(|next| {
            let kept = until.max(next.mark(clock_back));
            next.marks.retain(|(c, m)| *m >= now && *c != clock_back);
            next.marks.push((clock_back, kept));
            next.marks.sort_unstable();
        })
    }

    /// Writes the next version of the record: the current one changed by `edit`, naming this process as holder.
    fn advance(&self, edit: impl FnOnce(&mut Record)) -> Result<()> {
        let mut rec = self.record.lock();
        let mut next = rec.clone();
        next.seq += 1;
        next.pid = std::process::id();
        edit(&mut next);
        self.write(&next)?;
        *rec = next;
        Ok(())
    }

    fn write(&self, rec: &Record) -> Result<()> {
        let bytes = rec.encode().ok_or_else(|| {
            Error::new(
                Code::LeaseDir,
                Class::Error,
                format!("lease file {}: expected at most {MAX_MARKS} clockBack marks, found more", quote_path(&self.path)),
            )
        })?;
        let offset = (rec.seq % 2) * RECORD_SIZE as u64;
        self.file.write_all_at(&bytes, offset).map_err(|e| {
            Error::new(
                Code::LeaseDir,
                Class::Error,
                format!("lease file {}: expected to write its mark, found: {e}", quote_path(&self.path)),
            )
        })
    }
}

/// Where leases live, and the leases this process holds there.
pub struct LeaseDir {
    path: PathBuf,
}

/// The leases this process holds, by (directory, datacenterId, workerId). Kept for the life of the process.
type Held = Mutex<HashMap<(PathBuf, u32, u32), Arc<Lease>>>;

fn held() -> &'static Held {
    static HELD: OnceLock<Held> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

fn auto_slots() -> &'static Mutex<HashMap<(PathBuf, u32), u32>> {
    static AUTO: OnceLock<Mutex<HashMap<(PathBuf, u32), u32>>> = OnceLock::new();
    AUTO.get_or_init(Default::default)
}

/// How an attempt to take a slot ended.
enum Attempt {
    Taken(Lease),
    /// Another process holds it; the pid its record names, if readable.
    Held(Option<u32>),
}

impl LeaseDir {
    /// The lease directory at `path`, created (mode 0700) when missing.
    pub fn open(path: &Path) -> Result<LeaseDir> {
        match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path) {
            Ok(()) => {}
            Err(e) => return Err(dir_error(path, "creating it", &e)),
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Ok(LeaseDir { path: path.to_path_buf() }),
            Ok(_) => Err(dir_error(path, "using it", &std::io::Error::new(ErrorKind::NotADirectory, "not a directory"))),
            Err(e) => Err(dir_error(path, "reading it", &e)),
        }
    }

    pub fn slot_path(&self, datacenter_id: u32, worker_id: u32) -> PathBuf {
        self.path.join(format!("dc{datacenter_id}-worker{worker_id}.lease"))
    }

    fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt> {
        let path = self.slot_path(datacenter_id, worker_id);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| dir_error(&self.path, &format!("opening {}", quote_path(&path)), &e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut bytes = Vec::new();
                let pid = file
                    .read_to_end(&mut bytes)
                    .ok()
                    .and_then(|_| read_file(&bytes, &path).ok().flatten())
                    .map(|r| r.pid);
                return Ok(Attempt::Held(pid));
            }
            Err(TryLockError::Error(e)) => return Err(dir_error(&self.path, &format!("locking {}", quote_path(&path)), &e)),
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| dir_error(&self.path, &format!("reading {}", quote_path(&path)), &e))?;
        let previous = read_file(&bytes, &path)?.unwrap_or_default();
        let lease = Lease { file, path, worker_id, record: Mutex::new(previous.clone()), previous };
        // Name this process as the holder at once, keeping the earlier marks.
        lease.advance(|_| {})?;
        Ok(Attempt::Taken(lease))
    }

    /// Takes the slot `(datacenter_id, worker_id)` for this process, or returns the lease it already holds.
    /// A slot another live process holds is `ERR_SNOWID_WORKER_ID_IN_USE`, naming that process.
    pub fn acquire(&self, datacenter_id: u32, worker_id: u32, what: &str) -> Result<Arc<Lease>> {
        let mut map = held().lock();
        let key = (self.path.clone(), datacenter_id, worker_id);
        if let Some(l) = map.get(&key) {
            return Ok(Arc::clone(l));
        }
        match self.attempt(datacenter_id, worker_id)? {
            Attempt::Taken(lease) => Ok(Arc::clone(map.entry(key).or_insert(Arc::new(lease)))),
            Attempt::Held(pid) => Err(Error::new(
                Code::WorkerIdInUse,
                Class::Error,
                format!(
                    "{what}: expected a worker id no other process on this host holds, found datacenterId \
                     {datacenter_id} workerId {worker_id} held by {} (lease file {})",
                    pid.map_or("another process".to_string(), |p| format!("pid {p}")),
                    quote_path(&self.slot_path(datacenter_id, worker_id))
                ),
            )),
        }
    }

    /// This process's automatic slot for `datacenter_id`: the first time, the lowest slot below `slots` that no
    /// process holds; after that, the same slot.
    pub fn acquire_auto(&self, datacenter_id: u32, slots: u64) -> Result<Arc<Lease>> {
        let mut auto = auto_slots().lock();
        if let Some(&w) = auto.get(&(self.path.clone(), datacenter_id)) {
            return self.acquire(datacenter_id, w, "workerId");
        }
        let mut map = held().lock();
        for w in 0..slots {
            let w = w as u32;
            let key = (self.path.clone(), datacenter_id, w);
            if map.contains_key(&key) {
                continue;
            }
            if let Attempt::Taken(lease) = self.attempt(datacenter_id, w)? {
                auto.insert((self.path.clone(), datacenter_id), w);
                return Ok(Arc::clone(map.entry(key).or_insert(Arc::new(lease))));
            }
        }
        Err(Error::new(
            Code::NoFreeWorkerId,
            Class::Error,
            format!(
                "workerId: expected a free slot for datacenterId {datacenter_id} in lease directory {}, found all \
                 {slots} held",
                quote_path(&self.path)
            ),
        ))
    }

    /// The (workerId, pid) of every slot of `datacenter_id` whose file names a process, whether or not it still
    /// runs, sorted by workerId, without taking any lock. Files that cannot be read are left out.
    pub fn recorded(&self, datacenter_id: u32) -> Result<Vec<(u32, u32)>> {
        let prefix = format!("dc{datacenter_id}-worker");
        let entries = std::fs::read_dir(&self.path).map_err(|e| dir_error(&self.path, "listing it", &e))?;
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
            if let Some(r) = std::fs::read(&path).ok().and_then(|b| read_file(&b, &path).ok().flatten()) {
                out.push((worker, r.pid));
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("snowid-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

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
        let dir = LeaseDir::open(&tmp("slots")).unwrap();
        let a = dir.acquire(1, 2, "workerId").unwrap();
        let again = dir.acquire(1, 2, "workerId").unwrap();
        assert!(Arc::ptr_eq(&a, &again), "one lease per slot per process");
        // Another open file description (as another process would have) cannot take it.
        assert!(matches!(dir.attempt(1, 2).unwrap(), Attempt::Held(Some(pid)) if pid == std::process::id()));
        a.reserve(0, 5_000, 1_000).unwrap();
        a.reserve(1, 7_000, 1_000).unwrap();
        a.reserve(0, 6_000, 1_000).unwrap();
        let bytes = std::fs::read(a.path()).unwrap();
        let r = read_file(&bytes, a.path()).unwrap().unwrap();
        assert_eq!(r.marks, vec![(0, 6_000), (1, 7_000)]);
        // Marks in the past are dropped on the next write.
        a.reserve(0, 9_000, 7_500).unwrap();
        let r = read_file(&std::fs::read(a.path()).unwrap(), a.path()).unwrap().unwrap();
        assert_eq!(r.marks, vec![(0, 9_000)]);
    }

    #[test]
    fn automatic_slots_skip_held_ones_and_run_out_loudly() {
        let dir = LeaseDir::open(&tmp("auto")).unwrap();
        let explicit = dir.acquire(0, 0, "workerId").unwrap();
        let auto = dir.acquire_auto(0, 4).unwrap();
        assert_eq!((explicit.worker_id(), auto.worker_id()), (0, 1));
        assert_eq!(dir.acquire_auto(0, 4).unwrap().worker_id(), 1, "the process keeps its automatic slot");
        let me = std::process::id();
        assert_eq!(dir.recorded(0).unwrap(), vec![(0, me), (1, me)]);
        assert_eq!(dir.recorded(1).unwrap(), vec![]);
        let dir2 = LeaseDir::open(&tmp("auto2")).unwrap();
        for w in 0..2 {
            dir2.acquire(5, w, "workerId").unwrap();
        }
        assert_eq!(dir2.acquire_auto(5, 2).unwrap_err().code(), Code::NoFreeWorkerId);
    }

    #[test]
    fn an_unusable_directory_is_a_coded_error() {
        let file = tmp("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        let e = LeaseDir::open(&file).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::LeaseDir);
        assert!(e.message().starts_with(&format!("lease directory {}", quote_path(&file))), "{e}");
        let e = LeaseDir::open(&file.join("sub")).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::LeaseDir);
    }

    #[test]
    fn a_garbage_slot_file_is_refused_not_overwritten() {
        let dirp = tmp("garbage");
        let dir = LeaseDir::open(&dirp).unwrap();
        std::fs::write(dir.slot_path(0, 9), b"\x00\x01 not a lease").unwrap();
        let e = dir.acquire(0, 9, "workerId").unwrap_err();
        assert_eq!(e.code(), Code::LeaseCorrupt);
        assert_eq!(std::fs::read(dir.slot_path(0, 9)).unwrap(), b"\x00\x01 not a lease");
    }
}
