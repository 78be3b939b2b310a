//! The generator state machine.
//!
//! A [`Generator`] issues ids for one identity (layout, epoch, datacenterId, workerId). Its sequencing policy:
//!
//! - **Same ms:** the sequence counts up. When it is exhausted, the generator waits for the next ms; it never wraps
//!   and never reuses a sequence value.
//! - **Clock moved backwards** (a reading earlier than the last id's timestamp), by [`ClockBackPolicy`]:
//!   `Bits` adds 1 to clockBack and carries on from the earlier time, and fails once clockBack would come back round
//!   to its starting value; `Wait` sleeps until the clock catches up, within `max_wait_ms`; `Throw` fails at once.
//! - **End of the timestamp field:** fails with `TimeExhausted` rather than overflow into other fields.
//! - **Threads:** the state sits behind a mutex shared by every generator of the identity, and the clock is read
//!   while it is held, so concurrent callers never see each other's readings as a step backwards.

use std::sync::Arc;

use parking_lot::Mutex;

use super::error::{Class, Code, Error, Result};
use super::layout::{max_value, Fields, Layout};
use super::time::format_iso;

/// Where the generator reads the time, and how it sleeps. Injected so tests can drive it.
pub trait Clock: Send + Sync {
    /// Unix time in ms.
    fn now_ms(&self) -> u64;
    fn sleep_ms(&self, ms: u64);
}

/// The system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    fn sleep_ms(&self, ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// What to do when the clock reads earlier than the last id's timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockBackPolicy {
    /// Add 1 to clockBack and carry on from the earlier time (the JS article's policy).
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

/// The mutable state of one identity.
#[derive(Debug)]
pub struct State {
    /// Timestamp (ms since the epoch) of the last id issued.
    last: u64,
    /// The sequence value the next id in `last` takes.
    next_seq: u64,
    clock_back: u32,
    start_clock_back: u32,
}

impl State {
    pub fn new(clock_back: u32) -> Self {
        State { last: 0, next_seq: 0, clock_back, start_clock_back: clock_back }
    }

    pub fn start_clock_back(&self) -> u32 {
        self.start_clock_back
    }

    pub fn clock_back(&self) -> u32 {
        self.clock_back
    }
}

pub type SharedState = Arc<Mutex<State>>;

/// Everything a generator needs besides its state and clock.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub layout: Layout,
    pub datacenter_id: u32,
    pub worker_id: u32,
    pub policy: ClockBackPolicy,
    pub max_wait_ms: u64,
}

pub struct Generator<C: Clock> {
    settings: Settings,
    /// datacenterId and workerId, already in place.
    fixed: u64,
    epoch: u64,
    max_timestamp: u64,
    max_sequence: u64,
    clock_back_mask: u32,
    timestamp_shift: u32,
    clock_back_shift: u32,
    state: SharedState,
    clock: C,
}

