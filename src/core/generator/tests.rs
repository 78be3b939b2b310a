//! The generator's tests: its policy, its fast path, marks and restarts, with an injected clock.

use super::sequencer::MARK_WINDOW_MS;
use super::shared::CLOSED;
use super::*;
use crate::core::error::Class;
use crate::core::layout::{Widths, DEFAULT_EPOCH};
use crate::core::testing::{settings, FakeClock, MemStore, NOW};
use crate::core::time::Clock;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The layout of `w` with the default epoch, as `settings` makes it.
fn layout(w: Widths) -> Layout {
    settings(w, ClockBackPolicy::Bits).layout
}

fn generator(policy: ClockBackPolicy, clock: &FakeClock) -> Generator<FakeClock> {
    let state = Shared::new(State::new(0), &layout(Widths::default()));
    Generator::new(settings(Widths::default(), policy), state, clock.clone()).unwrap()
}

/// A generator on a fake clock at `NOW`, with a mark store and no earlier marks, borrowing up to `max_lead_ms`.
fn with_store(max_lead_ms: u64) -> (FakeClock, Arc<MemStore>, Generator<FakeClock>) {
    let clock = FakeClock::at(NOW);
    let store = Arc::new(MemStore::default());
    let s = Settings { max_lead_ms, ..settings(Widths::default(), ClockBackPolicy::Bits) };
    let st = State::resume(&s, 0, Vec::new(), store.clone(), &clock).unwrap();
    let g = Generator::new(s, Shared::new(st, &s.layout), clock.clone()).unwrap();
    (clock, store, g)
}

fn fields(g: &Generator<FakeClock>, id: u64) -> Fields {
    g.layout().unpack(id)
}

#[test]
fn a_generator_tells_whether_a_fence_guards_it() {
    let clock = FakeClock::at(NOW);
    assert_eq!(generator(ClockBackPolicy::Bits, &clock).fence_lost(), None, "no fence");
    let (_, _, g) = with_store(0);
    // A fence that never finds its identity lost (a store's deadline stops the generator from outside instead).
    assert_eq!(g.fence_lost(), Some(None));
}

#[test]
fn no_id_at_or_past_the_lease_deadline_on_any_path() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Bits, &clock);
    g.set_deadline(NOW + 2);
    g.next_id().unwrap();
    g.next_id().unwrap(); // same ms
    clock.set(NOW + 1);
    g.next_id().unwrap(); // later ms
    let mut batch = [0u64; 3];
    g.fill(&mut batch).unwrap();
    // The deadline reached: the same-ms path, the later-ms path, batches and clock steps back all refuse.
    clock.set(NOW + 2);
    let e = g.next_id().unwrap_err();
    assert_eq!((e.code(), e.class()), (Code::LeaseLost, Class::Error));
    assert!(
        e.message().starts_with("lease: expected a confirmed lease on datacenterId 1 workerId 3, found its deadline"),
        "{e}"
    );
    assert!(e.message().contains("passed 0 ms ago"), "{e}");
    assert_eq!(g.fill(&mut batch).unwrap_err().code(), Code::LeaseLost);
    clock.set(NOW + 5000);
    assert!(g.next_id().unwrap_err().message().contains("passed 4998 ms ago"));
    // A renewal moves the deadline on; 0 stops at once.
    clock.set(NOW + 5000);
    g.set_deadline(NOW + 6000);
    g.next_id().unwrap();
    g.set_deadline(0);
    assert!(g.next_id().unwrap_err().message().contains("released or lost"));
}

#[test]
fn an_absorbed_mark_is_never_issued_under_again() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Bits, &clock);
    let before = g.next_id().unwrap();
    // Another holder issued up to NOW + 10 (its clock ran ahead of ours).
    g.absorb_mark(NOW + 10);
    // Our clock, 10 ms behind the mark, is a step back with every clockBack value reserved: refused.
    let e = g.next_id().unwrap_err();
    assert_eq!(e.code(), Code::ClockBackwards, "{e}");
    // (At the mark's own ms it would wait for the next ms, as for any full ms.)
    clock.set(NOW + 11);
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!((f.timestamp, f.clock_back, f.sequence), (NOW + 11 - DEFAULT_EPOCH, 0, 0));
    // An older mark changes nothing.
    g.absorb_mark(NOW - 1000);
    let next = g.next_id().unwrap();
    assert!(next > before);
    assert_eq!(fields(&g, next).sequence, 1);
}

#[test]
fn the_highest_ms_covers_ids_issued_before_a_step_back() {
    let clock = FakeClock::at(NOW + 2000);
    let g = generator(ClockBackPolicy::Bits, &clock);
    g.next_id().unwrap();
    clock.set(NOW + 2400);
    g.next_id().unwrap();
    assert_eq!(g.highest_ms(), NOW + 2400);
    // The clock steps back 2 s: the next id is under clockBack 1 at the earlier time, and the highest ms stays
    // at the later ids of clockBack 0.
    clock.set(NOW + 400);
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!((f.timestamp, f.clock_back), (NOW + 400 - DEFAULT_EPOCH, 1));
    assert_eq!(g.highest_ms(), NOW + 2400);
    // A second step back, then the clock passes the old ids: the highest ms follows the latest id again.
    clock.set(NOW);
    assert_eq!(fields(&g, g.next_id().unwrap()).clock_back, 2);
    assert_eq!(g.highest_ms(), NOW + 2400);
    clock.set(NOW + 3000);
    g.next_id().unwrap();
    assert_eq!(g.highest_ms(), NOW + 3000);
}

#[test]
fn ids_carry_the_identity_and_the_time() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Bits, &clock);
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!(
        f,
        Fields { timestamp: NOW - DEFAULT_EPOCH, datacenter_id: 1, worker_id: 3, clock_back: 0, sequence: 0 }
    );
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!((f.timestamp, f.sequence), (NOW - DEFAULT_EPOCH, 1));
}

