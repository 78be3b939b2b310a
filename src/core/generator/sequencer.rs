//! The sequencing policy: one identity's state, and the pure update that takes it from one id to the next with the
//! time passed in (as the uuid crate's `ContextV7` takes it). No clock, no lock and no thread here: the generator
//! reads the clock, holds the lock and sleeps as a step asks.
//!
//! - **Same ms:** the sequence counts up. When it is exhausted, the state moves on to the next ms: at once if that
//!   stays within `max_lead_ms` of the clock (bounded borrowing), else when the clock gets there ([`Step::NextMs`]).
//!   It never wraps and never reuses a sequence value.
//! - **Clock moved backwards** by more than the lead the state allows (a smaller step continues from the last
//!   timestamp, strictly increasing, with no clockBack bit used), by [`ClockBackPolicy`]: `Bits` moves to the next
//!   clockBack value that is free at the earlier time and carries on from it, and fails once clockBack would come
//!   back round to its starting value; `Wait` sleeps until the clock catches up ([`Step::Sleep`]), within
//!   `max_wait_ms`; `Throw` fails.
//! - **End of the timestamp field:** fails with `TimeExhausted` rather than overflow into other fields.
//! - **Marks and deadlines:** with a [`Fence`], no id is issued past the stored mark of its clockBack value until a
//!   later mark is written; none is issued once the clock reads the deadline.

use std::sync::Arc;

use super::super::error::{Class, Code, Error, Result};
use super::super::fence::{mark_of, Fence, Marks};
use super::super::layout::{max_value, Layout};
use super::super::time::format_iso;

/// A mark covers ids this far past the one that made it be written: one write per window, never per id. A
/// process that takes over the slot waits out at most this (plus the lead), so it is kept well under the default
/// `maxWaitMs`: a restart then waits briefly instead of spending a clockBack value.
pub const MARK_WINDOW_MS: u64 = 100;

/// What to do when the clock reads earlier than the last id's timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ClockBackPolicy {
    /// Move to the next free clockBack value and carry on from the earlier time (the JS article's policy).
    #[default]
    Bits,
    /// Sleep until the clock has caught up, for at most `max_wait_ms` in all.
    Wait,
    /// Fail at once.
    Throw,
}

impl ClockBackPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ClockBackPolicy::Bits => "bits",
            ClockBackPolicy::Wait => "wait",
            ClockBackPolicy::Throw => "throw",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "bits" => Some(ClockBackPolicy::Bits),
            "wait" => Some(ClockBackPolicy::Wait),
            "throw" => Some(ClockBackPolicy::Throw),
            _ => None,
        }
    }
}

/// Everything a generator needs besides its state and clock.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub layout: Layout,
    pub datacenter_id: u32,
    pub worker_id: u32,
    pub policy: ClockBackPolicy,
    pub max_wait_ms: u64,
    /// How far past the clock the generator may move on when a ms is full (bounded borrowing).
    pub max_lead_ms: u64,
}

/// A generator's settings and the limits of its layout, worked out once.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub settings: Settings,
    pub epoch: u64,
    pub max_timestamp: u64,
    pub max_sequence: u64,
    pub clock_back_mask: u32,
}

impl Rules {
    pub fn new(settings: Settings) -> Rules {
        let w = settings.layout.widths();
        Rules {
            settings,
            epoch: settings.layout.epoch(),
            max_timestamp: settings.layout.max_timestamp(),
            max_sequence: max_value(w.sequence),
            clock_back_mask: max_value(w.clock_back) as u32,
        }
    }
}

/// Counters of one identity's state, since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Steps back the clock took that moved clockBack to a new value.
    pub clock_back_events: u64,
    /// Calls refused with `ClockBackwards` for a step back: `Throw`, a `Wait` past `max_wait_ms`, or `Bits` with
    /// every clockBack value used.
    pub clock_back_refusals: u64,
    /// Calls that had to wait, for any reason: the sum of the three kinds below.
    pub waits: u64,
    /// Calls that waited for the next ms because this one's sequence was used up (at the edge of the lead).
    pub sequence_waits: u64,
    /// Calls that waited for the clock to pass an earlier holder's mark.
    pub mark_waits: u64,
    /// Calls that waited for the clock to catch up after a step back (`onClockBack: 'wait'`).
    pub clock_waits: u64,
    /// Ms the sequence, mark and clock waits took in all, by the generator's clock, per kind.
    pub sequence_wait_ms: u64,
    pub mark_wait_ms: u64,
    pub clock_wait_ms: u64,
    /// High-water marks written.
    pub mark_writes: u64,
}

