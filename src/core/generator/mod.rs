//! The generator: ids for one identity (layout, epoch, datacenterId, workerId).
//!
//! - [`sequencer`]: the sequencing policy, a pure state update with the time passed in (same ms, full ms, clock
//!   steps back, the end of the timestamp field, marks and deadlines).
//! - [`resume`](State::resume): a state for a slot whose earlier holders left marks; a new holder starts past them.
//! - `shared`: the state as every generator of the identity shares it, in any thread: the state behind a mutex,
//!   and the lock-free fast path in front of it, with the argument that the two never issue the same id and that
//!   nothing passes a fence.
//! - [`Generator`], here: reads the clock, takes the fast path or the mutex, and turns sequence values into ids.
//!
//! The generator knows nothing of leases: a [`Fence`](super::fence::Fence) stores its marks, and may stop it.

mod resume;
pub mod sequencer;
mod shared;

use super::error::{Code, Error, Result};
use super::layout::{max_value, Fields, Layout};
use super::time::Clock;
use shared::Packing;

pub use sequencer::{ClockBackPolicy, Settings, State, Stats};
pub use shared::{Shared, SharedState};

use sequencer::{Rules, Step, Waiting};

/// A point-in-time view of a generator's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// How far the last id's timestamp is ahead of the clock, in ms (0 when it is not).
    pub lead_ms: u64,
    pub clock_back: u32,
    pub stats: Stats,
}

pub struct Generator<C: Clock> {
    rules: Rules,
    /// datacenterId and workerId, already in place.
    fixed: u64,
    packing: Packing,
    state: SharedState,
    clock: C,
}

impl<C: Clock> Generator<C> {
    /// A generator over `state` (a state of `settings.layout`), or an error when the ids in `settings` do not fit
    /// its layout.
    pub fn new(settings: Settings, state: SharedState, clock: C) -> Result<Self> {
        let layout = settings.layout;
        let fixed = layout
            .pack(&Fields {
                timestamp: 0,
                datacenter_id: settings.datacenter_id,
                worker_id: settings.worker_id,
                clock_back: 0,
                sequence: 0,
            })
            .ok_or_else(|| {
                let w = layout.widths();
                Error::range_error(
                    Code::InvalidConfig,
                    "identity",
                    &format!(
                        "datacenterId within 0 to {} and workerId within 0 to {}",
                        max_value(w.datacenter),
                        max_value(w.worker)
                    ),
                    &format!("datacenterId {} and workerId {}", settings.datacenter_id, settings.worker_id),
                )
            })?;
        {
            // The tolerance is read only under the mutex, by the state machine: the fast path need not close.
            let mut st = state.state.lock();
            st.tolerance = st.tolerance.max(settings.max_lead_ms);
        }
        Ok(Generator { rules: Rules::new(settings), fixed, packing: Packing::of(&layout), state, clock })
    }

    pub fn layout(&self) -> &Layout {
        &self.rules.settings.layout
    }

    /// The current lead, clockBack and counters of the state this generator shares.
    pub fn snapshot(&self) -> Snapshot {
        let st = self.state.state.lock();
        let last = self.state.last_of(&st);
        let now = self.clock.now_ms();
        Snapshot { lead_ms: (last + self.rules.epoch).saturating_sub(now), clock_back: st.clock_back, stats: st.stats }
    }

    /// Whether a fence guards this generator's state (`None` when none does), and the error it found the identity
    /// lost with once it did (see [`Fence::lost`](super::fence::Fence::lost)).
    pub fn fence_lost(&self) -> Option<Option<Error>> {
        // The fence is asked with the state's lock let go: a mark write takes the state's lock, then the fence's.
        let fence = self.state.state.lock().fence.clone()?;
        Some(fence.lost())
    }

    /// The next id.
    #[inline]
    pub fn next_id(&self) -> Result<u64> {
        if let Some(id) = self.next_fast() {
            return Ok(id);
        }
        self.next_id_closed()
    }

    /// The next id from the fast path alone (see [`Shared`]), or `None` when the mutex must decide: then
    /// [`next_id_closed`](Self::next_id_closed). For a caller's own fast path: an `Option` of a `u64` comes back in
    /// registers, where a `Result` is written out through memory.
    #[inline(always)]
    pub fn next_id_fast(&self) -> Option<u64> {
        self.next_fast()
    }