#[test]
fn strictly_increasing_across_many_ms() {
    // The clock moves 1 ms every 997 reads, so some ms fill up and some do not.
    let clock = FakeClock::ticking(NOW, 997);
    let g = generator(ClockBackPolicy::Throw, &clock);
    let mut last = 0;
    let mut seen = HashSet::new();
    for _ in 0..200_000 {
        let id = g.next_id().unwrap();
        assert!(id > last, "{id} after {last}");
        assert!(seen.insert(id));
        last = id;
    }
    assert!(clock.get() - NOW >= 200, "the run spans at least 200 ms");
}

#[test]
fn exhausted_sequence_waits_for_the_next_ms_instead_of_wrapping() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Throw, &clock);
    for seq in 0..4096 {
        assert_eq!(fields(&g, g.next_id().unwrap()).sequence, seq);
    }
    // The 4097th id of the ms must not be issued in this ms: move the clock on from another thread while the
    // generator waits for the next ms.
    let before = clock.reads();
    let c2 = clock.clone();
    let mover = std::thread::spawn(move || {
        while c2.reads() < before + 1000 {
            std::thread::yield_now();
        }
        c2.set(NOW + 1);
    });
    let f = fields(&g, g.next_id().unwrap());
    mover.join().unwrap();
    assert_eq!((f.timestamp, f.sequence), (NOW + 1 - DEFAULT_EPOCH, 0));
    let reads = clock.reads() - before;
    assert!(reads > 1000, "it read the clock again until it moved");
    // One read on the fast path and one that issues; every read between them follows a sleep to the next ms.
    assert!(clock.next_ms_waits() + 2 >= reads, "it slept between reads rather than spinning: {reads} reads");
}

#[test]
fn clock_back_bits_count_three_steps_then_throw() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Bits, &clock);
    let mut seen = HashSet::new();
    let mut issue = |g: &Generator<FakeClock>| {
        let id = g.next_id().unwrap();
        assert!(seen.insert(id), "duplicate {id}");
        fields(g, id)
    };
    for _ in 0..5 {
        issue(&g);
    }
    for step in 1..=3u32 {
        clock.set(NOW - 10 * u64::from(step));
        let f = issue(&g);
        assert_eq!((f.clock_back, f.sequence), (step, 0));
        assert_eq!(f.timestamp, NOW - 10 * u64::from(step) - DEFAULT_EPOCH);
        for _ in 0..3 {
            issue(&g);
        }
    }
    clock.set(NOW - 50);
    let e = g.next_id().unwrap_err();
    assert_eq!(e.code(), Code::ClockBackwards);
    assert!(e.message().starts_with("clock moved backwards by 20 ms"), "{e}");
    // Still behind: it keeps refusing rather than reusing clockBack 1. Each refusal is counted, apart from the steps.
    assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
    assert_eq!((g.snapshot().stats.clock_back_refusals, g.snapshot().stats.clock_back_events), (2, 3));
    // Once the clock is past the last id, generation carries on under clockBack 3.
    clock.set(NOW - 29);
    let f = issue(&g);
    assert_eq!((f.clock_back, f.timestamp), (3, NOW - 29 - DEFAULT_EPOCH));
}

#[test]
fn clock_back_wraps_from_a_nonzero_start_value() {
    let clock = FakeClock::at(NOW);
    let state = Shared::new(State::new(2), &layout(Widths::default()));
    let g = Generator::new(settings(Widths::default(), ClockBackPolicy::Bits), state, clock.clone()).unwrap();
    assert_eq!(fields(&g, g.next_id().unwrap()).clock_back, 2);
    for (i, expect) in [3u32, 0, 1].into_iter().enumerate() {
        clock.set(NOW - 1 - i as u64);
        assert_eq!(fields(&g, g.next_id().unwrap()).clock_back, expect);
    }
    clock.set(NOW - 10);
    assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
}

#[test]
fn zero_clock_back_bits_throw_on_the_first_step_back() {
    let clock = FakeClock::at(NOW);
    let w = Widths { clock_back: 0, ..Widths::default() };
    let g = Generator::new(settings(w, ClockBackPolicy::Bits), Shared::new(State::new(0), &layout(w)), clock.clone())
        .unwrap();
    g.next_id().unwrap();
    clock.set(NOW - 1);
    assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
}

#[test]
fn wait_policy_sleeps_until_the_clock_catches_up() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Wait, &clock);
    let before = g.next_id().unwrap();
    clock.set(NOW - 300);
    let after = g.next_id().unwrap();
    assert!(after > before);
    assert_eq!(clock.slept(), 300);
    let f = fields(&g, after);
    assert_eq!((f.timestamp, f.clock_back, f.sequence), (NOW - DEFAULT_EPOCH, 0, 1));
}

#[test]
fn wait_policy_gives_up_past_max_wait() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Wait, &clock);
    g.next_id().unwrap();
    clock.set(NOW - 1001);
    let e = g.next_id().unwrap_err();
    assert_eq!(e.code(), Code::ClockBackwards);
    assert!(e.message().contains("maxWaitMs 1000"), "{e}");
    assert_eq!(clock.slept(), 0, "no point sleeping when the bound cannot be met");
    assert_eq!((g.snapshot().stats.clock_back_refusals, g.snapshot().stats.clock_waits), (1, 0));

    // A clock that stays behind while we sleep: total sleep stays within the bound.
    let stuck = FakeClock::stuck(NOW);
    let g = generator(ClockBackPolicy::Wait, &stuck);
    g.next_id().unwrap();
    stuck.set(NOW - 400);
    assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
    assert_eq!(stuck.slept(), 800);
    assert_eq!(g.snapshot().stats.clock_back_refusals, 1);
}

