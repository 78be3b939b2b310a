//! The identity's tests: leases taken for a configuration, states resumed past earlier marks, and generators
//! refused where replicas would share an identity.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;

use super::*;
use crate::core::config::{OptionValue, Options};
use crate::core::error::Class;
use crate::core::lease::Sharing;
use crate::core::testing::TempDir;

/// The configuration of a process with `pairs` in its environment, the lease directory `dir`, and a small
/// layout: datacenterBits 2 and workerBits 2, so 4 datacenter ids of 4 worker ids each.
fn config(dir: &Path, pairs: &[(&str, &str)]) -> Config {
    config_with(&Options::default(), dir, pairs)
}

/// As [`config`], with the options `opts`.
fn config_with(opts: &Options, dir: &Path, pairs: &[(&str, &str)]) -> Config {
    let mut vars: Vec<(String, String)> = vec![
        ("SNOWID_LEASE_DIR".into(), dir.to_string_lossy().into_owned()),
        ("SNOWID_DATACENTER_BITS".into(), "2".into()),
        ("SNOWID_WORKER_BITS".into(), "2".into()),
    ];
    // A namespace of the test's own, so that tests running at once do not meet each other's slots.
    let namespace = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    vars.push(("SNOWID_LEASE_NAMESPACE".into(), namespace));
    vars.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    // A pair overrides the defaults above.
    let env = move |name: &str| vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v));
    Config::resolve(opts, &env, SystemClock.now_ms()).unwrap()
}

/// Locks every worker id's file of `datacenter_id` in `dir` through open files of its own, as other processes
/// holding those slots would, until the files returned are dropped.
#[must_use]
fn fill(dir: &Path, datacenter_id: u32) -> Vec<File> {
    let space = Space::new(&config(dir, &[]).layout, None);
    let leases = LeaseDir::open(dir, Sharing::Private, space).unwrap();
    (0..4)
        .map(|w| {
            let file = File::create(leases.slot_path(datacenter_id, w)).unwrap();
            file.try_lock().unwrap();
            file
        })
        .collect()
}

#[test]
fn with_neither_id_configured_the_lease_takes_datacenter_1_once_datacenter_0_is_full() {
    let t = TempDir::new("auto-dc");
    let _held = fill(&t.0, 0);
    let mut c = config(&t.0, &[]);
    let lease = bind_worker(&mut c).unwrap().unwrap();
    assert_eq!((lease.datacenter_id(), lease.worker_id()), (1, 0));
    assert_eq!(c.datacenter_id, Sourced { value: 1, source: Source::Lease });
    assert_eq!(c.worker_id, Sourced { value: 0, source: Source::Lease });
    assert_eq!((c.settings().datacenter_id, c.settings().worker_id), (1, 0), "the generator runs on that slot");
}

#[test]
fn a_configured_datacenter_id_stays_put() {
    let t = TempDir::new("fixed-dc");
    let _held = fill(&t.0, 0);
    for pairs in [&[("SNOWID_DATACENTER_ID", "0")][..], &[("datacenterId", "0")][..]] {
        let e = bind_worker(&mut config(&t.0, pairs)).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::NoFreeWorkerId);
        assert!(e.message().contains("for datacenterId 0 in lease directory"), "{e}");
        assert!(e.message().contains("another datacenter id (SNOWID_DATACENTER_ID)"), "{e}");
    }
    // Elsewhere it takes its own datacenter id's lowest free worker id.
    let mut c = config(&t.0, &[("SNOWID_DATACENTER_ID", "2")]);
    bind_worker(&mut c).unwrap();
    assert_eq!((c.datacenter_id, c.worker_id.value), (Sourced { value: 2, source: Source::Env }, 0));
}

#[test]
fn a_configured_worker_id_that_moves_on_stays_in_its_datacenter_id() {
    let t = TempDir::new("next");
    let _held = fill(&t.0, 0);
    let mut c = config(&t.0, &[("SNOWID_WORKER_ID", "1"), ("SNOWID_WORKER_ID_IF_TAKEN", "next")]);
    let e = bind_worker(&mut c).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::NoFreeWorkerId);
    assert!(e.message().contains("for datacenterId 0 in lease directory"), "{e}");
    assert_eq!(c.datacenter_id.source, Source::Default);
}