impl<C: Clock> Generator<C> {
    /// A generator over `state`, or an error when the ids in `settings` do not fit its layout.
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
                        "datacenterId within 0..={} and workerId within 0..={}",
                        max_value(w.datacenter),
                        max_value(w.worker)
                    ),
                    &format!("datacenterId {} and workerId {}", settings.datacenter_id, settings.worker_id),
                )
            })?;
        Ok(Generator {
            settings,
            fixed,
            epoch: layout.epoch(),
            max_timestamp: layout.max_timestamp(),
            max_sequence: max_value(layout.widths().sequence),
            clock_back_mask: max_value(layout.widths().clock_back) as u32,
            timestamp_shift: layout.timestamp_shift(),
            clock_back_shift: layout.clock_back_shift(),
            state,
            clock,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn layout(&self) -> &Layout {
        &self.settings.layout
    }

    /// The next id.
    #[inline]
    pub fn next_id(&self) -> Result<u64> {
        let mut st = self.state.lock();
        self.step(&mut st)
    }

    fn step(&self, st: &mut State) -> Result<u64> {
        let mut waited = 0u64;
        loop {
            let now = self.clock.now_ms();
            let Some(t) = now.checked_sub(self.epoch) else {
                return Err(self.before_epoch(now));
            };
            if t > st.last {
                if t > self.max_timestamp {
                    return Err(self.exhausted(now));
                }
                st.last = t;
                st.next_seq = 1;
                return Ok(self.compose(t, st.clock_back, 0));
            }
            if t == st.last {
                if st.next_seq <= self.max_sequence {
                    let seq = st.next_seq;
                    st.next_seq += 1;
                    return Ok(self.compose(t, st.clock_back, seq));
                }
                // Sequence exhausted in this ms: spin until the clock reads a later ms.
                std::hint::spin_loop();
                continue;
            }
            let offset = st.last - t;
            match self.settings.policy {
                ClockBackPolicy::Bits => {
                    let next = (st.clock_back + 1) & self.clock_back_mask;
                    if next == st.start_clock_back {
                        return Err(self.backwards(st, now, offset, "every clockBack value has been used"));
                    }
                    // The new clockBack value has issued nothing yet, so the earlier time is free under it.
                    st.clock_back = next;
                    st.last = t;
                    st.next_seq = 1;
                    return Ok(self.compose(t, next, 0));
                }
                ClockBackPolicy::Wait => {
                    if waited + offset > self.settings.max_wait_ms {
                        let why = format!(
                            "onClockBack is 'wait' and catching up would exceed maxWaitMs {} (waited {waited} ms)",
                            self.settings.max_wait_ms
                        );
                        return Err(self.backwards(st, now, offset, &why));
                    }
                    self.clock.sleep_ms(offset);
                    waited += offset;
                }
                ClockBackPolicy::Throw => {
                    return Err(self.backwards(st, now, offset, "onClockBack is 'throw'"));
                }
            }
        }
    }

    #[inline]
    fn compose(&self, t: u64, clock_back: u32, seq: u64) -> u64 {
        (t << self.timestamp_shift) | self.fixed | (u64::from(clock_back) << self.clock_back_shift) | seq
    }

    fn backwards(&self, st: &State, now: u64, offset: u64, why: &str) -> Error {
        let last = st.last + self.epoch;
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

    fn before_epoch(&self, now: u64) -> Error {
        Error::new(
            Code::ClockBackwards,
            Class::Error,
            format!(
                "clock: expected a time at or after the epoch {} ({}), found {now} ({})",
                self.epoch,
                format_iso(self.epoch),
                format_iso(now)
            ),
        )
    }

    fn exhausted(&self, now: u64) -> Error {
        let end = self.epoch + self.max_timestamp;
        Error::new(
            Code::TimeExhausted,
            Class::Error,
            format!(
                "timestamp: expected a time no later than expiresAt {end} ({}), found {now} ({}); the layout's {}-bit \
                 timestamp field is exhausted",
                format_iso(end),
                format_iso(now),
                self.settings.layout.timestamp_bits()
            ),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::layout::{Widths, DEFAULT_EPOCH};
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub const NOW: u64 = 1_795_000_000_000;

    /// A clock the test sets by hand. With `tick_every` > 0 it also moves 1 ms forward after that many reads, as a
    /// real clock does while a caller spins.
    #[derive(Clone, Default)]
    pub struct FakeClock {
        now: Arc<AtomicU64>,
        reads: Arc<AtomicU64>,
        tick_every: u64,
        slept: Arc<AtomicU64>,
        /// When false, sleeping does not move the clock: a clock that stays behind.
        sleep_moves: bool,
    }

    impl FakeClock {
        pub fn at(now: u64) -> Self {
            FakeClock { now: Arc::new(AtomicU64::new(now)), sleep_moves: true, ..Default::default() }
        }
        pub fn ticking(now: u64, tick_every: u64) -> Self {
            FakeClock { tick_every, ..Self::at(now) }
        }
        pub fn set(&self, now: u64) {
            self.now.store(now, Ordering::SeqCst);
        }
        pub fn get(&self) -> u64 {
            self.now.load(Ordering::SeqCst)
        }
        pub fn reads(&self) -> u64 {
            self.reads.load(Ordering::SeqCst)
        }
        pub fn slept(&self) -> u64 {
            self.slept.load(Ordering::SeqCst)
        }
    }

    impl Clock for FakeClock {
        fn now_ms(&self) -> u64 {
            let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
            if self.tick_every > 0 && n.is_multiple_of(self.tick_every) {
                return self.now.fetch_add(1, Ordering::SeqCst) + 1;
            }
            self.now.load(Ordering::SeqCst)
        }
        fn sleep_ms(&self, ms: u64) {
            self.slept.fetch_add(ms, Ordering::SeqCst);
            if self.sleep_moves {
                self.now.fetch_add(ms, Ordering::SeqCst);
            }
        }
    }

    pub fn settings(widths: Widths, policy: ClockBackPolicy) -> Settings {
        Settings {
            layout: Layout::new(widths, DEFAULT_EPOCH, NOW).unwrap(),
            datacenter_id: 1,
            worker_id: 3,
            policy,
            max_wait_ms: 1000,
        }
    }

    fn generator(policy: ClockBackPolicy, clock: &FakeClock) -> Generator<FakeClock> {
        let state = Arc::new(Mutex::new(State::new(0)));
        Generator::new(settings(Widths::default(), policy), state, clock.clone()).unwrap()
    }

    fn fields(g: &Generator<FakeClock>, id: u64) -> Fields {
        g.layout().unpack(id)
    }

    #[test]
    fn ids_carry_the_identity_and_the_time() {
        let clock = FakeClock::at(NOW);
        let g = generator(ClockBackPolicy::Bits, &clock);
        let f = fields(&g, g.next_id().unwrap());
        assert_eq!(f, Fields { timestamp: NOW - DEFAULT_EPOCH, datacenter_id: 1, worker_id: 3, clock_back: 0, sequence: 0 });
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
        // generator spins.
        let c2 = clock.clone();
        let mover = std::thread::spawn(move || {
            while c2.reads() < 4096 + 1000 {
                std::thread::yield_now();
            }
            c2.set(NOW + 1);
        });
        let f = fields(&g, g.next_id().unwrap());
        mover.join().unwrap();
        assert_eq!((f.timestamp, f.sequence), (NOW + 1 - DEFAULT_EPOCH, 0));
        assert!(clock.reads() > 4096 + 1000, "it spun on the clock");
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
        // Still behind: it keeps refusing rather than reusing clockBack 1.
        assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
        // Once the clock is past the last id, generation carries on under clockBack 3.
        clock.set(NOW - 29);
        let f = issue(&g);
        assert_eq!((f.clock_back, f.timestamp), (3, NOW - 29 - DEFAULT_EPOCH));
    }

    #[test]
    fn clock_back_wraps_from_a_nonzero_start_value() {
        let clock = FakeClock::at(NOW);
        let state = Arc::new(Mutex::new(State::new(2)));
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
        let g = Generator::new(settings(w, ClockBackPolicy::Bits), Arc::new(Mutex::new(State::new(0))), clock.clone()).unwrap();
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

        // A clock that stays behind while we sleep: total sleep stays within the bound.
        let stuck = FakeClock { sleep_moves: false, ..FakeClock::at(NOW) };
        let g = generator(ClockBackPolicy::Wait, &stuck);
        g.next_id().unwrap();
        stuck.set(NOW - 400);
        assert_eq!(g.next_id().unwrap_err().code(), Code::ClockBackwards);
        assert_eq!(stuck.slept(), 800);
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
    }

    #[test]
    fn threads_sharing_a_state_never_collide() {
        let clock = FakeClock::ticking(NOW, 500);
        let state = Arc::new(Mutex::new(State::new(0)));
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
}