#[test]
fn throw_policy_throws_and_keeps_its_place() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Throw, &clock);
    let first = g.next_id().unwrap();
    clock.set(NOW - 5);
    let e = g.next_id().unwrap_err();
    assert_eq!((e.code(), e.class()), (Code::ClockBackwards, Class::Error));
    assert!(e.message().contains("by 5 ms"), "{e}");
    assert_eq!(g.snapshot().stats.clock_back_refusals, 1);
    clock.set(NOW);
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!((f.clock_back, f.sequence), (0, 1));
    assert!(g.layout().pack(&f).unwrap() > first);
}

#[test]
fn time_exhausted_is_an_error_not_an_overflow() {
    let clock = FakeClock::at(NOW);
    let g = generator(ClockBackPolicy::Bits, &clock);
    let end = g.layout().expires_at();
    clock.set(end);
    let last = g.next_id().unwrap();
    assert_eq!(fields(&g, last).timestamp, g.layout().max_timestamp());
    assert!(last <= crate::core::layout::MAX_ID);
    for _ in 0..4095 {
        g.next_id().unwrap();
    }
    // The last ms is full: the next id would need the ms after expiresAt.
    let c2 = clock.clone();
    let mover = std::thread::spawn(move || {
        while c2.reads() < 4096 + 100 {
            std::thread::yield_now();
        }
        c2.set(end + 1);
    });
    let e = g.next_id().unwrap_err();
    mover.join().unwrap();
    assert_eq!(e.code(), Code::TimeExhausted);
    clock.set(end + 1000);
    assert_eq!(g.next_id().unwrap_err().code(), Code::TimeExhausted);
}

#[test]
fn a_clock_before_the_epoch_is_refused() {
    let clock = FakeClock::at(DEFAULT_EPOCH - 1);
    let g = generator(ClockBackPolicy::Bits, &clock);
    assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
    // With the fast path open too: a single id and a batch decline it and the mutex refuses them.
    clock.set(NOW);
    let first = g.next_id().unwrap();
    for before in [DEFAULT_EPOCH - 1, 0] {
        clock.set(before);
        assert_eq!(g.next_id_fast(), None, "the fast path at {before}");
        assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
        clock.set(NOW);
        g.next_id().unwrap();
        clock.set(before);
        assert_eq!(g.fill(&mut [0u64; 3]).unwrap_err().code(), Code::ClockBackwards);
    }
    clock.set(NOW + 1);
    assert!(g.next_id().unwrap() > first);
}

#[test]
fn threads_sharing_a_state_never_collide() {
    let clock = FakeClock::ticking(NOW, 500);
    let state = Shared::new(State::new(0), &layout(Widths::default()));
    let s = settings(Widths::default(), ClockBackPolicy::Bits);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
            std::thread::spawn(move || (0..50_000).map(|_| g.next_id().unwrap()).collect::<Vec<_>>())
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        let ids = h.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "each thread sees increasing ids");
        for id in ids {
            assert!(all.insert(id));
        }
    }
    assert_eq!(all.len(), 200_000);
}

/// The fast path's word (see [`Shared`]).
fn word<C: Clock>(g: &Generator<C>) -> u64 {
    g.state.word.load(Ordering::SeqCst)
}

/// The last id the state issued, read under the mutex (which closes the fast path).
fn last_issued<C: Clock>(g: &Generator<C>) -> u64 {
    let st = g.state.close();
    g.compose(st.last, st.clock_back, st.next_seq - 1)
}

#[test]
fn the_fast_path_opens_only_with_an_id_just_issued() {
    let (clock, _store, g) = with_store(0);
    assert_eq!(word(&g), CLOSED, "closed until the first id");
    let a = g.next_id().unwrap();
    assert_eq!(word(&g), a & !g.fixed, "the first id, issued under the mutex, opens the word with itself");
    let b = g.next_id().unwrap();
    assert_eq!((b, word(&g)), (a + 1, b & !g.fixed));
    clock.set(NOW + 1);
    let c = g.next_id().unwrap();
    assert_eq!(
        (fields(&g, c).timestamp, fields(&g, c).sequence, word(&g)),
        (fields(&g, b).timestamp + 1, 0, c & !g.fixed)
    );
    // Sections that issue nothing leave it closed; the next id opens it again with itself.
    g.set_deadline(u64::MAX);
    assert_eq!(word(&g), CLOSED);
    let d = g.next_id().unwrap();
    assert_eq!(word(&g), d & !g.fixed);
    g.absorb_mark(NOW + 5);
    assert_eq!(word(&g), CLOSED);
    g.set_deadline(0);
    assert_eq!(g.next_id().unwrap_err().code(), Code::LeaseLost);
    assert_eq!(word(&g), CLOSED, "a refused call opens nothing");
}

/// `call` run on another thread while this one holds the mutex: a call that needed the mutex would wait for it
/// (a generous margin, since a busy machine is slow), and fail with `what`.
fn while_the_mutex_is_held<T: Send + 'static>(
    g: &Arc<Generator<FakeClock>>,
    what: &str,
    call: impl FnOnce(&Generator<FakeClock>) -> T + Send + 'static,
) -> T {
    let held = g.state.state.lock();
    let (tx, rx) = std::sync::mpsc::channel();
    let g2 = g.clone();
    let t = std::thread::spawn(move || tx.send(call(&g2)).unwrap());
    let out =
        rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap_or_else(|_| panic!("{what} waited for the mutex"));
    drop(held);
    t.join().unwrap();
    out
}

#[test]
fn the_fast_path_issues_without_the_mutex() {
    let (_clock, _store, g) = with_store(0);
    let g = Arc::new(g);
    let first = g.next_id().unwrap();
    let id = while_the_mutex_is_held(&g, "the fast path", |g| g.next_id().unwrap());
    assert_eq!(id, first + 1);
}

