//! Which slot a process takes in a lease directory, on any platform: a configured one, or its automatic slot, and
//! the leases the process holds.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::super::time::{Clock, SystemClock};
use super::backend::{Attempt, Backend, Holder, Sharing, SlotHolder, Taken};
use super::holder::Lease;
use super::record::Record;
use super::repair;
use super::space::{slot_name, Space};

/// The most slots one process holds at once (one open file each), so that generators of many identities cannot
/// use up the process's file descriptors.
pub const MAX_HELD: usize = 1024;

/// The leases this process holds, by (directory, datacenterId, workerId). Kept for the life of the process.
type HeldMap = Mutex<HashMap<(PathBuf, u32, u32), Arc<Lease>>>;

fn held() -> &'static HeldMap {
    static HELD: OnceLock<HeldMap> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// The automatic slot this process took in each (directory, datacenterId): its worker id.
fn auto_slots() -> &'static Mutex<HashMap<(PathBuf, u32), u32>> {
    static AUTO: OnceLock<Mutex<HashMap<(PathBuf, u32), u32>>> = OnceLock::new();
    AUTO.get_or_init(Default::default)
}

/// For the tests: has the repair thread let go of every lease this process took in `dir` or under it, so that the
/// directory, once removed, stays removed (the leases stay held).
#[cfg(test)]
pub fn forget_under(dir: &Path) {
    let mine: Vec<*const ()> =
        held().lock().iter().filter(|(k, _)| k.0.starts_with(dir)).map(|(_, l)| Arc::as_ptr(l).cast()).collect();
    repair::unwatch(|w| mine.contains(&Arc::as_ptr(w).cast()));
}

/// Where leases live, and the leases this process holds there, over the platform's backend `B`.
pub struct LeaseDir<B: Backend> {
    backend: B,
}

impl<B: Backend> LeaseDir<B> {
    /// The lease directory at `path` (absolute), made when missing, whose slots are claimed in `space`.
    pub fn open(path: &Path, sharing: Sharing, space: Space) -> Result<Self> {
        Ok(LeaseDir { backend: B::open(path, sharing, space)? })
    }

    fn path(&self) -> &Path {
        self.backend.path()
    }

    pub fn slot_path(&self, datacenter_id: u32, worker_id: u32) -> PathBuf {
        self.path().join(slot_name(datacenter_id, worker_id))
    }

    /// Tries to take the slot; a slot taken is named as this process's at once.
    pub(super) fn attempt(&self, datacenter_id: u32, worker_id: u32) -> Result<Attempt<Box<Lease>>> {
        Ok(match self.backend.attempt(datacenter_id, worker_id)? {
            Attempt::Taken(Taken { file, previous }) => {
                let path = self.slot_path(datacenter_id, worker_id);
                let now = SystemClock.now_ms();
                Attempt::Taken(Box::new(Lease::take(path, datacenter_id, worker_id, Box::new(file), previous, now)?))
            }
            Attempt::Held(holder) => Attempt::Held(holder),
            Attempt::Foreign(who) => Attempt::Foreign(who),
        })
    }

    /// Keeps `lease`, just taken, for the life of the process, watched by the repair thread.
    fn keep(map: &mut HashMap<(PathBuf, u32, u32), Arc<Lease>>, key: (PathBuf, u32, u32), lease: Lease) -> Arc<Lease> {
        let lease = Arc::clone(map.entry(key).or_insert(Arc::new(lease)));
        repair::watch(lease.clone());
        lease
    }

    /// Refuses a new slot when the process holds `held` slots, [`MAX_HELD`] or more, already.
    pub(super) fn check_room(held: usize) -> Result<()> {
        if held >= MAX_HELD {
            return Err(Error::new(
                Code::LeaseDir,
                Class::Error,
                format!(
                    "lease: expected this process to hold at most {MAX_HELD} slots (one open file each), found it holds \
                     {} already: generators of that many (datacenterId, workerId) identities in one process. Use fewer, \
                     or lease: false for generators that need no host lease",
                    held
                ),
            ));
        }
        Ok(())
    }

    /// Takes the slot `(datacenter_id, worker_id)` for this process, or returns the lease it already holds.
    /// A slot another live process holds is `ERR_SNOWID_WORKER_ID_IN_USE`, naming that process and ending with
    /// `way_out` (what works for where the worker id came from; none when empty); so is one whose file another user
    /// owns.
    pub fn acquire(&self, datacenter_id: u32, worker_id: u32, what: &str, way_out: &str) -> Result<Arc<Lease>> {
        let mut map = held().lock();
        let key = (self.path().to_path_buf(), datacenter_id, worker_id);
        if let Some(l) = map.get(&key) {
            return Ok(Arc::clone(l));
        }
        Self::check_room(map.len())?;
        let holder = match self.attempt(datacenter_id, worker_id)? {
            Attempt::Taken(lease) => return Ok(Self::keep(&mut map, key, *lease)),
            Attempt::Held(Holder::Here(Some(pid))) if pid == std::process::id() => format!(
                "this process (pid {pid}): another copy of snowid loaded in it, one with a binary file of its own"
            ),
            Attempt::Held(Holder::Here(pid)) => pid.map_or("another process".to_string(), |p| format!("pid {p}")),
            Attempt::Held(Holder::InSpace) => {
                "another process of the same id space on this host (the layout's widths and the lease \
                namespace, whatever its epoch; its lease directory may differ)"
                    .to_string()
            }
            Attempt::Foreign(who) => format!("{who}, whose file it is"),
        };
        let way_out = if way_out.is_empty() { String::new() } else { format!("; {way_out}") };
        Err(Error::new(
            Code::WorkerIdInUse,
            Class::Error,
            format!(
                "{what}: expected a worker id no other live process holds, found datacenterId {datacenter_id} workerId \
                 {worker_id} held by {holder} (lease file {}){way_out}",
                quote_path(&self.slot_path(datacenter_id, worker_id))
            ),
        ))
    }