#[test]
fn a_held_worker_id_names_the_way_out_that_works_for_where_it_came_from() {
    let t = TempDir::new("way-out");
    let _held = fill(&t.0, 0);
    let option = |name: &str| OptionValue::Text(name.into());
    let by_option = Options { worker_id: Some(OptionValue::Number(1.0)), ..Options::default() };
    let next_by_option = Options { worker_id_if_taken: Some(option("fail")), ..Options::default() };
    let variable = "SNOWID_WORKER_ID_IF_TAKEN=next moves on to a free one";
    let flag = "workerIdIfTaken: 'next' moves on to a free one";
    let statefulset = [("SNOWID_WORKER_ID_FROM", "statefulset"), ("HOSTNAME", "web-1")];
    for (opts, pairs, ends, source) in [
        (&Options::default(), &[("SNOWID_WORKER_ID", "1")][..], variable, "env"),
        // The variable does not cover a workerId option, nor win over an option saying 'fail'.
        (&by_option, &[("SNOWID_WORKER_ID_IF_TAKEN", "next")][..], flag, "option"),
        (&next_by_option, &[("SNOWID_WORKER_ID", "1")][..], flag, "env"),
        (
            &Options::default(),
            &statefulset[..],
            "or take worker ids from a store (snowid/redis, snowid/postgres or snowid/mysql)",
            "statefulset",
        ),
    ] {
        let e = bind_worker(&mut config_with(opts, &t.0, pairs)).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::WorkerIdInUse, "{pairs:?}");
        let m = e.message();
        assert!(
            m.starts_with(&format!("workerId (from {source}): expected a worker id no other live process holds")),
            "{m}"
        );
        assert!(m.ends_with(ends), "{m}");
    }
    // An ordinal never moves on, so nothing says it would.
    let e = bind_worker(&mut config(&t.0, &statefulset)).map(|_| ()).unwrap_err();
    assert!(!e.message().contains("'next'") && !e.message().contains("=next"), "{e}");
    assert!(e.message().contains("never moves on: run one snowid process per pod, give each process of the pod a datacenter id of its own (SNOWID_DATACENTER_ID)"), "{e}");
}

#[test]
fn with_every_slot_held_the_error_says_what_to_set() {
    let t = TempDir::new("all-held");
    let _held: Vec<Vec<File>> = (0..4).map(|dc| fill(&t.0, dc)).collect();
    let e = bind_worker(&mut config(&t.0, &[])).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::NoFreeWorkerId);
    assert!(e.message().contains("for any datacenterId from 0 to 3 in lease directory"), "{e}");
    assert!(e.message().contains("found all 16 held (4 worker ids each; 0 skipped"), "{e}");
    assert!(e.message().contains("SNOWID_WORKER_BITS=3 doubles the slots to 32"), "{e}");
}

/// Waits until every mark of a slot this process holds in `dir` has passed, and its repair thread has looked again:
/// until then it would make a removed directory again, to put the marks back.
fn marks_passed(dir: &Path) {
    let latest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|bytes| bytes.chunks(1024).filter_map(Record::decode).map(|r| r.marks).max())
        .flatten()
        .map(|(_, m)| m)
        .max()
        .unwrap_or(0);
    let wait = latest.saturating_sub(SystemClock.now_ms()) + 50;
    std::thread::sleep(std::time::Duration::from_millis(wait));
}

/// Writes a slot file for `(datacenter_id, worker_id)` in `dir` whose earlier holder left `marks`.
fn left_behind(dir: &Path, datacenter_id: u32, worker_id: u32, marks: Vec<(u32, u64)>) {
    std::fs::create_dir_all(dir).unwrap();
    let record = Record { seq: 1, pid: 1, marks, ..Record::default() }.encode().unwrap();
    std::fs::write(dir.join(format!("dc{datacenter_id}-worker{worker_id}.lease")), record).unwrap();
}