/// Widths with sequence values to spare (18 bits), for threads that share a state well below the cap.
const WIDE: Widths = Widths { datacenter: 1, worker: 2, clock_back: 2, sequence: 18 };

/// A generator of `s` on `clock`, and another of its state whose calls run on their own thread, as a second
/// thread's would.
fn with_another(clock: &FakeClock, s: Settings) -> (Generator<FakeClock>, Arc<Generator<FakeClock>>) {
    let state = Shared::new(State::new(0), &s.layout);
    let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
    let other = Arc::new(Generator::new(s, state, clock.clone()).unwrap());
    (g, other)
}

/// `other`'s next id, taken on a thread of its own.
fn elsewhere(other: &Arc<Generator<FakeClock>>) -> u64 {
    let other = other.clone();
    std::thread::spawn(move || other.next_id().unwrap()).join().unwrap()
}

#[test]
fn a_swap_that_loses_to_another_thread_issues_past_its_id() {
    let clock = FakeClock::at(NOW);
    let (g, other) = with_another(&clock, settings(WIDE, ClockBackPolicy::Bits));
    let a = g.next_id().unwrap();
    // The other thread's id comes between this call's load of the word and its swap (inside its clock read).
    let (tx, rx) = std::sync::mpsc::channel();
    let o = other.clone();
    clock.meanwhile(move || tx.send(elsewhere(&o)).unwrap());
    let c = g.next_id().unwrap();
    let b = rx.recv().unwrap();
    assert_eq!((b, c), (a + 1, a + 2));
    assert_eq!(word(&g), c & !g.fixed, "the word is the last id issued");
}

#[test]
fn after_another_thread_takes_a_later_ms_a_step_back_gets_the_policy() {
    for (policy, lead) in [(ClockBackPolicy::Throw, 0), (ClockBackPolicy::Wait, 0), (ClockBackPolicy::Bits, 5)] {
        let clock = FakeClock::at(NOW);
        let (g, other) = with_another(&clock, Settings { max_lead_ms: lead, ..settings(WIDE, policy) });
        g.next_id().unwrap();
        // Another thread is given an id of the next ms; then the clock steps back to this one's ms.
        clock.set(NOW + 1);
        let later = elsewhere(&other);
        clock.set(NOW);
        let what = format!("{policy:?} with a lead of {lead}");
        match g.next_id() {
            Ok(id) => assert!(id > later, "{what}: {id:#x} after {later:#x}"),
            Err(e) => assert_eq!((policy, e.code()), (ClockBackPolicy::Throw, Code::ClockBackwards), "{what}"),
        }
    }
}

#[test]
fn a_batch_that_fits_the_ms_is_one_swap_and_one_that_does_not_takes_the_mutex() {
    // A lead, so that a batch past the ms borrows the next one rather than waits for the fake clock.
    let (clock, _store, g) = with_store(5);
    let g = Arc::new(g);
    let first = g.next_id().unwrap();
    // With the mutex held, a batch that fits the ms still completes: one swap moves the word to its last id.
    let batch = while_the_mutex_is_held(&g, "a batch that fits", |g| {
        let mut batch = [0u64; 7];
        g.fill(&mut batch).unwrap();
        batch
    });
    assert_eq!(batch, std::array::from_fn(|k| first + 1 + k as u64));
    assert_eq!(word(&g), batch[6] & !g.fixed);
    // A new ms: the batch starts at sequence 0 and the word is its last id.
    clock.set(NOW + 1);
    let mut batch = [0u64; 3];
    g.fill(&mut batch).unwrap();
    assert_eq!((fields(&g, batch[0]).timestamp, fields(&g, batch[0]).sequence), (fields(&g, first).timestamp + 1, 0));
    assert_eq!(word(&g), batch[2] & !g.fixed);
    // The rest of the ms but one, then two: the second does not fit, so the mutex runs it into the next ms.
    let mut rest = vec![0u64; (g.packing.max_sequence - 3) as usize];
    g.fill(&mut rest).unwrap();
    assert_eq!(fields(&g, rest[rest.len() - 1]).sequence, g.packing.max_sequence as u32 - 1);
    let mut two = [0u64; 2];
    g.fill(&mut two).unwrap();
    assert_eq!(fields(&g, two[0]).sequence, g.packing.max_sequence as u32);
    assert_eq!((fields(&g, two[1]).timestamp, fields(&g, two[1]).sequence), (fields(&g, batch[0]).timestamp + 1, 0));
    // A batch larger than a ms never takes the swap, and every id is still new.
    let mut big = vec![0u64; g.packing.max_sequence as usize + 2];
    g.fill(&mut big).unwrap();
    assert!(big[0] > two[1] && big.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_caller_held_up_across_a_fence_cannot_complete_its_swap() {
    let (_clock, _store, g) = with_store(0);
    g.next_id().unwrap();
    // What a caller read before it was held up, and the swap it would then try: the next sequence value.
    let stale = word(&g);
    g.set_deadline(0);
    assert!(g.state.word.compare_exchange(stale, stale + 1, Ordering::AcqRel, Ordering::Acquire).is_err());
    assert_eq!(g.next_id().unwrap_err().code(), Code::LeaseLost);
    // The deadline lifted, the state issues the very id the held-up caller would have: the word is then that id,
    // not the value the caller read, so its swap still fails instead of issuing it a second time.
    g.set_deadline(u64::MAX);
    let next = g.next_id().unwrap();
    assert_eq!(next & !g.fixed, stale + 1);
    assert!(g.state.word.compare_exchange(stale, stale + 1, Ordering::AcqRel, Ordering::Acquire).is_err());
}

#[test]
fn no_word_value_comes_back_and_no_id_repeats() {
    // A layout with room for many steps back, and a lead, so every path of the state machine is taken.
    let w = Widths { datacenter: 1, worker: 2, clock_back: 7, sequence: 12 };
    // A clock that also moves on by itself, as a real one does while a full ms at the edge of the lead waits.
    let clock = FakeClock::ticking(NOW, 5_000);
    let store = Arc::new(MemStore::default());
    let s = Settings { max_lead_ms: 3, ..settings(w, ClockBackPolicy::Bits) };
    let st = State::resume(&s, 0, Vec::new(), store.clone(), &clock).unwrap();
    let g = Generator::new(s, Shared::new(st, &s.layout), clock.clone()).unwrap();
    let (mut words, mut ids) = (HashSet::new(), HashSet::new());
    let mut current = CLOSED;
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..300_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut batch = [0u64; 7];
        let issued: &[u64] = match x % 10_000 {
            0..=7_999 => &g.next_id().map(|id| vec![id]).unwrap_or_default(),
            8_000..=8_999 => {
                clock.set(clock.get() + 1);
                &[]
            }
            9_000..=9_899 => match g.fill(&mut batch) {
                Ok(()) => &batch,
                Err(_) => &[],
            },
            9_900..=9_901 => {
                clock.set(clock.get() - 40);
                &[]
            }
            9_902..=9_949 => {
                g.set_deadline(if x & 1 == 0 { 0 } else { u64::MAX });
                &[]
            }
            _ => {
                g.absorb_mark(clock.get() + 2);
                &[]
            }
        };
        for &id in issued {
            assert!(ids.insert(id), "id {id:#x} issued twice");
        }
        let now = word(&g);
        if now != current {
            assert!(now == CLOSED || words.insert(now), "the word came back to {now:#x}");
            current = now;
        }
    }
    assert!(ids.len() > 100_000 && words.len() > 10_000, "{} ids, {} words", ids.len(), words.len());
    assert!(g.snapshot().stats.clock_back_events > 5);
}

/// `threads` threads sharing one state of layout `w` with a mark store, each taking `per_thread` ids (a batch of
/// 5 every 64th call), while the clock ticks every `tick_every` reads. Returns each thread's ids.
fn threads_take(w: Widths, threads: usize, per_thread: usize, tick_every: u64) -> (FakeClock, Vec<Vec<u64>>) {
    let clock = FakeClock::ticking(NOW, tick_every);
    let store = Arc::new(MemStore::default());
    let s = settings(w, ClockBackPolicy::Bits);
    let state = Shared::new(State::resume(&s, 0, Vec::new(), store, &clock).unwrap(), &s.layout);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(per_thread);
                let mut batch = [0u64; 5];
                while ids.len() < per_thread {
                    if ids.len() % 64 == 63 && ids.len() + batch.len() <= per_thread {
                        g.fill(&mut batch).unwrap();
                        ids.extend_from_slice(&batch);
                    } else {
                        ids.push(g.next_id().unwrap());
                    }
                }
                ids
            })
        })
        .collect();
    (clock, handles.into_iter().map(|h| h.join().unwrap()).collect())
}

