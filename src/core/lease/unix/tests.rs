//! The host lease on Unix, with real files, directories, claims and other processes.

use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::{Arc, Weak};

use super::super::backend::{Attempt, Holder, Sharing};
use super::super::record::{read_file, Record, MAX_MARKS};
use super::super::repair::REPAIR_EVERY_MS;
use super::super::slots::MAX_HELD;
use super::super::space::Space;
use super::super::LeaseDir;
use super::claim::{inode_name, Claim};
use super::listing::FlockHolder;
use crate::core::error::{quote_path, Code};
use crate::core::fence::{Fence, Stop};
use crate::core::layout::{Layout, Widths, DEFAULT_EPOCH};
use crate::core::testing::TempDir;
use crate::core::time::{Clock, SystemClock};

/// The test's own id space (a namespace named after its directory), so that tests running at once, and other
/// processes on the host, do not meet each other's slots.
fn space(t: &TempDir) -> Space {
    Space::new(&default_layout(), Some(&t.namespace()))
}

fn default_layout() -> Layout {
    Layout::new(Widths::default(), DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap()
}

fn private(t: &TempDir) -> LeaseDir {
    LeaseDir::open(&t.0, Sharing::Private, space(t)).unwrap()
}

const ANY: &dyn Fn(&Record) -> bool = &|_| true;

#[test]
fn a_slot_is_held_once_and_marks_persist() {
    let t = TempDir::new("slots");
    let dir = private(&t);
    let a = dir.acquire(1, 2, "workerId", "").unwrap();
    let again = dir.acquire(1, 2, "workerId", "").unwrap();
    assert!(Arc::ptr_eq(&a, &again), "one lease per slot per process");
    // Another open file description (as another process would have) cannot take it.
    assert!(matches!(dir.attempt(1, 2).unwrap(), Attempt::Held(Holder::Here(Some(pid))) if pid == std::process::id()));
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
    let explicit = dir.acquire(0, 0, "workerId", "").unwrap();
    let auto = dir.acquire_auto(0..=0, 4, ANY).unwrap();
    assert_eq!((explicit.worker_id(), auto.worker_id()), (0, 1));
    assert_eq!(dir.acquire_auto(0..=0, 4, ANY).unwrap().worker_id(), 1, "the process keeps its automatic slot");
    let me = std::process::id();
    assert_eq!(dir.recorded(0..=0).unwrap(), vec![(0, 0, me), (0, 1, me)]);
    assert_eq!(dir.recorded(1..=1).unwrap(), vec![]);
    let t2 = TempDir::new("auto2");
    let dir2 = private(&t2);
    for w in 0..2 {
        dir2.acquire(5, w, "workerId", "").unwrap();
    }
    assert_eq!(dir2.acquire_auto(5..=5, 2, ANY).unwrap_err().code(), Code::NoFreeWorkerId);
}

#[test]
fn among_datacenter_ids_it_fills_datacenter_0_then_1_and_skips_what_it_cannot_use() {
    let t = TempDir::new("dcs");
    let dir = private(&t);
    for w in 0..4 {
        dir.acquire(0, w, "workerId", "").unwrap();
    }
    // (1, 0) reserved far ahead by an earlier holder: `usable` refuses it, so it is skipped, its marks kept.
    let far = SystemClock.now_ms() + 3_600_000;
    std::fs::write(dir.slot_path(1, 0), Record { seq: 3, pid: 1, marks: vec![(0, far)] }.encode().unwrap()).unwrap();
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
        dir.acquire(0, w, "workerId", "").unwrap();
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
    assert!(dir.recorded(1..=1).unwrap().is_empty(), "nothing was taken in datacenterId 1");
    // Among both, it moves on to datacenterId 1; once that is full too, the message counts every slot.
    let t2 = TempDir::new("dcs-full");
    let dir2 = private(&t2);
    for w in 0..2 {
        dir2.acquire(0, w, "workerId", "").unwrap();
    }
    let auto = dir2.acquire_auto(0..=1, 2, ANY).unwrap();
    assert_eq!((auto.datacenter_id(), auto.worker_id()), (1, 0));
    dir2.acquire(1, 1, "workerId", "").unwrap();
    let t3 = TempDir::new("dcs-full-2");
    let dir3 = private(&t3);
    for (dc, w) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        dir3.acquire(dc, w, "workerId", "").unwrap();
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
    let e = LeaseDir::open(&file, Sharing::Private, space(&t)).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::LeaseDir);
    assert!(e.message().starts_with(&format!("lease directory {}", quote_path(&file))), "{e}");
    let e = LeaseDir::open(&file.join("sub"), Sharing::Private, space(&t)).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::LeaseDir);
}