/// The mutable state of one identity.
pub struct State {
    /// Timestamp (ms since the epoch) of the last id issued.
    pub(super) last: u64,
    /// The largest `last` had before a step back moved it to an earlier time under another clockBack value: with
    /// `last`, it bounds every id of this state, under any clockBack value.
    pub(super) highest: u64,
    /// The sequence value the next id in `last` takes.
    pub(super) next_seq: u64,
    pub(super) clock_back: u32,
    pub(super) start_clock_back: u32,
    /// The clockBack the state was configured with (`start_clock_back` may differ after `State::resume`).
    pub(super) configured_clock_back: u32,
    /// How far `last` may run ahead of the clock: the largest `max_lead_ms` of the generators sharing the state.
    pub(super) tolerance: u64,
    /// Marks that earlier holders of the slot left, per clockBack value (Unix ms).
    pub(super) earlier: Marks,
    /// Unix ms up to which ids under the current clockBack are covered by a stored mark.
    pub(super) reserved_until: u64,
    pub(super) fence: Option<Arc<dyn Fence>>,
    /// Unix ms from which no id may be issued: the deadline of a lease held elsewhere (Redis), renewed from
    /// outside. `u64::MAX` when there is none.
    pub(super) deadline: u64,
    /// Why the state was stopped for good (see `Shared::stop`): the error every call returns from then on.
    pub(super) lost: Option<Error>,
    /// The timestamp an earlier holder's mark set `last` to (with its sequence used up, so no id is issued at it): a
    /// wait while `last` is at it is a wait for the mark, not for the sequence. `last` only moves past it, or back
    /// under a new clockBack value, which clears it. `u64::MAX` when there is none.
    pub(super) mark_last: u64,
    pub(super) stats: Stats,
}

/// What a step asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Issue `count` consecutive sequence values from `first`, at `timestamp` (ms since the epoch). The state has
    /// moved past them.
    Issue { timestamp: u64, first: u64, count: u64 },
    /// The ms is full at the edge of the lead: wait for the clock's next ms, then read it again.
    NextMs,
    /// The clock is behind under `Wait`: sleep this many ms, then read it again.
    Sleep(u64),
}

/// What one call has waited so far, carried from one step to the next (each call counts one wait at most).
#[derive(Debug, Default)]
pub struct Waiting {
    slept: u64,
    next_ms: bool,
    /// What the call waits for, and the clock (Unix ms) when it began, once it waits.
    began: Option<(WaitKind, u64)>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum WaitKind {
    Sequence,
    Mark,
    Clock,
}

impl Stats {
    /// Counts a call's wait of `kind` once it began.
    pub(super) fn began(&mut self, kind: WaitKind) {
        self.waits += 1;
        match kind {
            WaitKind::Sequence => self.sequence_waits += 1,
            WaitKind::Mark => self.mark_waits += 1,
            WaitKind::Clock => self.clock_waits += 1,
        }
    }

    /// Adds the `ms` a call's wait of `kind` took once it ended.
    #[cold]
    pub(super) fn ended(&mut self, kind: WaitKind, ms: u64) {
        let total = match kind {
            WaitKind::Sequence => &mut self.sequence_wait_ms,
            WaitKind::Mark => &mut self.mark_wait_ms,
            WaitKind::Clock => &mut self.clock_wait_ms,
        };
        *total = total.saturating_add(ms);
    }
}

impl State {
    /// A state with no history and no fence.
    pub fn new(clock_back: u32) -> Self {
        State {
            last: 0,
            highest: 0,
            next_seq: 0,
            clock_back,
            start_clock_back: clock_back,
            configured_clock_back: clock_back,
            tolerance: 0,
            earlier: Vec::new(),
            reserved_until: u64::MAX,
            fence: None,
            deadline: u64::MAX,
            lost: None,
            mark_last: u64::MAX,
            stats: Stats::default(),
        }
    }

    pub fn configured_clock_back(&self) -> u32 {
        self.configured_clock_back
    }

    pub(super) fn earlier_mark(&self, clock_back: u32) -> u64 {
        mark_of(&self.earlier, clock_back)
    }