/// Duplicates among lists that are each strictly increasing, by merging them.
fn merged_duplicates(lists: &[Vec<u64>]) -> usize {
    let mut at = vec![0usize; lists.len()];
    let (mut last, mut duplicates) = (None, 0);
    while let Some(k) = (0..lists.len()).filter(|&k| at[k] < lists[k].len()).min_by_key(|&k| lists[k][at[k]]) {
        let id = lists[k][at[k]];
        at[k] += 1;
        if last == Some(id) {
            duplicates += 1;
        }
        last = Some(id);
    }
    duplicates
}

#[test]
#[ignore = "stress: run by npm run test:slow (cargo test -- --ignored)"]
fn four_threads_take_ten_million_ids_each_without_a_duplicate() {
    let (clock, lists) = threads_take(Widths::default(), 4, 10_000_000, 1_000);
    for ids in &lists {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "each thread sees increasing ids");
    }
    assert_eq!(merged_duplicates(&lists), 0);
    // The clock moved on many times, so the ids span many ms: the fast path's new-ms case ran, not only the
    // same-ms one.
    assert!(clock.get() > NOW + 5_000, "the clock moved only to {}", clock.get());
}

#[test]
fn four_threads_on_a_wide_sequence_take_ids_without_a_duplicate() {
    // Sequence values to spare, so threads take ids of one ms together, mixed with batches, over many ms.
    let (clock, lists) = threads_take(WIDE, 4, 3_000_000, 1_000);
    for ids in &lists {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "each thread sees increasing ids");
    }
    assert_eq!(merged_duplicates(&lists), 0);
    assert!(clock.get() > NOW + 5_000, "the clock moved only to {}", clock.get());
}

#[test]
fn threads_never_collide_across_steps_back() {
    threads_never_collide_across_steps_back_in(Widths::default());
    threads_never_collide_across_steps_back_in(WIDE);
}