#[test]
fn a_garbage_slot_file_is_refused_not_overwritten() {
    let t = TempDir::new("garbage");
    let dir = private(&t);
    std::fs::write(dir.slot_path(0, 9), b"\x00\x01 not a lease").unwrap();
    let e = dir.acquire(0, 9, "workerId", "").unwrap_err();
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
        let lease = dir.acquire(bits, 0, "workerId", "").unwrap();
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
    let lease = dir.acquire(7, 1, "workerId", "").unwrap();
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
    let dir = LeaseDir::open(&path, Sharing::Private, space(&t)).unwrap();
    let lease = dir.acquire(4, 4, "workerId", "").unwrap();
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
    let lease = dir.acquire(7, 2, "workerId", "").unwrap();
    lease.reserve(0, 5_000, 1_000).unwrap();
    // Marks ahead of the clock: another holder's ids may reach there.
    let ahead = Record { seq: 3, pid: 1, marks: vec![(1, 9_000)] }.encode().unwrap();
    std::fs::write(t.join("ahead"), ahead).unwrap();
    std::fs::rename(t.join("ahead"), lease.path()).unwrap();
    let e = lease.reserve(0, 6_000, 1_000).unwrap_err();
    assert_eq!(e.code(), Code::LeaseLost);
    assert!(e.message().contains("with marks ahead of the clock; the record there names pid 1 as its holder"), "{e}");
    // For good: the file gone again, the holder still cannot be sure which ids the other one issued.
    std::fs::remove_file(lease.path()).unwrap();
    assert_eq!(lease.reserve(0, 6_000, 1_000).unwrap_err(), e);
    // Locked by another open file (as a process in another network namespace would hold it).
    let lease = dir.acquire(7, 3, "workerId", "").unwrap();
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
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
    assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
}