    /// This process's automatic slot among the datacenter ids `datacenters`: the first time, the lowest worker id
    /// below `slots` of the lowest datacenter id (datacenterId 0's worker ids, then 1's, and so on) that no process
    /// holds, whose file is this user's (or can be made), and that `usable` accepts; after that, the same slot. A slot
    /// it cannot use (another user's file, a corrupt or special file, marks too far ahead) is skipped, and left as found.
    pub fn acquire_auto(
        &self,
        datacenters: RangeInclusive<u32>,
        slots: u64,
        usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        self.choose(datacenters, slots, 0, usable)
    }

    /// As [`LeaseDir::acquire_auto`] within `datacenter_id`, trying the slots from `first` upwards, then from 0.
    pub fn acquire_from(
        &self,
        datacenter_id: u32,
        slots: u64,
        first: u64,
        usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        self.choose(datacenter_id..=datacenter_id, slots, first, usable)
    }

    /// The automatic slot: for each datacenter id of `datacenters` in turn, its worker ids from `first` upwards, then
    /// from 0. A slot this process already took automatically within `datacenters` is kept (the lowest, should there
    /// be several).
    fn choose(
        &self,
        datacenters: RangeInclusive<u32>,
        slots: u64,
        first: u64,
        usable: &dyn Fn(&Record) -> bool,
    ) -> Result<Arc<Lease>> {
        let mut auto = auto_slots().lock();
        let kept = auto
            .iter()
            .filter(|((p, d), _)| p == self.path() && datacenters.contains(d))
            .map(|((_, d), w)| (*d, *w))
            .min();
        if let Some((d, w)) = kept {
            return self.acquire(d, w, "workerId", "");
        }
        let mut map = held().lock();
        let mut skipped = 0u64;
        let first = first.min(slots);
        for dc in datacenters.clone() {
            for w in (first..slots).chain(0..first) {
                let w = w as u32;
                let key = (self.path().to_path_buf(), dc, w);
                if map.contains_key(&key) {
                    continue;
                }
                Self::check_room(map.len())?;
                match self.attempt(dc, w) {
                    Ok(Attempt::Taken(lease)) if usable(lease.previous()) => {
                        auto.insert((self.path().to_path_buf(), dc), w);
                        return Ok(Self::keep(&mut map, key, *lease));
                    }
                    // Dropping the lease closes its file, which frees the lock; its marks stay.
                    Ok(Attempt::Taken(_)) | Ok(Attempt::Foreign(_)) => skipped += 1,
                    Ok(Attempt::Held(_)) => {}
                    Err(e) if e.code() == Code::LeaseCorrupt => skipped += 1,
                    Err(e) => return Err(e),
                }
            }
        }
        Err(self.no_free_slot(&datacenters, slots, skipped))
    }

    /// `ERR_SNOWID_NO_FREE_WORKER_ID` for an automatic lease that found every slot of `datacenters` held or skipped,
    /// saying what to set.
    fn no_free_slot(&self, datacenters: &RangeInclusive<u32>, slots: u64, skipped: u64) -> Error {
        let (lo, hi) = (*datacenters.start(), *datacenters.end());
        let total = u64::from(hi - lo).saturating_mul(slots).saturating_add(slots);
        let bits = slots.trailing_zeros();
        let widen = if bits < 32 {
            format!(
                "widen workerBits alike on every process that makes these ids (SNOWID_WORKER_BITS={} doubles the slots to {})",
                bits + 1,
                total.saturating_mul(2)
            )
        } else {
            "use fewer processes per lease directory".to_string()
        };
        let (which, found, advice) = if lo == hi {
            (
                format!("for datacenterId {lo}"),
                format!("all {slots} held ({skipped} skipped"),
                format!("Stop a process, give some processes another datacenter id (SNOWID_DATACENTER_ID), or {widen}"),
            )
        } else {
            (
                format!("for any datacenterId from {lo} to {hi}"),
                format!("all {total} held ({slots} worker ids each; {skipped} skipped"),
                format!("Stop a process, or {widen}"),
            )
        };
        Error::new(
            Code::NoFreeWorkerId,
            Class::Error,
            format!(
                "workerId: expected a free slot {which} in lease directory {}, found {found}: another user's, unreadable, or \
                 marked ahead). {advice}",
                quote_path(self.path())
            ),
        )
    }

    /// The (datacenterId, workerId, pid) of every slot of the datacenter ids `datacenters` held by a live process,
    /// sorted, without taking any lock (see [`Backend::recorded`]).
    #[cfg(test)]
    pub fn recorded(&self, datacenters: RangeInclusive<u32>) -> Result<Vec<(u32, u32, u32)>> {
        self.backend.recorded(datacenters)
    }

    /// Every slot of the datacenter ids `datacenters` whose file holds a valid record, sorted, with whether its
    /// holder lives, without taking any lock (see [`Backend::holders`]).
    pub fn holders(&self, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
        self.backend.holders(datacenters)
    }
}