fn threads_never_collide_across_steps_back_in(w: Widths) {
    let clock = FakeClock::ticking(NOW, 300);
    let store = Arc::new(MemStore::default());
    let s = settings(w, ClockBackPolicy::Bits);
    let state = Shared::new(State::resume(&s, 0, Vec::new(), store.clone(), &clock).unwrap(), &s.layout);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    ids.push(g.next_id().unwrap());
                }
                ids
            })
        })
        .collect();
    // Three steps back of 50 ms (the layout's clockBack values are 0 to 3), while the threads take ids. Each
    // waits for the one before it to be taken by some thread's id (on a busy machine the threads may not run for
    // a while, and two steps with no id between them are one step of 100 ms).
    let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
    for step in 1..=3 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        clock.step_back(50);
        let waited = std::time::Instant::now();
        while g.snapshot().stats.clock_back_events < step {
            assert!(waited.elapsed() < std::time::Duration::from_secs(60), "no thread took an id after step {step}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.store(true, Ordering::SeqCst);
    let lists: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(g.snapshot().stats.clock_back_events, 3);
    let mut all: Vec<u64> = lists.concat();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicates among {n} ids");
    // Every id is covered by a mark written for its clockBack value.
    let writes = store.writes.lock().clone();
    for id in all.iter().step_by(97) {
        let f = fields(&g, *id);
        let unix = f.timestamp + DEFAULT_EPOCH;
        assert!(writes.iter().any(|&(c, until)| c == f.clock_back && until >= unix), "id {id:#x} is not covered");
    }
}

#[test]
fn no_thread_issues_an_id_past_a_fence() {
    no_thread_issues_an_id_past_a_fence_in(Widths::default());
    no_thread_issues_an_id_past_a_fence_in(WIDE);
}

fn no_thread_issues_an_id_past_a_fence_in(w: Widths) {
    let clock = FakeClock::ticking(NOW, 500);
    let s = settings(w, ClockBackPolicy::Bits);
    let state = Shared::new(State::new(0), &s.layout);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                loop {
                    match g.next_id() {
                        Ok(id) => ids.push(id),
                        Err(e) => return (ids, e.code()),
                    }
                }
            })
        })
        .collect();
    let g = Generator::new(s, state, clock.clone()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    g.set_deadline(0);
    // The fence is up: the last id the state knows of is the last id any thread gets.
    let fenced = last_issued(&g);
    let highest = g.highest_ms();
    let mut issued = 0;
    for h in handles {
        let (ids, code) = h.join().unwrap();
        assert_eq!(code, Code::LeaseLost);
        assert!(ids.iter().all(|&id| id <= fenced), "an id past the fence {fenced:#x}");
        assert!(ids.iter().all(|&id| fields(&g, id).timestamp + DEFAULT_EPOCH <= highest));
        issued += ids.len();
    }
    assert!(issued > 1_000, "the threads took only {issued} ids before the fence");
}

fn leading(lead: u64, clock: &FakeClock) -> Generator<FakeClock> {
    let s = Settings { max_lead_ms: lead, ..settings(Widths::default(), ClockBackPolicy::Throw) };
    Generator::new(s, Shared::new(State::new(0), &s.layout), clock.clone()).unwrap()
}

#[test]
fn borrowing_goes_up_to_the_lead_and_no_further() {
    let clock = FakeClock::at(NOW);
    let g = leading(5, &clock);
    let mut last = 0;
    // With the clock frozen, 6 ms worth of ids (this ms and 5 borrowed) come out without waiting.
    for i in 0..6 * 4096u64 {
        let id = g.next_id().unwrap();
        assert!(id > last);
        last = id;
        let f = fields(&g, id);
        assert_eq!(f.timestamp, NOW - DEFAULT_EPOCH + i / 4096);
    }
    assert_eq!(g.snapshot().lead_ms, 5);
    assert_eq!(g.snapshot().stats.waits, 0);
    // The next id would need a 6th ms ahead: it waits for the clock instead.
    let c2 = clock.clone();
    let mover = std::thread::spawn(move || {
        let reads = c2.reads();
        while c2.reads() < reads + 500 {
            std::thread::yield_now();
        }
        c2.set(NOW + 1);
    });
    let f = fields(&g, g.next_id().unwrap());
    mover.join().unwrap();
    assert_eq!(f.timestamp, NOW + 6 - DEFAULT_EPOCH);
    let s = g.snapshot().stats;
    assert_eq!((s.waits, s.sequence_waits, s.sequence_wait_ms), (1, 1, 1), "a sequence wait of 1 ms");
}

#[test]
fn zero_lead_never_runs_ahead_of_the_clock() {
    let clock = FakeClock::ticking(NOW, 300);
    let g = leading(0, &clock);
    for _ in 0..20_000 {
        let id = g.next_id().unwrap();
        assert!(fields(&g, id).timestamp + DEFAULT_EPOCH <= clock.get());
    }
}

#[test]
fn steps_back_inside_the_lead_stay_increasing_without_clock_back() {
    let clock = FakeClock::at(NOW);
    let s = Settings { max_lead_ms: 50, ..settings(Widths::default(), ClockBackPolicy::Bits) };
    let g = Generator::new(s, Shared::new(State::new(0), &s.layout), clock.clone()).unwrap();
    let mut last = g.next_id().unwrap();
    for back in [10u64, 50, 1, 30] {
        clock.set(NOW - back);
        for _ in 0..100 {
            let id = g.next_id().unwrap();
            assert!(id > last);
            assert_eq!(fields(&g, id).clock_back, 0);
            last = id;
        }
    }
    assert_eq!(g.snapshot().stats.clock_back_events, 0);
    // A step back past the lead is a real one.
    clock.set(NOW - 51);
    assert_eq!(fields(&g, g.next_id().unwrap()).clock_back, 1);
    assert_eq!(g.snapshot().stats.clock_back_events, 1);
}

#[test]
fn a_generator_without_lead_tolerates_a_shared_state_that_borrowed() {
    let clock = FakeClock::at(NOW);
    let state = Shared::new(State::new(0), &layout(Widths::default()));
    let s = settings(Widths::default(), ClockBackPolicy::Throw);
    let eager = Generator::new(Settings { max_lead_ms: 3, ..s }, state.clone(), clock.clone()).unwrap();
    let strict = Generator::new(s, state, clock.clone()).unwrap();
    let mut last = 0;
    for _ in 0..2 * 4096 + 10 {
        last = eager.next_id().unwrap();
    }
    // The shared state is 2 ms ahead with room left in that ms: the strict generator carries on from there
    // instead of throwing.
    let id = strict.next_id().unwrap();
    assert!(id > last);
    assert_eq!(fields(&strict, id).timestamp + DEFAULT_EPOCH, NOW + 2);
}

