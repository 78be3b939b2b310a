//! Which slots live processes hold, read without taking any lock: the pid a slot file's record names, where that
//! process holds the file's lock (on Linux, as `/proc/locks` shows).

use std::collections::HashSet;
use std::ffi::CString;
use std::fs::File;
use std::ops::RangeInclusive;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::super::super::error::Result;
use super::super::backend::{Dir, Os, SlotHolder};
use super::super::files::{dir_error, read_records};
use super::super::record::read_file;
use super::super::space::slot_of;
use super::files::{check_slot_file, open_at};

/// Every slot of the datacenter ids `datacenters` whose file holds a valid record, sorted, without taking any lock:
/// live where the process its record names holds the file's lock (on Linux, as `/proc/locks` shows; elsewhere the
/// file's word is taken while a process has that pid). Files that cannot be read, or are not regular files of a
/// lease's size, are left out.
pub(super) fn holders<O: Os>(dir: &Dir<O>, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
    let entries = std::fs::read_dir(&dir.path).map_err(|e| dir_error(&dir.path, "listing it", &e))?;
    let locks = flock_holders();
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((datacenter, worker)) = slot_of(&name).filter(|(d, _)| datacenters.contains(d)) else {
            continue;
        };
        let path = entry.path();
        let Ok(cname) = CString::new(name.as_bytes()) else { continue };
        let Some((file, m)) = open_at(&dir.dir, &cname, libc::O_RDONLY)
            .ok()
            .and_then(|f| f.metadata().ok().map(|m| (f, m)))
            .filter(|(_, m)| check_slot_file(m, &path).is_ok())
        else {
            continue;
        };
        let record = read_records(&file).ok().and_then(|b| read_file(&b, &path).ok().flatten());
        if let Some(record) = record {
            let live = match &locks {
                Some(l) => l.contains(&FlockHolder::of(record.pid, &m)),
                None => pid_exists(record.pid),
            };
            out.push(SlotHolder { datacenter_id: datacenter, worker_id: worker, record, live });
        }
    }
    out.sort_unstable_by_key(|h| (h.datacenter_id, h.worker_id));
    Ok(out)
}

/// Whether a process has the pid `pid` (of any user): where no lock list says who holds a file, a record whose pid
/// no process has is of a holder that has gone.
fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; kill only checks that the process exists and may be signalled.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A process holding an exclusive `flock` on a file, as `/proc/locks` names them: pid, device, inode.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct FlockHolder {
    pub(super) pid: u32,
    pub(super) major: u64,
    pub(super) minor: u64,
    pub(super) ino: u64,
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
    pub(super) fn parse(line: &str) -> Option<FlockHolder> {
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