#[test]
fn an_automatic_lease_skips_a_slot_whose_marks_the_generator_could_not_start_past() {
    let t = TempDir::new("identity-unusable");
    let far = SystemClock.now_ms() + 3_600_000;
    // Every clockBack value of (0, 0) reserved an hour ahead: no generator could start there within maxWaitMs.
    left_behind(&t.0, 0, 0, (0..4).map(|c| (c, far)).collect());
    // Under 'throw', a mark ahead on the configured clockBack alone is enough, since it cannot move to another.
    left_behind(&t.0, 0, 1, vec![(0, far)]);
    let mut c = config(&t.0, &[("SNOWID_ON_CLOCK_BACK", "throw")]);
    let lease = bind_worker(&mut c).unwrap().unwrap();
    assert_eq!((lease.datacenter_id(), lease.worker_id()), (0, 2));
    // The skipped slots keep their marks, for whoever can wait them out.
    let kept = std::fs::read(t.join("dc0-worker1.lease")).unwrap();
    assert_eq!(Record::decode(&kept[..1024]).map(|r| r.marks), Some(vec![(0, far)]));
}

#[test]
fn under_bits_a_slot_with_a_free_clock_back_value_is_taken_and_its_first_id_moves_past_the_marks() {
    let t = TempDir::new("identity-resume");
    let now = SystemClock.now_ms();
    // Worker 1 of datacenterId 3, reserved 2 s ahead on clockBack 0 by an earlier holder (more than maxWaitMs).
    left_behind(&t.0, 3, 1, vec![(0, now + 2_000)]);
    let mut c = config(&t.0, &[("SNOWID_DATACENTER_ID", "3"), ("SNOWID_WORKER_ID", "1")]);
    let lease = bind_worker(&mut c).unwrap();
    assert_eq!(lease.as_ref().map(|l| l.previous().marks.clone()), Some(vec![(0, now + 2_000)]));
    let shared = state(&c, lease.clone(), &SystemClock).unwrap();
    let g = Generator::new(c.settings(), shared.clone(), SystemClock).unwrap();
    let f = c.layout.unpack(g.next_id().unwrap());
    assert_eq!((f.datacenter_id, f.worker_id, f.clock_back), (3, 1, 1), "started on the next free clockBack value");
    // Every generator of the identity shares the one state.
    assert!(Arc::ptr_eq(&shared, &state(&c, lease, &SystemClock).unwrap()));
    marks_passed(&t.0);
}

#[test]
fn with_leases_off_no_lease_is_taken() {
    let t = TempDir::new("identity-off");
    let mut c = config(&t.0, &[("SNOWID_LEASE", "off"), ("SNOWID_DATACENTER_ID", "2"), ("SNOWID_WORKER_ID", "3")]);
    assert!(bind_worker(&mut c).unwrap().is_none());
    let (g, warning) = generator(&mut c).unwrap();
    let f = c.layout.unpack(g.next_id().unwrap());
    assert_eq!((f.datacenter_id, f.worker_id), (2, 3));
    assert!(!t.0.exists(), "no lease directory was made");
    assert_eq!(warning, None);
}