#[test]
fn marks_are_written_once_per_window_and_before_the_ids_they_cover() {
    let (clock, store, g) = with_store(0);
    for ms in 0..3_000u64 {
        clock.set(NOW + ms);
        for _ in 0..10 {
            let id = g.next_id().unwrap();
            let ts = fields(&g, id).timestamp + DEFAULT_EPOCH;
            let covered = store.writes.lock().iter().any(|&(c, until)| c == 0 && until >= ts);
            assert!(covered, "id at {ts} issued before a mark covered it");
        }
    }
    // 3 s of ids, a window of 100 ms: one write at the start and one per window after it.
    let expected: Vec<(u32, u64)> = (0..30).map(|i| (0, NOW + 100 + i * 101)).collect();
    assert_eq!(*store.writes.lock(), expected);
    assert_eq!(g.snapshot().stats.mark_writes, 30);
    // A failed write stops generation past the mark instead of issuing ids the file does not cover.
    store.fail.store(true, Ordering::SeqCst);
    clock.set(NOW + 3029);
    g.next_id().unwrap();
    clock.set(NOW + 3030);
    assert_eq!(g.next_id().unwrap_err().code(), Code::LeaseDir);
}

#[test]
fn a_failed_mark_write_spends_no_clock_back_value() {
    let (clock, store, g) = with_store(0);
    let first = fields(&g, g.next_id().unwrap());
    assert_eq!(first.clock_back, 0);
    clock.set(NOW - 1_000);
    store.fail.store(true, Ordering::SeqCst);
    for _ in 0..5 {
        assert!(g.next_id().is_err(), "no id without a stored mark");
    }
    assert_eq!(g.snapshot().clock_back, 0, "the failed writes moved nothing");
    store.fail.store(false, Ordering::SeqCst);
    let after = fields(&g, g.next_id().unwrap());
    assert_eq!(after.clock_back, 1, "the next free value, not one past the failed attempts");
    assert_eq!(store.writes.lock().last(), Some(&(1, NOW - 1_000 + MARK_WINDOW_MS)));
    assert_eq!(g.snapshot().stats.clock_back_events, 1);
}

#[test]
fn marks_cover_the_lead() {
    let (clock, store, g) = with_store(200);
    let mut max_ts = 0;
    for _ in 0..150 * 4096 {
        max_ts = fields(&g, g.next_id().unwrap()).timestamp + DEFAULT_EPOCH;
    }
    assert_eq!(max_ts, NOW + 149, "borrowed 149 ms ahead");
    let marked = store.writes.lock().iter().map(|w| w.1).max().unwrap();
    assert!(marked >= max_ts, "mark {marked} covers the last borrowed id at {max_ts}");
    // At the edge of the lead, a mark per window of id time, as without a lead.
    clock.set(NOW + 1_000);
    for _ in 0..201 * 4096 {
        g.next_id().unwrap();
    }
    assert_eq!(g.snapshot().lead_ms, 200);
    let writes = store.writes.lock().len();
    for ms in 1..=1_000 {
        clock.set(NOW + 1_000 + ms);
        for _ in 0..4096 {
            g.next_id().unwrap();
        }
    }
    assert_eq!(g.snapshot().lead_ms, 200);
    let n = store.writes.lock().len() - writes;
    assert!((9..=10).contains(&n), "1 s of ids at the edge of a 200 ms lead: a write per 100 ms window, found {n}");
}

fn resume_with(policy: ClockBackPolicy, earlier: Vec<(u32, u64)>, clock: &FakeClock) -> Result<Generator<FakeClock>> {
    let s = Settings { max_wait_ms: 100, ..settings(Widths::default(), policy) };
    let st = State::resume(&s, 0, earlier, Arc::new(MemStore::default()), clock)?;
    Generator::new(s, Shared::new(st, &s.layout), clock.clone())
}

#[test]
fn a_new_holder_moves_past_a_mark_just_ahead_at_once_under_bits() {
    let clock = FakeClock::at(NOW);
    let g = resume_with(ClockBackPolicy::Bits, vec![(0, NOW + 60)], &clock).unwrap();
    assert_eq!(clock.slept(), 0, "the first id does not wait");
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!((f.clock_back, f.timestamp + DEFAULT_EPOCH), (1, NOW));
    let stats = g.snapshot().stats;
    assert_eq!((stats.waits, stats.clock_back_events), (0, 1));
    // Every value after the configured one ahead too: the next free one is taken, skipping those.
    let clock = FakeClock::at(NOW);
    let g = resume_with(ClockBackPolicy::Bits, vec![(0, NOW + 60), (1, NOW + 5), (2, NOW)], &clock).unwrap();
    assert_eq!((clock.slept(), fields(&g, g.next_id().unwrap()).clock_back), (0, 3));
}