    /// The next id by the mutex: what [`next_id`](Self::next_id) does when its fast path declines, and right
    /// whenever it is called (the mutex decides everything the fast path does).
    #[inline(never)]
    pub fn next_id_closed(&self) -> Result<u64> {
        let mut st = self.state.close();
        let (ts, seq, _) = self.take(&mut st, 1)?;
        self.state.open(&st);
        Ok(self.compose(ts, st.clock_back, seq))
    }

    /// The fast path (see [`Shared`]): the next id by one compare-and-swap, or `None` when the mutex must decide.
    #[inline(always)]
    fn next_fast(&self) -> Option<u64> {
        Some(self.state.swap(&self.packing, &self.clock, 1)? | self.fixed)
    }

    /// Fills `out` with the next ids, in order, under one lock. The clock is read once per sequence of consecutive
    /// values rather than once per id. On an error, the ids already placed are not issued to anyone else, and the
    /// error is returned.
    pub fn fill(&self, out: &mut [u64]) -> Result<()> {
        // A batch that fits one ms is one swap of the fast path; the sequence is the lowest field, so its ids are
        // the first one plus 0, 1, 2...
        let count = out.len() as u64;
        if count >= 1 && count - 1 <= self.packing.max_sequence {
            if let Some(next) = self.state.swap(&self.packing, &self.clock, count) {
                let first = (next - (count - 1)) | self.fixed;
                for (k, slot) in out.iter_mut().enumerate() {
                    *slot = first + k as u64;
                }
                return Ok(());
            }
        }
        let mut st = self.state.close();
        let mut rest = out;
        let issued = !rest.is_empty();
        while !rest.is_empty() {
            let (ts, seq, n) = self.take(&mut st, rest.len() as u64)?;
            let base = self.compose(ts, st.clock_back, seq);
            let (chunk, tail) = rest.split_at_mut(n as usize);
            for (k, slot) in chunk.iter_mut().enumerate() {
                *slot = base + k as u64;
            }
            rest = tail;
        }
        if issued {
            self.state.open(&st);
        }
        Ok(())
    }

    /// Takes up to `want` (at least 1) consecutive sequence values in one ms from the state, reading the clock,
    /// sleeping as the sequencer asks (to the next ms, or for a step back under `Wait`): returns the timestamp, the first sequence value and how many were
    /// taken.
    #[inline]
    fn take(&self, st: &mut State, want: u64) -> Result<(u64, u64, u64)> {
        let mut waiting = Waiting::default();
        loop {
            match st.step(&self.rules, self.clock.now_ms(), want, &mut waiting)? {
                Step::Issue { timestamp, first, count } => return Ok((timestamp, first, count)),
                Step::NextMs => self.clock.sleep_to_next_ms(),
                Step::Sleep(ms) => self.clock.sleep_ms(ms),
            }
        }
    }

    #[inline]
    fn compose(&self, t: u64, clock_back: u32, seq: u64) -> u64 {
        (t << self.packing.timestamp_shift)
            | self.fixed
            | (u64::from(clock_back) << self.packing.clock_back_shift)
            | seq
    }

    /// Sets the lease deadline: no id is issued once the clock reads `deadline` (Unix ms) or later. `0` stops the
    /// generator at once. A state that was stopped ([`Stop`](super::fence::Stop)) stays stopped.
    pub fn set_deadline(&self, deadline: u64) {
        // Closed and left closed: the next id takes the mutex, which checks the new deadline (see `Shared`).
        self.state.close().set_deadline(deadline);
    }

    /// The Unix ms of the latest id issued under any clockBack value (or of the last mark taken in): no id of this
    /// state is stamped later. After a step back, the last id issued is earlier than this.
    pub fn highest_ms(&self) -> u64 {
        let st = self.state.state.lock();
        self.state.last_of(&st).max(st.highest) + self.rules.epoch
    }

    /// Takes in the mark another holder of the slot left: it may have issued ids at any clockBack up to Unix ms
    /// `until`. No id at or before `until` is issued from here on, under any clockBack value.
    pub fn absorb_mark(&self, until: u64) {
        self.state.close().absorb_mark(&self.rules, until);
    }
}

#[cfg(test)]
mod tests;
