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
/// lease (filling it in), else the configured slot, which fails with `ERR_SNOWID_WORKER_ID_IN_USE` when another
/// live process holds it.
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
        let lease = dir.acquire_auto(dc, slots, &usable)?;
        config.worker_id.value = lease.worker_id();
        lease
    } else {
        let what = format!("workerId (from {})", config.worker_id.source.as_str());
        match dir.acquire(dc, config.worker_id.value, &what) {
            Ok(lease) => lease,
            // SNOWID_WORKER_ID_IF_TAKEN=next (or `workerIdIfTaken: 'next'`): the automatic lease from that slot on.
            Err(e) if e.code() == Code::WorkerIdInUse && IfTaken::moves_on(config.worker_id_if_taken, config.worker_id.source) => {
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
pub fn open(config: &Config, lease: Option<Arc<Lease>>, clock: &dyn Clock) -> Result<SharedState> {
    let s = config.settings();
    let clock_back = config.clock_back.value;
    shared_state(&s.layout, s.datacenter_id, s.worker_id, clock_back, || match lease {
        Some(lease) => {
            let earlier = lease.previous().marks.clone();
            State::resume(&s, clock_back, earlier, lease, clock)
        }
        None => Ok(State::new(clock_back)),
    })
}