    /// The next clockBack value after the current one (counting round within `mask`) under which no earlier holder
    /// issued an id at or after `now`, or `None` once the count comes back round to the starting value.
    pub(super) fn next_free_clock_back(&self, mask: u32, now: u64) -> Option<u32> {
        let mut c = self.clock_back;
        loop {
            c = (c + 1) & mask;
            if c == self.start_clock_back {
                return None;
            }
            if self.earlier_mark(c) < now {
                return Some(c);
            }
        }
    }

    /// One step towards up to `want` (at least 1) consecutive sequence values of one ms, with the clock reading Unix
    /// ms `now`: the ids to issue, or what to do before the next step. `waiting` carries what this call has waited.
    pub fn step(&mut self, rules: &Rules, now: u64, want: u64, waiting: &mut Waiting) -> Result<Step> {
        if now >= self.deadline {
            return Err(self.lease_lost(rules, now));
        }
        let Some(t) = now.checked_sub(rules.epoch) else {
            return Err(before_epoch(rules, now));
        };
        // `moved`: a step back under `Bits` moves to this clockBack value, once its mark is stored.
        let mut moved = None;
        let (ts, seq) = if t > self.last {
            if t > rules.max_timestamp {
                return Err(exhausted(rules, now));
            }
            (t, 0)
        } else if self.last - t <= self.tolerance {
            // At the last ms, or behind it by no more than the lead: carry on from the last timestamp.
            let behind = self.last - t;
            if self.next_seq <= rules.max_sequence {
                (self.last, self.next_seq)
            } else if behind < rules.settings.max_lead_ms {
                // Full ms, and the next one is still within the lead: borrow it.
                if self.last >= rules.max_timestamp {
                    return Err(exhausted(rules, now));
                }
                (self.last + 1, 0)
            } else {
                // Full ms at the edge of the lead: wait until the clock moves on.
                if !waiting.next_ms {
                    waiting.next_ms = true;
                    let kind = if self.last == self.mark_last { WaitKind::Mark } else { WaitKind::Sequence };
                    self.stats.began(kind);
                    waiting.began = Some((kind, now));
                }
                return Ok(Step::NextMs);
            }
        } else {
            let behind = self.last - t;
            match rules.settings.policy {
                ClockBackPolicy::Bits => {
                    // The new clockBack value has issued nothing at or after this time, here or (per the earlier
                    // holders' marks) before this process took the slot. It is taken only once a mark for it is
                    // stored, so a failed write spends no clockBack value.
                    let Some(free) = self.next_free_clock_back(rules.clock_back_mask, now) else {
                        return Err(self.refuse(rules, now, behind, "every clockBack value has been used"));
                    };
                    moved = Some(free);
                    (t, 0)
                }
                ClockBackPolicy::Wait => {
                    let need = behind - self.tolerance;
                    let max_wait_ms = rules.settings.max_wait_ms;
                    if waiting.slept + need > max_wait_ms {
                        let why = format!(
                            "onClockBack is 'wait' and catching up would exceed maxWaitMs {max_wait_ms} (waited {} ms)",
                            waiting.slept
                        );
                        return Err(self.refuse(rules, now, behind, &why));
                    }
                    if waiting.slept == 0 {
                        let kind = if self.last == self.mark_last { WaitKind::Mark } else { WaitKind::Clock };
                        self.stats.began(kind);
                        waiting.began = Some((kind, now));
                    }
                    waiting.slept += need;
                    return Ok(Step::Sleep(need));
                }
                ClockBackPolicy::Throw => {
                    return Err(self.refuse(rules, now, behind, "onClockBack is 'throw'"));
                }
            }
        };
        let unix = ts + rules.epoch;
        if let Some(c) = moved {
            // No mark covers the new value yet; `persist` writes one (or, with no fence, none).
            self.persist(c, unix, now)?;
            // `last` moves back, so the later ids of the old value are remembered in `highest`.
            self.highest = self.highest.max(self.last);
            self.clock_back = c;
            self.stats.clock_back_events += 1;
            // Ids issued from here on are not the mark's: `last` may meet its timestamp again, under the new value.
            self.mark_last = u64::MAX;
        } else if unix > self.reserved_until {
            self.persist(self.clock_back, unix, now)?;
        }
        let count = want.min(rules.max_sequence + 1 - seq);
        if let Some((kind, began)) = waiting.began.take() {
            self.stats.ended(kind, now.saturating_sub(began));
        }
        self.last = ts;
        self.next_seq = seq + count;
        Ok(Step::Issue { timestamp: ts, first: seq, count })
    }

