//! From a resolved configuration to a running generator: the identity is refused where replicas would share it
//! ([`check`]), the host lease the configuration calls for is taken ([`bind_worker`]), and the identity's shared
//! state is resumed past the marks the slot's earlier holders left ([`state`]).

mod replicas;
mod spaces;

use std::sync::{Arc, Weak};

use super::config::{Config, IfTaken, Source, Sourced};
use super::error::{Code, Result};
use super::fence::{Fence, Stop};
use super::generator::{Generator, SharedState, State};
use super::layout::max_value;
use super::lease::space::Space;
use super::lease::{Lease, LeaseDir, Record, Sharing};
use super::registry::shared_state;
use super::time::{Clock, SystemClock};

pub use replicas::{check, environment};
pub use spaces::IdSpace;

/// The lease directory `config` names: the default one is shared by every user of the host, one set by
/// `SNOWID_LEASE_DIR` or `leaseDir` is the user's own. Its slots are claimed in the id space of `config`'s layout
/// and lease namespace, whatever the directory (see the host lease's backends).
pub fn lease_dir(config: &Config) -> Result<LeaseDir> {
    let sharing = if config.lease_dir.source == Source::Default { Sharing::Shared } else { Sharing::Private };
    let space = Space::new(&config.layout, config.lease_namespace.value.as_deref());
    LeaseDir::open(&config.lease_dir.value, sharing, space)
}

/// Takes the slot's lease when leases are on: this process's automatic slot when the worker id comes from the
/// lease (filling it in), within the configured datacenter id, or with none configured among every datacenter id
/// of the layout (filling that in too: datacenterId 0's worker ids first, then 1's, and so on); else the configured
/// slot, which fails with `ERR_SNOWID_WORKER_ID_IN_USE` when another live process holds it.
///
/// An automatic lease skips a slot whose marks the generator could not start past ([`State::usable`]). A slot this
/// process leased first in another id space is refused with `ERR_SNOWID_ID_SPACE_CHANGED` (see [`spaces`]).
pub fn bind_worker(config: &mut Config) -> Result<Option<Arc<Lease>>> {
    if !config.lease.value {
        return Ok(None);
    }
    let dir = lease_dir(config)?;
    let space = IdSpace::of(config);
    let mut leased = spaces::lock();
    let dc = config.datacenter_id.value;
    let settings = config.settings();
    let clock_back = config.clock_back.value;
    let now = SystemClock.now_ms();
    let usable = |r: &Record| State::usable(&settings, clock_back, &r.marks, now);
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
        match dir.acquire(dc, config.worker_id.value, &what, way_out(config)) {
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
    spaces::bind(&mut leased, &lease, &space)?;
    Ok(Some(lease))
}

/// What to do about a configured worker id that another live process holds, for where it came from: the
/// setting that moves on (the variable covers a worker id from the environment, the option covers both: see
/// [`IfTaken::moves_on`]), or, for a StatefulSet ordinal, which is the pod's own and never moves on, what else works.
fn way_out(config: &Config) -> &'static str {
    match (config.worker_id.source, config.worker_id_if_taken.source) {
        (Source::StatefulSet, _) => {
            "a StatefulSet ordinal is the pod's own and never moves on: run one snowid process per pod, give each \
             process of the pod a datacenter id of its own (SNOWID_DATACENTER_ID), or take worker ids from a store \
             (snowid/redis, snowid/postgres or snowid/mysql)"
        }
        (Source::Env, source) if source != Source::Option => "SNOWID_WORKER_ID_IF_TAKEN=next moves on to a free one",
        (Source::Env | Source::Option, _) => "workerIdIfTaken: 'next' moves on to a free one",
        (Source::Lease | Source::Default, _) => "",
    }
}

/// The shared state for `config`'s identity, resumed from the lease's marks the first time it is made.
///
/// No fixed wait: no other live process can hold the slot (its claims are this process's), so only the marks
/// earlier holders left can hold the first id back, and only while the clock is behind them (within `maxWaitMs`).
///
/// The lease guards the state from then on: it stops it at once should it find its slot taken.
pub fn state(config: &Config, lease: Option<Arc<Lease>>, clock: &dyn Clock) -> Result<SharedState> {
    let s = config.settings();
    let clock_back = config.clock_back.value;
    let state = shared_state(&s.layout, s.datacenter_id, s.worker_id, clock_back, || match &lease {
        Some(lease) => {
            let earlier = lease.previous().marks.clone();
            State::resume(&s, clock_back, earlier, Arc::clone(lease) as Arc<dyn Fence>, clock)
        }
        None => Ok(State::new(clock_back)),
    })?;
    if let Some(lease) = lease {
        lease.guard(Arc::downgrade(&state) as Weak<dyn Stop>);
    }
    Ok(state)
}

/// `config`'s generator: the one path every generator's first id takes. An identity no one chose is refused first
/// where replicas are the norm ([`check`]); then the lease `config` calls for is taken (filling in an automatic
/// worker id). Returns the generator, and the warning to give if the identity went unchosen in a plain container.
pub fn generator(config: &mut Config) -> Result<(Generator<SystemClock>, Option<String>)> {
    let warning = check(config)?;
    let lease = bind_worker(config)?;
    if let Some(lease) = &lease {
        spaces::issue(lease, config.layout.epoch())?;
    }
    let state = state(config, lease, &SystemClock)?;
    Ok((Generator::new(config.settings(), state, SystemClock)?, warning))
}

// The tests lock slot files as other processes would: they need the Unix backend.
#[cfg(all(test, unix))]
mod tests;
