//! The sequencer on its own: the state update with the time passed in, one step at a time, in milliseconds.

use std::sync::atomic::Ordering;

use super::*;
use crate::core::layout::{Widths, DEFAULT_EPOCH};
use crate::core::testing::{settings, MemStore, NOW};

/// `NOW` as ms since the default epoch.
const T: u64 = NOW - DEFAULT_EPOCH;

fn rules(policy: ClockBackPolicy, max_lead_ms: u64) -> Rules {
    Rules::new(Settings { max_lead_ms, ..settings(Widths::default(), policy) })
}

/// A state that issued sequence values up to `last_seq` in the ms `NOW`, allowing a lead of `lead` ms.
fn at_now(last_seq: u64, lead: u64) -> State {
    State { last: T, next_seq: last_seq + 1, tolerance: lead, ..State::new(0) }
}

fn issue(timestamp: u64, first: u64, count: u64) -> Step {
    Step::Issue { timestamp, first, count }
}

#[test]
fn a_later_ms_starts_at_sequence_0_and_the_same_ms_counts_on() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = State::new(0);
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), issue(T, 0, 1));
    assert_eq!(st.step(&r, NOW, 5, &mut w).unwrap(), issue(T, 1, 5));
    assert_eq!(st.step(&r, NOW + 1, 1, &mut w).unwrap(), issue(T + 1, 0, 1));
    assert_eq!(st.stats, Stats::default(), "nothing waited");
}

#[test]
fn a_batch_takes_what_is_left_of_the_ms() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = at_now(4092, 0);
    assert_eq!(st.step(&r, NOW, 10, &mut Waiting::default()).unwrap(), issue(T, 4093, 3));
}

#[test]
fn a_full_ms_waits_once_counted_until_the_clock_moves_on() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = at_now(4095, 0);
    let mut w = Waiting::default();
    for _ in 0..3 {
        assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), Step::NextMs);
    }
    assert_eq!(st.stats.waits, 1, "one call, one wait");
    assert_eq!(st.step(&r, NOW + 1, 1, &mut w).unwrap(), issue(T + 1, 0, 1));
}

#[test]
fn a_full_ms_within_the_lead_borrows_the_next_one() {
    let r = rules(ClockBackPolicy::Bits, 2);
    let mut st = at_now(4095, 2);
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), issue(T + 1, 0, 1));
    st.next_seq = 4096;
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), issue(T + 2, 0, 1));
    st.next_seq = 4096;
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), Step::NextMs, "at the edge of the lead");
    // A clock 2 ms behind the last id, within the state's tolerance, carries on from it.
    st.next_seq = 7;
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), issue(T + 2, 7, 1));
}

#[test]
fn wait_asks_to_sleep_the_gap_and_gives_up_past_max_wait() {
    let r = rules(ClockBackPolicy::Wait, 0);
    let mut st = at_now(0, 0);
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW - 300, 1, &mut w).unwrap(), Step::Sleep(300));
    assert_eq!(st.step(&r, NOW - 700, 1, &mut w).unwrap(), Step::Sleep(700), "1000 ms in all, the bound");
    let e = st.step(&r, NOW - 1, 1, &mut w).unwrap_err();
    assert_eq!(e.code(), Code::ClockBackwards);
    assert!(e.message().contains("would exceed maxWaitMs 1000 (waited 1000 ms)"), "{e}");
    assert_eq!(st.stats.waits, 1);
    assert_eq!((st.last, st.next_seq), (T, 1), "nothing issued");
}

#[test]
fn bits_moves_to_the_next_clock_back_only_once_its_mark_is_stored() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let fence = Arc::new(MemStore::default());
    let mut st = State { fence: Some(fence.clone()), reserved_until: NOW + 100, ..at_now(9, 0) };
    fence.fail.store(true, Ordering::SeqCst);
    let e = st.step(&r, NOW - 10, 1, &mut Waiting::default()).unwrap_err();
    assert_eq!((e.code(), st.clock_back, st.stats.clock_back_events), (Code::LeaseDir, 0, 0), "{e}");
    fence.fail.store(false, Ordering::SeqCst);
    assert_eq!(st.step(&r, NOW - 10, 1, &mut Waiting::default()).unwrap(), issue(T - 10, 0, 1));
    assert_eq!((st.clock_back, st.highest, st.stats.clock_back_events), (1, T, 1));
    assert_eq!(*fence.writes.lock(), vec![(1, NOW - 10 + MARK_WINDOW_MS)]);
}

#[test]
fn a_mark_is_stored_before_the_first_id_past_the_last_one() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let fence = Arc::new(MemStore::default());
    let mut st = State { fence: Some(fence.clone()), reserved_until: NOW + 5, ..at_now(0, 0) };
    st.step(&r, NOW + 5, 1, &mut Waiting::default()).unwrap();
    assert!(fence.writes.lock().is_empty(), "covered by the mark");
    st.step(&r, NOW + 6, 1, &mut Waiting::default()).unwrap();
    assert_eq!(*fence.writes.lock(), vec![(0, NOW + 6 + MARK_WINDOW_MS)]);
    assert_eq!((st.reserved_until, st.stats.mark_writes), (NOW + 6 + MARK_WINDOW_MS, 1));
}