    /// Stores a new mark for `clock_back` past `unix` before an id at `unix` is issued under it.
    #[cold]
    fn persist(&mut self, clock_back: u32, unix: u64, now: u64) -> Result<()> {
        match &self.fence {
            Some(fence) => {
                // One window of id time past this id, lead or not: a holder at the edge of its lead writes as often
                // as one that is not, so a deleted file is made again within a window (see the host lease).
                let until = unix + MARK_WINDOW_MS;
                fence.reserve(clock_back, until, now)?;
                self.reserved_until = until;
                self.stats.mark_writes += 1;
            }
            None => self.reserved_until = u64::MAX,
        }
        Ok(())
    }

    /// Takes in the mark another holder of the slot left: it may have issued ids at any clockBack up to Unix ms
    /// `until`. No id at or before `until` is issued from here on, under any clockBack value.
    pub fn absorb_mark(&mut self, rules: &Rules, until: u64) {
        let Some(t) = until.checked_sub(rules.epoch) else {
            return;
        };
        if t >= self.last {
            // As if this state had used up the ms `until`: the next id is in a later ms, and a clock behind it is a
            // step back, which the clock-back policy handles.
            self.last = t;
            self.next_seq = rules.max_sequence + 1;
            self.mark_last = t;
        }
        for c in 0..=rules.clock_back_mask {
            match self.earlier.iter_mut().find(|(ec, _)| *ec == c) {
                Some((_, m)) => *m = (*m).max(until),
                None => self.earlier.push((c, until)),
            }
        }
    }

    /// Sets the lease deadline (see `Generator::set_deadline`); a stopped state stays stopped.
    pub fn set_deadline(&mut self, deadline: u64) {
        if self.lost.is_none() {
            self.deadline = deadline;
        }
    }

    /// Stops the state for good: every step from now on returns `why`.
    pub fn stop(&mut self, why: Error) {
        self.deadline = 0;
        self.lost = Some(why);
    }

    /// Refuses a step back of `offset` ms, counted in `clock_back_refusals`, for the reason `why`.
    #[cold]
    fn refuse(&mut self, rules: &Rules, now: u64, offset: u64, why: &str) -> Error {
        self.stats.clock_back_refusals += 1;
        let last = self.last + rules.epoch;
        Error::new(
            Code::ClockBackwards,
            Class::Error,
            format!(
                "clock moved backwards by {offset} ms: expected a time at or after {last} ({}), found {now} ({}); {why}",
                format_iso(last),
                format_iso(now)
            ),
        )
    }

    #[cold]
    fn lease_lost(&self, rules: &Rules, now: u64) -> Error {
        if let Some(why) = &self.lost {
            return why.clone();
        }
        let d = self.deadline;
        let found = if d == 0 {
            "a lease that was released or lost".to_string()
        } else {
            format!(
                "its deadline {d} ({}) passed {} ms ago, so another process may hold the slot now",
                format_iso(d),
                now - d
            )
        };
        let s = &rules.settings;
        Error::new(
            Code::LeaseLost,
            Class::Error,
            format!(
                "lease: expected a confirmed lease on datacenterId {} workerId {}, found {found}",
                s.datacenter_id, s.worker_id
            ),
        )
    }
}

fn before_epoch(rules: &Rules, now: u64) -> Error {
    Error::new(
        Code::ClockBackwards,
        Class::Error,
        format!(
            "clock: expected a time at or after the epoch {} ({}), found {now} ({})",
            rules.epoch,
            format_iso(rules.epoch),
            format_iso(now)
        ),
    )
}

fn exhausted(rules: &Rules, now: u64) -> Error {
    let end = rules.epoch + rules.max_timestamp;
    Error::new(
        Code::TimeExhausted,
        Class::Error,
        format!(
            "timestamp: expected a time no later than expiresAt {end} ({}), found {now} ({}); the layout's {}-bit \
             timestamp field is exhausted",
            format_iso(end),
            format_iso(now),
            rules.settings.layout.timestamp_bits()
        ),
    )
}

#[cfg(test)]
#[path = "sequencer_tests.rs"]
mod tests;
