//! From a resolved configuration to the shared state a generator runs on: takes the host lease the
//! configuration calls for, and resumes the slot past the marks its earlier holders left.

use std::sync::Arc;

use super::claim::Space;
use super::config::{Config, IfTaken, Source, Sourced};
use super::error::Code;
use super::error::Result;
use super::generator::{Clock, SharedState, State, SystemClock};
use super::layout::max_value;
use super::lease::{Lease, LeaseDir, Sharing};
use super::registry::shared_state;

/// The lease directory `config` names: the default one is shared by every user of the host, one set by
/// `SNOWID_LEASE_DIR` or `leaseDir` is the user's own. Its slots are claimed in the id space of `config`'s layout
/// and lease namespace, whatever the directory (see [`super::claim`]).
pub fn lease_dir(config: &Config) -> Result<LeaseDir> {
    let sharing = if config.lease_dir.source == Source::Default { Sharing::Shared } else { Sharing::Private };
    let space = Space::new(&config.layout, config.lease_namespace.value.as_deref());
    LeaseDir::open(&config.lease_dir.value, sharing, space)
}

/// Takes the slot's lease when leases are on: this process's automatic slot when the worker id comes from the
/// lease (filling it in), within the configured datacenter id, or with none configured among every datacenter id
/// of the layout (filling that in too: datacenterId 0's worker ids first, then 1's, and so on); else the configured
/// slot, which fails with `ERR_SNOWID_WORKER_ID_IN_USE` when another live process holds it.
pub fn bind_worker(config: &mut Config) -> Result<Option<Arc<Lease>>> {
    if !config.lease.value {
        return Ok(None);
    }
    let dir = lease_dir(config)?;
    let dc = config.datacenter_id.value;
    // A slot whose marks the generator could not start past is skipped by the automatic lease, not failed on.
    let settings = config.settings();
    let clock_back = config.clock_back.value;
    let now = SystemClock.now_ms();
    let usable = |r: &super::lease::Record| State::usable(&settings, clock_back, &r.marks, now);
    let slots = max_value(config.worker_bits.value) + 1;
    let lease = if config.worker_id.source == Source::Lease {
        let datacenters = if config.datacenter_id.source == Source::Lease {
            0..=max_value(config.datacenter_bits.value) as u32
        } else {
            dc..=dc
        };
        let lease = dir.acquire_auto(datacenters, slots, &usable)?;
        config.datacenter_id.value = lease.datacenter_id();
        config.worker_id.value = lease.worker_id();
        lease
    } else {
        let what = format!("workerId (from {})", config.worker_id.source.as_str());
        match dir.acquire(dc, config.worker_id.value, &what) {
            Ok(lease) => lease,
            // SNOWID_WORKER_ID_IF_TAKEN=next (or `workerIdIfTaken: 'next'`): the automatic lease from that slot on.
            Err(e)
                if e.code() == Code::WorkerIdInUse
                    && IfTaken::moves_on(config.worker_id_if_taken, config.worker_id.source) =>
            {
                let lease = dir.acquire_from(dc, slots, u64::from(config.worker_id.value), &usable)?;
                config.worker_id = Sourced { value: lease.worker_id(), source: Source::Lease };
                lease
            }
            Err(e) => return Err(e),
        }
    };
    Ok(Some(lease))
}

/// The shared state for `config`'s identity, resumed from the lease's marks the first time it is made.
///
/// No fixed wait: no other live process can hold the slot (its claims are this process's, see
/// [`super::claim`]), so only the marks earlier holders left can hold the first id back, and only while the clock is
/// behind them (within `maxWaitMs`).
///
/// The lease stops the state at once should it find its slot taken (see `Lease::stop_on_loss`).
pub fn open(config: &Config, lease: Option<Arc<Lease>>, clock: &dyn Clock) -> Result<SharedState> {
    let s = config.settings();
    let clock_back = config.clock_back.value;
    let state = shared_state(&s.layout, s.datacenter_id, s.worker_id, clock_back, || match &lease {
        Some(lease) => {
            let earlier = lease.previous().marks.clone();
            State::resume(&s, clock_back, earlier, Arc::clone(lease) as _, clock)
        }
        None => Ok(State::new(clock_back)),
    })?;
    if let Some(lease) = lease {
        lease.stop_on_loss(&state, &s.layout);
    }
    Ok(state)
}

// The tests lock slot files as other processes would: the host lease is Unix's (lease.rs).
#[cfg(all(test, unix))]
mod tests {
    use std::ffi::OsString;
    use std::fs::File;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::core::config::Options;
    use crate::core::lease::Sharing;

    /// A lease directory of the test's own, removed when dropped.
    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("snowid-start-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }

    /// The configuration of a process with `pairs` in its environment, the lease directory `dir`, and a small
    /// layout: datacenterBits 2 and workerBits 2, so 4 datacenter ids of 4 worker ids each.
    fn config(dir: &Path, pairs: &[(&str, &str)]) -> Config {
        let mut vars: Vec<(String, String)> = vec![
            ("SNOWID_LEASE_DIR".into(), dir.to_string_lossy().into_owned()),
            ("SNOWID_DATACENTER_BITS".into(), "2".into()),
            ("SNOWID_WORKER_BITS".into(), "2".into()),
        ];
        // A namespace of the test's own, so that tests running at once do not meet each other's slots.
        let namespace = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        vars.push(("SNOWID_LEASE_NAMESPACE".into(), namespace));
        vars.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v));
        Config::resolve(&Options::default(), &env, SystemClock.now_ms()).unwrap()
    }

    /// Locks every worker id's file of `datacenter_id` in `dir` through open files of its own, as other processes
    /// holding those slots would, until the files returned are dropped.
    #[must_use]
    fn fill(dir: &Path, datacenter_id: u32) -> Vec<File> {
        let space = crate::core::claim::Space::new(&config(dir, &[]).layout, None);
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
        let t = temp("auto-dc");
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
        let t = temp("fixed-dc");
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
        let t = temp("next");
        let _held = fill(&t.0, 0);
        let mut c = config(&t.0, &[("SNOWID_WORKER_ID", "1"), ("SNOWID_WORKER_ID_IF_TAKEN", "next")]);
        let e = bind_worker(&mut c).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::NoFreeWorkerId);
        assert!(e.message().contains("for datacenterId 0 in lease directory"), "{e}");
        assert_eq!(c.datacenter_id.source, Source::Default);
    }

    #[test]
    fn with_every_slot_held_the_error_says_what_to_set() {
        let t = temp("all-held");
        let _held: Vec<Vec<File>> = (0..4).map(|dc| fill(&t.0, dc)).collect();
        let e = bind_worker(&mut config(&t.0, &[])).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::NoFreeWorkerId);
        assert!(e.message().contains("for any datacenterId from 0 to 3 in lease directory"), "{e}");
        assert!(e.message().contains("found all 16 held (4 worker ids each; 0 skipped"), "{e}");
        assert!(e.message().contains("SNOWID_WORKER_BITS=3 doubles the slots to 32"), "{e}");
    }
}
