//! The host lease on Unix, with real files, directories, claims and other processes.

use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::{Arc, Weak};

use super::super::backend::{Attempt, Sharing};
use super::super::record::{read_file, Record};
use super::super::repair::REPAIR_EVERY_MS;
use super::super::tests::{marks_at, private, space};
use super::super::LeaseDir;
use super::claim::{inode_name, Claim};
use super::listing::FlockHolder;
use crate::core::error::Code;
use crate::core::fence::{Fence, Stop};
use crate::core::testing::TempDir;
use crate::core::time::{Clock, SystemClock};

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
    // The repair thread puts marks back only while they reach past the clock: 2 s, so that they still do when the
    // directory is removed, on a machine busy enough to leave this thread off the cores for a while.
    let now = SystemClock.now_ms();
    let until = now + 2_000;
    lease.reserve(0, until, now).unwrap();
    let file = path.join("dc4-worker4.lease");
    // Removed at once (moved away, then deleted): remove_dir_all unlinks the file, then the directory, and the repair
    // thread may put the file back in between.
    let removed = t.join("lease.removed");
    std::fs::rename(&path, &removed).unwrap();
    std::fs::remove_dir_all(&removed).unwrap();
    // No id is issued: the repair thread alone puts the directory and the marks back.
    let back = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(REPAIR_EVERY_MS));
        std::fs::read(&file).ok().and_then(|b| read_file(&b, &file).ok().flatten()).is_some()
    });
    assert!(back, "marks back within 2 s");
    assert_eq!(marks_at(&file), vec![(0, until)]);
    // Once the marks are past, nothing is put back: a removed directory stays removed.
    std::thread::sleep(std::time::Duration::from_millis((until + 100).saturating_sub(SystemClock.now_ms())));
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
    let ahead = Record { seq: 3, pid: 1, marks: vec![(1, 9_000)], ..Record::default() }.encode().unwrap();
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

/// A [`Stop`] that keeps the error it was stopped with.
#[cfg(target_os = "linux")]
#[derive(Default)]
struct StoppedWith(std::sync::OnceLock<crate::core::error::Error>);

#[cfg(target_os = "linux")]
impl Stop for StoppedWith {
    fn stop(&self, why: crate::core::error::Error) {
        let _ = self.0.set(why);
    }
}