#[test]
fn an_identity_no_one_chose_is_refused_before_any_lease_is_taken() {
    let t = TempDir::new("identity-k8s");
    let mut c = config(&t.0, &[("KUBERNETES_SERVICE_HOST", "10.96.0.1")]);
    let e = generator(&mut c).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), Code::IdentityRequired);
    assert!(!t.0.exists(), "no lease directory was made");
    // Chosen, it takes its lease and makes ids on that slot.
    let mut c = config(&t.0, &[("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("SNOWID_WORKER_ID", "2")]);
    let (g, warning) = generator(&mut c).unwrap();
    assert_eq!((c.layout.unpack(g.next_id().unwrap()).worker_id, warning), (2, None));
    assert!(t.join("dc0-worker2.lease").exists());
    marks_passed(&t.0);
}

#[test]
fn a_slot_is_used_only_in_the_id_space_it_was_leased_in() {
    let t = TempDir::new("identity-space");
    let mut first = config(&t.0, &[]);
    let lease = bind_worker(&mut first).unwrap().unwrap();
    assert_eq!((lease.datacenter_id(), lease.worker_id()), (0, 0));
    // The same id space is given its lease back, however it is asked for.
    assert!(Arc::ptr_eq(&bind_worker(&mut config(&t.0, &[])).unwrap().unwrap(), &lease));
    let again = bind_worker(&mut config(&t.0, &[("SNOWID_WORKER_ID", "0"), ("SNOWID_EPOCH", "2021-01-01")]));
    assert!(Arc::ptr_eq(&again.unwrap().unwrap(), &lease), "the epoch is not part of the id space");
    // Another id space over the same directory would be given that same lease, claimed in the first one only.
    for pairs in [
        &[("SNOWID_SEQUENCE_BITS", "13")][..],
        &[("SNOWID_SEQUENCE_BITS", "13"), ("SNOWID_WORKER_ID", "0")][..],
        &[("SNOWID_LEASE_NAMESPACE", "another")][..],
    ] {
        let e = bind_worker(&mut config(&t.0, pairs)).map(|_| ()).unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::IdSpaceChanged, Class::Error), "{pairs:?}");
        let m = e.message();
        assert!(m.starts_with("workerId: expected a slot leased in the id space of this generator ("), "{m}");
        assert!(m.contains("datacenterId 0 workerId 0") && m.contains("before a configure()"), "{m}");
        assert!(m.contains("datacenterBits 2, workerBits 2, clockBackBits 2, sequenceBits 12"), "{m}");
    }
    // A slot of its own, or a lease directory of its own, is leased in the new id space.
    let mut other = config(&t.0, &[("SNOWID_SEQUENCE_BITS", "13"), ("SNOWID_WORKER_ID", "1")]);
    assert_eq!(bind_worker(&mut other).unwrap().unwrap().worker_id(), 1);
    let u = TempDir::new("identity-space-own");
    assert!(bind_worker(&mut config(&u.0, &[("SNOWID_SEQUENCE_BITS", "13")])).unwrap().is_some());
    marks_passed(&t.0);
    marks_passed(&u.0);
}

#[test]
fn the_generators_of_a_slot_make_ids_with_one_epoch() {
    let t = TempDir::new("identity-epoch");
    let (g, _) = generator(&mut config(&t.0, &[])).unwrap();
    let first = g.next_id().unwrap();
    // Another generator of the identity, or of another identity of the epoch, starts on the slot.
    assert!(generator(&mut config(&t.0, &[])).is_ok());
    // Epochs 2 ms apart on one slot would make the same numbers: the later one's ids are the earlier one's of 2 ms ago.
    let later = format!("{}", config(&t.0, &[]).layout.epoch() + 2);
    let e = generator(&mut config(&t.0, &[("SNOWID_EPOCH", later.as_str())])).map(|_| ()).unwrap_err();
    assert_eq!((e.code(), e.class()), (Code::IdSpaceChanged, Class::Error));
    assert!(
        e.message().starts_with("epoch: expected the epoch this process makes ids with on datacenterId 0 workerId 0"),
        "{e}"
    );
    // Leasing the slot without making ids (config()) does not fix an epoch; a slot of its own takes any.
    let u = TempDir::new("identity-epoch-own");
    assert!(bind_worker(&mut config(&u.0, &[("SNOWID_EPOCH", later.as_str())])).is_ok());
    assert!(generator(&mut config(&u.0, &[])).is_ok());
    assert!(generator(&mut config(&t.0, &[("SNOWID_EPOCH", later.as_str()), ("SNOWID_WORKER_ID", "1")])).is_ok());
    assert!(g.next_id().unwrap() > first);
    marks_passed(&t.0);
    marks_passed(&u.0);
}