#[test]
#[cfg(target_os = "linux")]
fn a_directory_replaced_under_a_holder_stops_its_generator_within_a_repair_period() {
    use crate::core::generator::{ClockBackPolicy, Generator, Shared, State};
    use crate::core::layout::Widths;
    use crate::core::testing::settings;
    let t = TempDir::new("replaced");
    std::fs::create_dir_all(&t.0).unwrap();
    let path = t.join("lease");
    let dir = LeaseDir::open(&path, Sharing::Private, space(&t)).unwrap();
    let s = settings(Widths::default(), ClockBackPolicy::Bits);
    let lease = dir.acquire(s.datacenter_id, s.worker_id, "workerId", "").unwrap();
    let state = Shared::new(State::resume(&s, 0, Vec::new(), lease.clone(), &SystemClock).unwrap(), &s.layout);
    lease.guard(Arc::downgrade(&state) as Weak<dyn Stop>);
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
    while lease.lost_error().is_none() && changed.elapsed().as_secs() < 2 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let found = changed.elapsed().as_millis() as u64;
    assert!(
        found < crate::core::generator::sequencer::MARK_WINDOW_MS,
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
    let name = inode_name(new_dir.dev(), new_dir.ino(), 1, 3);
    assert!(Claim::take(&name).unwrap().is_some(), "the holder left the new directory's claim free");
}

#[test]
fn a_moved_or_deleted_directory_is_followed_and_the_slot_kept() {
    let t = TempDir::new("moved");
    std::fs::create_dir_all(&t.0).unwrap();
    let path = t.join("lease");
    let dir = LeaseDir::open(&path, Sharing::Private, space(&t)).unwrap();
    let lease = dir.acquire(3, 4, "workerId", "").unwrap();
    lease.reserve(0, 5_000, 1_000).unwrap();
    std::fs::rename(&path, t.join("lease.old")).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A newcomer at the path finds a fresh directory, and still cannot take the slot.
    let newcomer = LeaseDir::open(&path, Sharing::Private, space(&t)).unwrap();
    assert!(matches!(newcomer.attempt(3, 4).unwrap(), Attempt::Held(_)));
    // Nor through the old directory's new name.
    let old = LeaseDir::open(&t.join("lease.old"), Sharing::Private, space(&t)).unwrap();
    assert!(matches!(old.attempt(3, 4).unwrap(), Attempt::Held(_)));
    lease.reserve(0, 6_000, 1_000).unwrap();
    assert_eq!(marks_at(&path.join("dc3-worker4.lease")), vec![(0, 6_000)], "the holder writes where newcomers look");
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
    dir.acquire(2, 0, "workerId", "").unwrap();
    // A record naming this process on a slot it does not hold (a stale file, or a forged one).
    std::fs::write(dir.slot_path(2, 1), Record { seq: 1, pid: me, marks: vec![] }.encode().unwrap()).unwrap();
    assert_eq!(dir.recorded(2..=2).unwrap(), vec![(2, 0, me)]);
    // Over several datacenter ids at once, in order; a file whose name spells the numbers otherwise is no slot's.
    dir.acquire(0, 3, "workerId", "").unwrap();
    dir.acquire(3, 1, "workerId", "").unwrap();
    std::fs::hard_link(dir.slot_path(3, 1), t.join("dc3-worker01.lease")).unwrap();
    assert_eq!(dir.recorded(0..=3).unwrap(), vec![(0, 3, me), (2, 0, me), (3, 1, me)]);
    assert_eq!(dir.recorded(1..=2).unwrap(), vec![(2, 0, me)]);
}

#[test]
fn a_held_slot_is_listed_while_other_locks_come_and_go() {
    let t = TempDir::new("churn");
    let dir = private(&t);
    let me = std::process::id();
    // Slots held all along, among locks that other threads take and drop as fast as they can (as other
    // processes on a busy host do): /proc/locks changes between the reads that list it.
    for w in 0..4 {
        dir.acquire(5, w, "workerId", "").unwrap();
    }
    let held: Vec<(u32, u32, u32)> = (0..4).map(|w| (5, w, me)).collect();
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
        if dir.recorded(5..=5).unwrap() != held {
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
    dir.acquire(1, 0, "workerId", "").unwrap();
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
        .args(["--exact", "core::lease::unix::tests::holds_a_slot_for_another_test", "--nocapture", "--test-threads=1"])
        .env("LEASE_TEST_HOLDER", format!("{}:{namespace}", theirs.0.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(out.by_ref().map_while(|l| l.ok()).any(|l| l == "snowid-test-held"), "the other process took the slot");
    let dir = LeaseDir::open(&mine.0, Sharing::Private, space).unwrap();
    assert!(matches!(dir.attempt(1, 0).unwrap(), Attempt::Held(Holder::InSpace)));
    let e = dir.acquire(1, 0, "workerId", "").map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::WorkerIdInUse);
    assert!(e.message().contains("held by another process of the same id space on this host"), "{e}");
    assert_eq!(dir.acquire_auto(1..=1, 4, ANY).unwrap().worker_id(), 1, "the automatic lease moves on");
    // Another namespace, or other widths, is another set of slots.
    let other = |space| {
        matches!(LeaseDir::open(&mine.0, Sharing::Private, space).unwrap().attempt(1, 0).unwrap(), Attempt::Taken(_))
    };
    assert!(other(Space::new(&default_layout(), Some(&format!("{namespace}-2")))));
    let narrower = Layout::new(Widths { sequence: 11, ..Widths::default() }, DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
    assert!(other(Space::new(&narrower, Some(&namespace))));
    // Another epoch is not: its ids are numbers of the same kind.
    let later = Layout::new(Widths::default(), DEFAULT_EPOCH + 1_000, DEFAULT_EPOCH + 2_000).unwrap();
    let at_later = LeaseDir::open(&mine.0, Sharing::Private, Space::new(&later, Some(&namespace))).unwrap();
    assert!(matches!(at_later.attempt(1, 0).unwrap(), Attempt::Held(Holder::InSpace)));
    // A second lease of a slot this process holds, in another directory, shares its claim.
    let third = TempDir::new("space-third");
    let again = LeaseDir::open(&third.0, Sharing::Private, space).unwrap();
    assert_eq!(again.acquire(1, 1, "workerId", "").unwrap().worker_id(), 1);
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