#[test]
fn deadlines_the_epoch_and_the_end_of_the_timestamp_refuse() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = State::new(0);
    st.set_deadline(NOW);
    assert_eq!(st.step(&r, NOW, 1, &mut Waiting::default()).unwrap_err().code(), Code::LeaseLost);
    st.set_deadline(u64::MAX);
    let e = st.step(&r, DEFAULT_EPOCH - 1, 1, &mut Waiting::default()).unwrap_err();
    assert!(e.message().starts_with("clock: expected a time at or after the epoch"), "{e}");
    let end = DEFAULT_EPOCH + r.max_timestamp;
    assert_eq!(st.step(&r, end, 1, &mut Waiting::default()).unwrap(), issue(r.max_timestamp, 0, 1));
    assert_eq!(st.step(&r, end + 1, 1, &mut Waiting::default()).unwrap_err().code(), Code::TimeExhausted);
    // A stopped state stays stopped, with its reason, whatever deadline comes after.
    let why = Error::new(Code::LeaseLost, Class::Error, "taken");
    st.stop(why.clone());
    st.set_deadline(u64::MAX);
    assert_eq!(st.step(&r, NOW, 1, &mut Waiting::default()).unwrap_err(), why);
}

#[test]
fn an_absorbed_mark_moves_the_state_past_it_under_every_clock_back() {
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = at_now(0, 0);
    st.absorb_mark(&r, NOW + 3);
    assert_eq!((st.last, st.next_seq), (T + 3, 4096), "as if the ms of the mark were used up");
    assert_eq!(st.earlier, vec![(0, NOW + 3), (1, NOW + 3), (2, NOW + 3), (3, NOW + 3)]);
    assert_eq!(st.step(&r, NOW + 4, 1, &mut Waiting::default()).unwrap(), issue(T + 4, 0, 1));
}

#[test]
fn a_slot_is_usable_when_its_mark_passes_within_the_wait_or_another_clock_back_is_free() {
    let s = Settings { max_wait_ms: 100, ..settings(Widths::default(), ClockBackPolicy::Bits) };
    assert!(State::usable(&s, 0, &[], NOW), "no marks");
    assert!(State::usable(&s, 0, &[(0, NOW - 1)], NOW), "a mark behind the clock");
    assert!(State::usable(&s, 0, &[(0, NOW + 99)], NOW), "a mark passed within maxWaitMs");
    assert!(State::usable(&s, 0, &[(0, NOW + 100), (1, NOW + 100)], NOW), "clockBack 2 and 3 are free");
    let all: Vec<(u32, u64)> = (0..4).map(|c| (c, NOW + 5000)).collect();
    assert!(!State::usable(&s, 0, &all, NOW), "every clockBack value reserved past the clock");
    for policy in [ClockBackPolicy::Wait, ClockBackPolicy::Throw] {
        let s = Settings { policy, ..s };
        assert!(!State::usable(&s, 0, &[(0, NOW + 100)], NOW), "{policy:?} cannot move to another value");
        assert!(State::usable(&s, 0, &[(1, NOW + 5000)], NOW), "{policy:?}: another value's mark is no matter");
    }
}

#[test]
fn waits_are_counted_by_kind_with_how_long_they_took() {
    // The sequence: a full ms at the edge of the lead, until the clock moves on 1 ms later.
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = at_now(4095, 0);
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), Step::NextMs);
    assert_eq!(st.step(&r, NOW + 1, 1, &mut w).unwrap(), issue(T + 1, 0, 1));
    let s = st.stats;
    assert_eq!((s.waits, s.sequence_waits, s.mark_waits, s.clock_waits), (1, 1, 0, 0));
    assert_eq!((s.sequence_wait_ms, s.mark_wait_ms, s.clock_wait_ms), (1, 0, 0));

    // The clock, under `Wait`: 300 ms behind, caught up after the sleep.
    let r = rules(ClockBackPolicy::Wait, 0);
    let mut st = at_now(0, 0);
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW - 300, 1, &mut w).unwrap(), Step::Sleep(300));
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), issue(T, 1, 1));
    let s = st.stats;
    assert_eq!((s.waits, s.sequence_waits, s.mark_waits, s.clock_waits), (1, 0, 0, 1));
    assert_eq!((s.sequence_wait_ms, s.mark_wait_ms, s.clock_wait_ms), (0, 0, 300));

    // A mark another holder left at the clock: the full ms it sets is waited out as a mark, not a sequence.
    let r = rules(ClockBackPolicy::Bits, 0);
    let mut st = State::new(0);
    st.absorb_mark(&r, NOW);
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW, 1, &mut w).unwrap(), Step::NextMs);
    assert_eq!(st.step(&r, NOW + 2, 1, &mut w).unwrap(), issue(T + 2, 0, 1));
    let s = st.stats;
    assert_eq!((s.waits, s.sequence_waits, s.mark_waits, s.clock_waits), (1, 0, 1, 0));
    assert_eq!(s.mark_wait_ms, 2);
    // Once past the mark, a full ms is a sequence wait again.
    st.next_seq = 4096;
    let mut w = Waiting::default();
    assert_eq!(st.step(&r, NOW + 2, 1, &mut w).unwrap(), Step::NextMs);
    assert_eq!((st.stats.sequence_waits, st.stats.mark_waits), (1, 1));
}
