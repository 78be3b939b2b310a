//! The host lease on Windows, with real files, directories, claims and other processes.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::super::backend::{Attempt, Holder, Sharing};
use super::super::record::Record;
use super::super::space::Space;
use super::super::tests::{default_layout, marks_at, private, space, ANY};
use super::super::LeaseDir;
use super::claim::{id_name, Claim};
use super::dir::LOCK_BYTE;
use super::sys::{self, try_lock_byte};
use crate::core::error::Code;
use crate::core::fence::Fence;
use crate::core::testing::TempDir;
use crate::core::time::{Clock, SystemClock};

#[test]
fn a_held_file_and_its_directory_can_be_neither_deleted_nor_renamed() {
    let t = TempDir::new("held");
    let dir = private(&t);
    let lease = dir.acquire(7, 1, "workerId", "").unwrap();
    lease.reserve(0, 5_000, 1_000).unwrap();
    assert!(std::fs::remove_file(lease.path()).is_err(), "the file cannot be deleted");
    assert!(std::fs::rename(lease.path(), t.join("moved")).is_err(), "nor renamed");
    std::fs::write(t.join("other"), b"").unwrap();
    assert!(std::fs::rename(t.join("other"), lease.path()).is_err(), "nor replaced");
    let away = t.0.with_file_name(format!("{}-away", t.namespace()));
    assert!(std::fs::rename(&t.0, &away).is_err(), "and its directory cannot be renamed");
    assert!(std::fs::remove_dir_all(&t.0).is_err(), "nor removed");
    assert_eq!(marks_at(lease.path()), vec![(0, 5_000)]);
    // Another handle of this process, as a newcomer would have, cannot take the slot.
    let newcomer = private(&t);
    assert!(
        matches!(newcomer.attempt(7, 1).unwrap(), Attempt::Held(Holder::Here(Some(pid))) if pid == std::process::id())
    );
}

#[test]
fn the_lock_is_one_byte_past_the_records_so_readers_never_wait() {
    let t = TempDir::new("lock");
    let dir = private(&t);
    let lease = dir.acquire(7, 2, "workerId", "").unwrap();
    lease.reserve(0, 5_000, 1_000).unwrap();
    // Windows' locks are mandatory: a lock on the records would refuse this read.
    assert_eq!(marks_at(lease.path()), vec![(0, 5_000)]);
    let other = sys::open_held(lease.path(), true).unwrap();
    assert!(!try_lock_byte(&other, LOCK_BYTE).unwrap(), "another handle of this process cannot lock it");
    assert!(try_lock_byte(&other, LOCK_BYTE - 1).unwrap(), "the byte before it, in the records, is free");
    // A file locked by a handle this lease did not make is held too, and its record names the holder.
    std::fs::write(dir.slot_path(7, 3), Record { seq: 1, pid: 4242, ..Record::default() }.encode().unwrap()).unwrap();
    let locked = sys::open_held(&dir.slot_path(7, 3), true).unwrap();
    assert!(try_lock_byte(&locked, LOCK_BYTE).unwrap());
    assert!(matches!(dir.attempt(7, 3).unwrap(), Attempt::Held(Holder::Here(Some(4242)))));
    drop(locked);
    assert!(matches!(dir.attempt(7, 3).unwrap(), Attempt::Taken(_)), "free once that handle is closed");
}

/// Makes a directory link at `link` to `target`: whether there is one now. Making one needs a privilege (or
/// Windows' developer mode), and Wine 8 reports one made where none is.
fn made_link(target: &Path, link: &Path) -> bool {
    let _ = std::os::windows::fs::symlink_dir(target, link);
    std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn special_files_and_links_are_refused_and_left_as_found() {
    let t = TempDir::new("special");
    let dir = private(&t);
    std::fs::create_dir(dir.slot_path(0, 4)).unwrap();
    let e = dir.acquire(0, 4, "workerId", "").unwrap_err();
    assert_eq!(e.code(), Code::LeaseCorrupt);
    assert!(e.message().contains("expected a regular file, found a directory"), "{e}");
    std::fs::write(dir.slot_path(0, 5), vec![b' '; 4096]).unwrap();
    let e = dir.acquire(0, 5, "workerId", "").unwrap_err();
    assert_eq!(e.code(), Code::LeaseCorrupt);
    assert!(e.message().contains("expected at most 2048 bytes (two records), found 4096"), "{e}");
    assert_eq!(std::fs::metadata(dir.slot_path(0, 5)).unwrap().len(), 4096, "left as found");
    // The automatic lease skips them.
    assert_eq!(dir.acquire_auto(0..=0, 8, ANY).unwrap().worker_id(), 0);
    // A link as the lease directory is refused, whatever it points to (where links can be made).
    let target = t.join("target");
    std::fs::create_dir(&target).unwrap();
    if made_link(&target, &t.join("link")) {
        let e = LeaseDir::open(&t.join("link"), Sharing::Private, space(&t)).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::LeaseDir);
        assert!(e.message().contains("a symbolic link or junction (snowid does not follow links)"), "{e}");
    }
}

#[test]
fn the_listing_looks_at_a_claim_without_keeping_it() {
    // The slot stays this process's, and free slots stay free.
    let t2 = TempDir::new("recorded-2");
    let other = private(&t2);
    std::fs::write(other.slot_path(2, 1), Record { seq: 1, pid: 7, ..Record::default() }.encode().unwrap()).unwrap();
    assert_eq!(other.recorded(2..=2).unwrap(), vec![]);
    assert!(matches!(other.attempt(2, 1).unwrap(), Attempt::Taken(_)));
}

