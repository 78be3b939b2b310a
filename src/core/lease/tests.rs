//! The host lease on every platform that has one, through [`LeaseDir`], with real files, directories, claims and
//! other processes. What only one platform does is tested in its backend's tests.

use std::path::Path;
use std::sync::Arc;

use super::backend::{Attempt, Holder, Sharing};
use super::record::{read_file, Record, MAX_MARKS};
use super::slots::MAX_HELD;
use super::space::{space_name, Space};
use super::LeaseDir;
use crate::core::config::options::MAX_NAMESPACE_CHARS;
use crate::core::error::{quote_path, Code};
use crate::core::fence::Fence;
use crate::core::layout::{Layout, Widths, DEFAULT_EPOCH};
use crate::core::testing::TempDir;
use crate::core::time::{Clock, SystemClock};

/// The test's own id space (a namespace named after its directory), so that tests running at once, and other
/// processes on the host, do not meet each other's slots.
pub(super) fn space(t: &TempDir) -> Space {
    Space::new(&default_layout(), Some(&t.namespace()))
}

pub(super) fn default_layout() -> Layout {
    Layout::new(Widths::default(), DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap()
}

pub(super) fn private(t: &TempDir) -> LeaseDir {
    LeaseDir::open(&t.0, Sharing::Private, space(t)).unwrap()
}

/// The longest name of an id-space claim: the longest lease namespace, and the largest ids.
pub(super) fn longest_space_name() -> String {
    let space = Space::new(&default_layout(), Some(&"n".repeat(MAX_NAMESPACE_CHARS)));
    space_name(space, u32::MAX, u32::MAX)
}

/// An id space with a lease namespace (whose directory claims are the longest: see [`Space::scoped`]).
pub(super) fn namespaced() -> Space {
    Space::new(&default_layout(), Some(&"n".repeat(MAX_NAMESPACE_CHARS)))
}

pub(super) const ANY: &dyn Fn(&Record) -> bool = &|_| true;

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
    std::fs::write(
        dir.slot_path(1, 0),
        Record { seq: 3, pid: 1, marks: vec![(0, far)], ..Record::default() }.encode().unwrap(),
    )
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

#[test]
fn only_a_slot_a_live_process_holds_is_listed() {
    let t = TempDir::new("recorded");
    let dir = private(&t);
    let me = std::process::id();
    dir.acquire(2, 0, "workerId", "").unwrap();
    // A record naming this process on a slot it does not hold (a stale file, or a forged one).
    let forged = Record { seq: 1, pid: me, ..Record::default() }.encode().unwrap();
    std::fs::write(dir.slot_path(2, 1), &forged).unwrap();
    assert_eq!(dir.recorded(2..=2).unwrap(), vec![(2, 0, me)]);
    // Over several datacenter ids at once, in order; a file whose name spells the numbers otherwise is no slot's.
    dir.acquire(0, 3, "workerId", "").unwrap();
    dir.acquire(3, 1, "workerId", "").unwrap();
    std::fs::write(t.join("dc3-worker01.lease"), &forged).unwrap();
    assert_eq!(dir.recorded(0..=3).unwrap(), vec![(0, 3, me), (2, 0, me), (3, 1, me)]);
    assert_eq!(dir.recorded(1..=2).unwrap(), vec![(2, 0, me)]);
    // The listing of every slot with a record shows the forged one as gone, and the held one as this process's.
    let holders = dir.holders(2..=2).unwrap();
    let seen: Vec<_> = holders.iter().map(|h| (h.worker_id, h.record.pid, h.live)).collect();
    assert_eq!(seen, vec![(0, me, true), (1, me, false)]);
    let (host, command) = super::process::this_process();
    let held = holders.first().unwrap();
    assert!(!command.is_empty(), "the command line is recorded");
    assert_eq!((&held.record.host, &held.record.command), (host, command));
    let now = SystemClock.now_ms();
    assert!(held.record.since > now - 60_000 && held.record.since <= now, "since: when the slot was taken");
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

/// Another process (this test binary, as [`holds_a_slot_for_another_test`]) that holds slot (1, 0) of the default
/// layout in `namespace`, at `path`, until [`OtherHolder::exit`].
#[cfg(any(target_os = "linux", target_os = "android", windows))]
struct OtherHolder {
    child: std::process::Child,
    out: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

#[cfg(any(target_os = "linux", target_os = "android", windows))]
impl OtherHolder {
    fn start(path: &Path, namespace: &str) -> OtherHolder {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "core::lease::tests::holds_a_slot_for_another_test", "--nocapture", "--test-threads=1"])
            .env("LEASE_TEST_HOLDER", format!("{}:{namespace}", path.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(out.by_ref().map_while(|l| l.ok()).any(|l| l == "snowid-test-held"), "the other process took the slot");
        OtherHolder { child, out }
    }

    /// Ends the process (it exits once its stdin closes) and waits for it.
    fn exit(mut self) {
        drop(self.child.stdin.take());
        self.out.for_each(drop);
        assert!(self.child.wait().unwrap().success());
    }
}

// Where claims exist: Linux, Android and Windows (elsewhere only the file lock keeps a slot).
#[cfg(any(target_os = "linux", target_os = "android", windows))]
#[test]
fn one_id_space_is_one_set_of_slots_whatever_the_directory() {
    let (mine, theirs) = (TempDir::new("space-mine"), TempDir::new("space-theirs"));
    let namespace = format!("snowid-test-{}-space", std::process::id());
    let space = Space::new(&default_layout(), Some(&namespace));
    // Another process holds (1, 0) of this id space, in a directory of its own.
    let holder = OtherHolder::start(&theirs.0, &namespace);
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
    holder.exit();
    assert!(matches!(dir.attempt(1, 0).unwrap(), Attempt::Taken(_)));
}

// Where claims exist and a held directory can be replaced: Linux and Android (Windows refuses to move a directory a
// holder has open).
#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_namespace_is_its_own_set_of_slots_at_a_directory_path_too() {
    let t = TempDir::new("ns-path");
    std::fs::create_dir_all(&t.0).unwrap();
    let path = t.join("lease");
    std::fs::create_dir(&path).unwrap();
    let namespace = format!("snowid-test-{}-ns-path", std::process::id());
    // Another process of the namespace holds (1, 0) at the path.
    let holder = OtherHolder::start(&path, &namespace);
    // The directory is replaced: a new one at the same path, whose slot files nobody has locked. Its path's claim
    // still keeps the slot from the namespace's processes, and only from them (as it keeps a default directory's
    // slots from the host's processes of no namespace, and not from a test's).
    std::fs::rename(&path, t.join("lease.old")).unwrap();
    std::fs::create_dir(&path).unwrap();
    let at_path = |ns: &str| {
        let dir = LeaseDir::open(&path, Sharing::Private, Space::new(&default_layout(), Some(ns))).unwrap();
        matches!(dir.attempt(1, 0).unwrap(), Attempt::Taken(_))
    };
    assert!(!at_path(&namespace), "the namespace's own slot is held");
    assert!(at_path(&format!("{namespace}-2")), "another namespace's is not");
    holder.exit();
    assert!(at_path(&namespace), "free once its holder has exited");
}

#[test]
fn a_process_holds_a_bounded_number_of_slots() {
    assert!(LeaseDir::check_room(MAX_HELD - 1).is_ok());
    let e = LeaseDir::check_room(MAX_HELD).unwrap_err();
    assert_eq!(e.code(), Code::LeaseDir);
    assert!(e.message().contains(&format!("at most {MAX_HELD} slots")), "{e}");
}

pub(super) fn marks_at(path: &Path) -> Vec<(u32, u64)> {
    read_file(&std::fs::read(path).unwrap(), path).unwrap().unwrap().marks
}

#[test]
fn a_limit_of_the_os_refuses_the_identity_and_names_the_limit() {
    use super::backend::{limit_of, refused};
    #[cfg(unix)]
    let (files, memory, other) = (libc::EMFILE, libc::ENOMEM, libc::EACCES);
    #[cfg(windows)]
    let (files, memory, other) = (4, 8, 5);
    let e = refused("the claim", &std::io::Error::from_raw_os_error(files));
    assert_eq!(e.code(), Code::ClaimRefused);
    assert!(e.message().starts_with("the claim: expected the OS to grant it"), "{e}");
    assert!(e.message().contains("the process's limit of open files (RLIMIT_NOFILE: raise it with `ulimit -n`"), "{e}");
    assert!(e.message().ends_with("no id is issued under an identity not proved"), "{e}");
    assert!(limit_of(&std::io::Error::from_raw_os_error(memory)).is_some_and(|l| l.contains("memory")));
    // Any other error is no limit: the lease reports it as what it is (and the copies' claim refuses it too).
    assert_eq!(limit_of(&std::io::Error::from_raw_os_error(other)), None);
    let e = refused("the claim", &std::io::Error::from_raw_os_error(other));
    assert!(e.message().contains("found it refused by an error ("), "{e}");
}