#[test]
fn a_new_holder_waits_for_a_mark_just_ahead_when_no_other_value_is_free() {
    // Under `Wait` and `Throw` (no clockBack value spent), and under `Bits` when every value is ahead.
    let all_ahead = vec![(0, NOW + 60), (1, NOW + 10), (2, NOW + 10), (3, NOW + 10)];
    for (policy, marks) in [
        (ClockBackPolicy::Bits, all_ahead),
        (ClockBackPolicy::Wait, vec![(0, NOW + 60)]),
        (ClockBackPolicy::Throw, vec![(0, NOW + 60)]),
    ] {
        let clock = FakeClock::at(NOW);
        let g = resume_with(policy, marks, &clock).unwrap();
        assert_eq!(clock.slept(), 61, "{policy:?}");
        let f = fields(&g, g.next_id().unwrap());
        assert_eq!((f.clock_back, f.timestamp + DEFAULT_EPOCH), (0, NOW + 61));
        let s = g.snapshot().stats;
        assert_eq!((s.waits, s.mark_waits, s.mark_wait_ms, s.sequence_waits), (1, 1, 61, 0), "{policy:?}");
    }
    // A layout with no clockBack bits has no other value to move to.
    let clock = FakeClock::at(NOW);
    let w = Widths { clock_back: 0, ..Widths::default() };
    let s = settings(w, ClockBackPolicy::Bits);
    let st = State::resume(&s, 0, vec![(0, NOW + 60)], Arc::new(MemStore::default()), &clock).unwrap();
    let g = Generator::new(s, Shared::new(st, &s.layout), clock.clone()).unwrap();
    assert_eq!((clock.slept(), fields(&g, g.next_id().unwrap()).timestamp + DEFAULT_EPOCH), (61, NOW + 61));
}

#[test]
fn a_new_holder_far_behind_the_mark_moves_to_a_free_clock_back_or_fails() {
    // 5 s behind the mark for clockBack 0, and clockBack 1 reserved too: 'bits' takes 2.
    let clock = FakeClock::at(NOW);
    let g = resume_with(ClockBackPolicy::Bits, vec![(0, NOW + 5000), (1, NOW + 4000), (2, NOW - 1)], &clock).unwrap();
    assert_eq!(clock.slept(), 0, "no point waiting past maxWaitMs");
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!((f.clock_back, f.timestamp + DEFAULT_EPOCH), (2, NOW));
    assert_eq!(g.snapshot().stats.clock_back_events, 1);
    // Stepping back later must skip values earlier holders reserved (0 and 1), and wrap to 2 is refused.
    clock.set(NOW - 10);
    let f = fields(&g, g.next_id().unwrap());
    assert_eq!(f.clock_back, 3);
    clock.set(NOW - 20);
    assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);

    for policy in [ClockBackPolicy::Wait, ClockBackPolicy::Throw] {
        let clock = FakeClock::at(NOW);
        let e = resume_with(policy, vec![(0, NOW + 5000)], &clock).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::ClockBackwards, "{policy:?}");
        assert!(e.message().contains("5000 ms behind"), "{e}");
    }
    let clock = FakeClock::at(NOW);
    let all: Vec<_> = (0..4).map(|c| (c, NOW + 5000)).collect();
    let e = resume_with(ClockBackPolicy::Bits, all, &clock).map(|_| ()).unwrap_err();
    assert!(e.message().ends_with("every clockBack value is reserved past the clock"), "{e}");
}

#[test]
fn a_new_holder_never_reissues_an_earlier_holders_ids() {
    // Simulate holder A issuing ids with marks, then a restart with the clock 3 s behind: B's ids must all
    // differ from A's, under 'bits' (waiting is impossible: maxWaitMs is 100).
    let clock = FakeClock::ticking(NOW, 40);
    let store_a = Arc::new(MemStore::default());
    let s = Settings { max_wait_ms: 100, ..settings(Widths::default(), ClockBackPolicy::Bits) };
    let a = Generator::new(
        s,
        Shared::new(State::resume(&s, 0, Vec::new(), store_a.clone(), &clock).unwrap(), &s.layout),
        clock.clone(),
    )
    .unwrap();
    let ids_a: HashSet<u64> = (0..100_000).map(|_| a.next_id().unwrap()).collect();
    let marks: Vec<(u32, u64)> = {
        let w = store_a.writes.lock();
        let mut best: Vec<(u32, u64)> = Vec::new();
        for &(c, m) in w.iter() {
            match best.iter_mut().find(|(bc, _)| *bc == c) {
                Some(e) => e.1 = e.1.max(m),
                None => best.push((c, m)),
            }
        }
        best
    };
    clock.set(NOW - 3000);
    let b = Generator::new(
        s,
        Shared::new(State::resume(&s, 0, marks, Arc::new(MemStore::default()), &clock).unwrap(), &s.layout),
        clock.clone(),
    )
    .unwrap();
    for _ in 0..200_000 {
        assert!(!ids_a.contains(&b.next_id().unwrap()));
    }
}

#[test]
fn fill_gives_the_same_ids_as_single_calls_would() {
    let clock = FakeClock::ticking(NOW, 3);
    let a = leading(0, &clock);
    let mut batch = vec![0u64; 10_000];
    a.fill(&mut batch).unwrap();
    assert!(batch.windows(2).all(|w| w[0] < w[1]), "increasing");
    // Runs never cross a ms: sequence values restart at 0 in each new ms.
    for w in batch.windows(2) {
        let (f0, f1) = (fields(&a, w[0]), fields(&a, w[1]));
        assert!(
            f1.timestamp > f0.timestamp && f1.sequence == 0
                || f1.timestamp == f0.timestamp && f1.sequence == f0.sequence + 1
        );
    }
    // Interleaved with single ids, still strictly increasing.
    let single = a.next_id().unwrap();
    assert!(single > batch[batch.len() - 1]);
    a.fill(&mut batch[..5]).unwrap();
    assert!(batch[0] > single);
    let mut empty: [u64; 0] = [];
    a.fill(&mut empty).unwrap();
}

#[test]
fn fill_borrows_within_the_lead_and_writes_marks() {
    let (clock, store, g) = with_store(100);
    let mut batch = vec![0u64; 50 * 4096];
    let reads = clock.reads();
    g.fill(&mut batch).unwrap();
    assert_eq!(fields(&g, batch[batch.len() - 1]).timestamp + DEFAULT_EPOCH, NOW + 49);
    assert_eq!(clock.reads() - reads, 50, "one clock read per run");
    let marked = store.writes.lock().iter().map(|w| w.1).max().unwrap();
    assert!(marked >= NOW + 49);
}