/// The child half of the tests below: with `LEASE_TEST_AUTO` set to `<dir>|<namespace>`, takes the automatic slot of
/// datacenterId 1 there, reserves ids 1.5 s ahead of the clock, prints the slot and its mark, and holds it until its
/// stdin closes (or it is killed). Else nothing.
#[test]
fn holds_an_automatic_slot_for_another_test() {
    let Some(spec) = std::env::var("LEASE_TEST_AUTO").ok() else { return };
    let (path, namespace) = spec.rsplit_once('|').unwrap();
    let dir =
        LeaseDir::open(Path::new(path), Sharing::Private, Space::new(&default_layout(), Some(namespace))).unwrap();
    let lease = dir.acquire_auto(1..=1, 4, ANY).unwrap();
    let mark = SystemClock.now_ms() + 1_500;
    lease.reserve(0, mark, SystemClock.now_ms()).unwrap();
    // On a line of its own: the test harness has written the test's name without ending its line.
    println!("\nsnowid-test-held {} {mark}", lease.worker_id());
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new()).unwrap();
}

/// A process holding the automatic slot of datacenterId 1 in `t`, its worker id and its mark.
struct Held {
    child: Child,
    out: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    worker: u32,
    mark: u64,
}

impl Held {
    /// Closes its stdin, so that it exits, and reads what it prints meanwhile: whether it exited with success.
    fn stop(mut self) -> bool {
        drop(self.child.stdin.take());
        self.out.for_each(drop);
        self.child.wait().unwrap().success()
    }
}

fn holder(t: &TempDir) -> Held {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "core::lease::windows::tests::holds_an_automatic_slot_for_another_test",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LEASE_TEST_AUTO", format!("{}|{}", t.0.display(), t.namespace()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = out.by_ref().map_while(|l| l.ok()).find(|l| l.starts_with("snowid-test-held ")).unwrap();
    let mut words = line.split(' ').skip(1).map(|w| w.parse::<u64>().unwrap());
    let (worker, mark) = (words.next().unwrap() as u32, words.next().unwrap());
    Held { child, out, worker, mark }
}

#[test]
fn processes_get_distinct_slots_and_a_killed_ones_is_taken_again_past_its_mark() {
    let t = TempDir::new("kill");
    std::fs::create_dir_all(&t.0).unwrap();
    let mut first = holder(&t);
    let second = holder(&t);
    assert_eq!((first.worker, second.worker), (0, 1), "two processes, two slots");
    let (pid1, pid2) = (first.child.id(), second.child.id());
    let dir = private(&t);
    assert_eq!(dir.recorded(1..=1).unwrap(), vec![(1, 0, pid1), (1, 1, pid2)]);
    assert!(matches!(dir.attempt(1, 0).unwrap(), Attempt::Held(Holder::Here(Some(pid))) if pid == pid1));
    // TerminateProcess, as kill -9 is on Windows: the slot is freed, by Windows, soon but not at once.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let killed = Instant::now();
    let taken = loop {
        match dir.attempt(1, 0).unwrap() {
            Attempt::Taken(lease) => break lease,
            _ if killed.elapsed() < Duration::from_secs(10) => std::thread::sleep(Duration::from_millis(1)),
            other => panic!("slot 0 still not free 10 s after its holder was killed: {other:?}"),
        }
    };
    // The newcomer starts from the killed holder's mark, so it never issues an id that holder may have issued.
    assert_eq!(taken.previous().marks, vec![(0, first.mark)]);
    assert_eq!(dir.recorded(1..=1).unwrap(), vec![(1, 0, std::process::id()), (1, 1, pid2)]);
    assert!(second.stop(), "the other holder ran to its end");
    assert_eq!(dir.recorded(1..=1).unwrap(), vec![(1, 0, std::process::id())]);
}

#[test]
fn another_spelling_of_the_directory_is_the_same_slot() {
    let t = TempDir::new("identity");
    let real = t.join("real");
    let dir = LeaseDir::open(&real, Sharing::Private, space(&t)).unwrap();
    dir.acquire(3, 4, "workerId", "").unwrap();
    let id = sys::file_id(&sys::open_reader(&real).unwrap()).unwrap();
    assert!(Claim::held(&id_name(id, 3, 4)).unwrap());
    assert!(!Claim::held(&id_name(id, 3, 5)).unwrap());
    // Case, separators and the \\?\ prefix are one spelling already; through a link to a parent (where this user
    // may make one), the path claim differs but the identity claim does not.
    let verbatim = std::path::PathBuf::from(format!(r"\\?\{}", real.to_string_lossy().to_lowercase()));
    let other = LeaseDir::open(&verbatim, Sharing::Private, space(&t)).unwrap();
    assert!(matches!(other.attempt(3, 4).unwrap(), Attempt::Held(_)));
    if made_link(&t.0, &t.join("alias")) {
        let aliased = LeaseDir::open(&t.join("alias").join("real"), Sharing::Private, space(&t)).unwrap();
        assert!(matches!(aliased.attempt(3, 4).unwrap(), Attempt::Held(_)));
        assert!(matches!(aliased.attempt(3, 5).unwrap(), Attempt::Taken(_)));
    }
}