#[test]
#[cfg(target_os = "linux")]
fn a_directory_replaced_under_a_holder_stops_its_generator_with_no_id_asked() {
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
    // Guarded after the generator's state, so stopped after it: once it has been, the generator has been too. (The
    // lease records its loss a moment before it stops what it guards, so its loss alone says nothing of them.)
    let after = Arc::new(StoppedWith::default());
    lease.guard(Arc::downgrade(&after) as Weak<dyn Stop>);
    let g = Generator::new(s, state, SystemClock).unwrap();
    g.next_id().unwrap();
    assert_eq!(g.fence_lost(), Some(None), "a lease guards the generator, and holds");
    // The repair thread looks at a slot only while its record's marks reach past the clock (an idle holder makes no
    // wake-ups), and the first id's mark reaches MARK_WINDOW_MS (100 ms) ahead: on a busy machine, a thread left off
    // the cores that long finds the mark past, and the slot rightly no longer watched. A mark a minute ahead (as a
    // lead or a clock step back leaves) keeps it watched for the whole test.
    let now = SystemClock.now_ms();
    lease.reserve(0, now + 60_000, now).unwrap();
    // Another directory, whose slot file a process in another network namespace (which the claims do not reach)
    // holds: locked by another open file, with its record. It takes the configured path's place at once.
    let other = t.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
    let theirs = other.join("dc1-worker3.lease");
    std::fs::write(&theirs, Record { seq: 1, pid: 4242, ..Record::default() }.encode().unwrap()).unwrap();
    let locked = File::open(&theirs).unwrap();
    locked.try_lock().unwrap();
    let new_dir = std::fs::metadata(&other).unwrap();
    exchange(&path, &other);
    let changed = std::time::Instant::now();
    // No id is asked for: the repair thread alone finds the slot lost (here, within a repair period or two of the
    // swap; the wait is long for a machine busy with other work, and well within the marks' reach).
    while after.0.get().is_none() && changed.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let found = changed.elapsed().as_millis();
    assert!(
        after.0.get().is_some(),
        "not found lost in {found} ms with no id asked, while the marks reached past the clock"
    );
    assert_eq!(lease.lost().as_ref(), after.0.get(), "the lease stops what it guards with the loss it records");
    // The generator was stopped: the next id is refused, and no mark is written, whether or not the first id's mark
    // still covers the clock.
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
    assert_eq!(g.fence_lost(), Some(Some(e.clone())), "the generator's fence reports the loss");
    assert_eq!(lease.reserve(0, u64::MAX, 0).unwrap_err(), e, "and at every mark write");
    // The new directory's claim was not kept: had it been, the holder's own claim would later have been blamed
    // on "another process".
    let name = space(&t).scoped(inode_name(new_dir.dev(), new_dir.ino(), 1, 3));
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
    // A held slot's file linked under a name that spells its numbers otherwise: locked, but no slot's.
    let t = TempDir::new("recorded-link");
    let dir = private(&t);
    dir.acquire(3, 1, "workerId", "").unwrap();
    std::fs::hard_link(dir.slot_path(3, 1), t.join("dc3-worker01.lease")).unwrap();
    assert_eq!(dir.recorded(0..=3).unwrap(), vec![(3, 1, std::process::id())]);
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

#[test]
fn the_default_directory_is_used_only_when_root_or_this_user_owns_it() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // Making a directory another user owns needs root.
    }
    let t = TempDir::new("owner");
    std::fs::create_dir_all(&t.0).unwrap();
    let path = t.join("snowid");
    std::fs::create_dir(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    // Made first by another user: refused as the default directory, naming the owner and the way out.
    let e = LeaseDir::open(&path, Sharing::Shared, space(&t)).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::LeaseDir);
    assert!(e.message().contains("found that it belongs to uid 65534"), "{e}");
    assert!(e.message().contains("neither root nor this process's user (uid 0)"), "{e}");
    assert!(e.message().contains(&format!("Have root remove it, or make it before any user does (systemd-tmpfiles: `d {} 1777 root root -`), or use a directory of this user's. Set SNOWID_LEASE_DIR to another", path.display())), "{e}");
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0, "nothing made in it");
    // Root's: used.
    std::os::unix::fs::chown(&path, Some(0), Some(0)).unwrap();
    assert!(LeaseDir::open(&path, Sharing::Shared, space(&t)).is_ok());
}

#[test]
fn entries_planted_in_slots_places_are_skipped_by_the_automatic_lease_and_refused_when_configured() {
    let t = TempDir::new("planted");
    let dir = private(&t);
    std::fs::create_dir(dir.slot_path(0, 0)).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(dir.slot_path(0, 1)).unwrap();
    let fifo = CString::new(dir.slot_path(0, 2).as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::os::unix::fs::symlink(t.join("elsewhere"), dir.slot_path(0, 3)).unwrap();
    let planted = [(0, "a directory"), (1, "a socket"), (2, "a FIFO"), (3, "a symbolic link")];
    for (worker, found) in planted {
        let e = dir.acquire(0, worker, "workerId", "").map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::LeaseCorrupt, "{e}");
        assert!(e.message().contains(&format!("expected a regular file, found {found}")), "{e}");
        assert!(e.message().ends_with("it is left as found"), "{e}");
    }
    // The automatic lease takes the next slot, and leaves each entry as found.
    assert_eq!(dir.acquire_auto(0..=0, 8, super::super::tests::ANY).unwrap().worker_id(), 4);
    assert!(std::fs::symlink_metadata(dir.slot_path(0, 0)).unwrap().is_dir());
    assert!(std::fs::symlink_metadata(dir.slot_path(0, 1)).unwrap().file_type().is_socket());
    assert!(std::fs::symlink_metadata(dir.slot_path(0, 2)).unwrap().file_type().is_fifo());
    assert!(std::fs::symlink_metadata(dir.slot_path(0, 3)).unwrap().file_type().is_symlink());
    assert!(!t.join("elsewhere").exists(), "nothing made through the link");
}
