//! The generator state machine.
//!
//! A [`Generator`] issues ids for one identity (layout, epoch, datacenterId, workerId). Its sequencing policy:
//!
//! - **Same ms:** the sequence counts up. When it is exhausted, the generator moves on to the next ms: at once if
//!   that stays within `max_lead_ms` of the clock (bounded borrowing), else when the clock gets there. It never
//!   wraps and never reuses a sequence value.
//! - **Clock moved backwards** by more than the lead the state allows (a smaller step continues from the last
//!   timestamp, strictly increasing, with no clockBack bit used), by [`ClockBackPolicy`]: `Bits` moves to the next
//!   clockBack value that is free at the earlier time and carries on from it, and fails once clockBack would come
//!   back round to its starting value; `Wait` sleeps until the clock catches up, within `max_wait_ms`; `Throw` fails.
//! - **End of the timestamp field:** fails with `TimeExhausted` rather than overflow into other fields.
//! - **Restarts:** with a [`MarkStore`] (the host lease), no id is issued past the stored mark of its clockBack
//!   value until a later mark is written. A new holder of the slot starts past the marks earlier holders left (see
//!   [`State::resume`]), so it never issues an id an earlier holder may have issued.
//! - **Threads:** every generator of the identity shares one [`Shared`]: the state machine behind a mutex, and a
//!   lock-free fast path in front of it for the two common cases (a later ms the stored mark covers, or the same ms
//!   with sequence values left). The fast path takes an id with one compare-and-swap on the last id issued; anything
//!   else goes through the mutex, where the clock is read while it is held. [`Shared`] argues why the two never
//!   issue the same id, and why nothing passes a fence.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::error::{Class, Code, Error, Result};
use super::layout::{max_value, Fields, Layout};
use super::time::format_iso;

/// A mark covers ids this far past the one that made it be written: one write per window, never per id. A
/// process that takes over the slot waits out at most this (plus the lead), so it is kept well under the default
/// `maxWaitMs`: a restart then waits briefly instead of spending a clockBack value.
pub const MARK_WINDOW_MS: u64 = 100;

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
    /// `CLOCK_REALTIME`, the clock `SystemTime::now()` reads, without its `Duration` arithmetic. A time before 1970
    /// (or a failed read) is 0, which the generator refuses as before its epoch.
    #[cfg(unix)]
    #[inline]
    fn now_ms(&self) -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid out-pointer for the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        if rc != 0 || ts.tv_sec < 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
    }

    #[cfg(not(unix))]
    #[inline]
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }

    fn sleep_ms(&self, ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// The mark for `clock_back` among (clockBack, Unix ms) pairs holding at most one per value: 0 when there is none.
pub fn mark_of(marks: &[(u32, u64)], clock_back: u32) -> u64 {
    marks.iter().find(|(c, _)| *c == clock_back).map_or(0, |(_, m)| *m)
}

/// Durable high-water marks: "ids under clockBack `c` may have been issued up to Unix ms `until`".
pub trait MarkStore: Send + Sync {
    /// Stores the mark before returning; the generator issues nothing past the old mark unless this succeeds.
    fn reserve(&self, clock_back: u32, until: u64, now: u64) -> Result<()>;
}

impl MarkStore for super::lease::Lease {
    fn reserve(&self, clock_back: u32, until: u64, now: u64) -> Result<()> {
        super::lease::Lease::reserve(self, clock_back, until, now)
    }
}

/// What to do when the clock reads earlier than the last id's timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// Counters of one identity's state, since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Steps back the clock took that moved clockBack to a new value.
    pub clock_back_events: u64,
    /// Calls that had to wait: for the next ms, for the clock to catch up, or for an earlier holder's mark.
    pub waits: u64,
    /// High-water marks written.
    pub mark_writes: u64,
}

/// The mutable state of one identity.
pub struct State {
    /// Timestamp (ms since the epoch) of the last id issued.
    last: u64,
    /// The largest `last` had before a step back moved it to an earlier time under another clockBack value: with
    /// `last`, it bounds every id of this state, under any clockBack value.
    highest: u64,
    /// The sequence value the next id in `last` takes.
    next_seq: u64,
    clock_back: u32,
    start_clock_back: u32,
    /// The clockBack the state was configured with (`start_clock_back` may differ after [`State::resume`]).
    configured_clock_back: u32,
    /// How far `last` may run ahead of the clock: the largest `max_lead_ms` of the generators sharing the state.
    tolerance: u64,
    /// Marks that earlier holders of the slot left, per clockBack value (Unix ms).
    earlier: Vec<(u32, u64)>,
    /// Unix ms up to which ids under the current clockBack are covered by a stored mark.
    reserved_until: u64,
    store: Option<Arc<dyn MarkStore>>,
    /// Unix ms from which no id may be issued: the deadline of a lease held elsewhere (Redis), renewed from
    /// outside. `u64::MAX` when there is none.
    deadline: u64,
    /// Why the state was stopped for good (see [`Shared::stop`]): the error every call returns from then on.
    lost: Option<Error>,
    stats: Stats,
}

impl State {
    /// A state with no history and no mark store.
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
            store: None,
            deadline: u64::MAX,
            lost: None,
            stats: Stats::default(),
        }
    }

    /// A state for a slot whose earlier holders left `earlier` marks, writing its own marks to `store`.
    ///
    /// Invariant: no id is issued under a clockBack value `c` at a time at or before `earlier[c]`, so no id an
    /// earlier holder may have issued is issued again. When the configured clockBack's mark is ahead of the clock
    /// (a restart right after the previous holder), under `Bits` the state starts at once from the next clockBack
    /// value whose mark is already past, so that the first id does not wait. Otherwise (under `Wait` and `Throw`,
    /// or when every other value's mark is ahead too) it waits for the clock to pass the mark, within
    /// `max_wait_ms`. Beyond that, under `Bits` it starts from the next clockBack value whose mark is past by then;
    /// under `Wait` and `Throw` it fails.
    pub fn resume(
        settings: &Settings,
        clock_back: u32,
        earlier: Vec<(u32, u64)>,
        store: Arc<dyn MarkStore>,
        clock: &dyn Clock,
    ) -> Result<State> {
        let mut st = State { earlier, reserved_until: 0, store: Some(store), ..State::new(clock_back) };
        let mask = max_value(settings.layout.widths().clock_back) as u32;
        let mut now = clock.now_ms();
        if settings.policy == ClockBackPolicy::Bits && st.earlier_mark(clock_back) >= now {
            if let Some(c) = st.next_free_clock_back(mask, now) {
                st.move_start(c);
                return Ok(st);
            }
        }
        let mut waited = 0;
        while st.earlier_mark(clock_back) >= now {
            let need = st.earlier_mark(clock_back) - now + 1;
            if waited + need > settings.max_wait_ms {
                break;
            }
            if waited == 0 {
                st.stats.waits += 1;
            }
            clock.sleep_ms(need);
            waited += need;
            now = clock.now_ms();
        }
        let mark = st.earlier_mark(clock_back);
        if mark < now {
            return Ok(st);
        }
        let ahead = format!(
            "clock: expected a time past {mark} ({}), the mark an earlier holder of this slot left for clockBack \
             {clock_back}, found {now} ({}), {} ms behind it after waiting {waited} ms (maxWaitMs {})",
            format_iso(mark),
            format_iso(now),
            mark - now,
            settings.max_wait_ms
        );
        if settings.policy != ClockBackPolicy::Bits {
            let why = format!("{ahead}; onClockBack is '{}'", settings.policy.as_str());
            return Err(Error::new(Code::ClockBackwards, Class::Error, why));
        }
        let Some(c) = st.next_free_clock_back(mask, now) else {
            let why = format!("{ahead}; every clockBack value is reserved past the clock");
            return Err(Error::new(Code::ClockBackwards, Class::Error, why));
        };
        st.move_start(c);
        Ok(st)
    }

    /// Starts the state on clockBack value `c` instead of the configured one (whose mark is ahead of the clock).
    fn move_start(&mut self, c: u32) {
        self.clock_back = c;
        self.start_clock_back = c;
        self.stats.clock_back_events += 1;
    }

    /// Whether `resume` could start on a slot whose earlier holders left `earlier` marks, at `now`: the configured
    /// clockBack's mark is passed within `max_wait_ms`, or, under `Bits`, another clockBack value is free.
    pub fn usable(settings: &Settings, clock_back: u32, earlier: &[(u32, u64)], now: u64) -> bool {
        let mark = mark_of(earlier, clock_back);
        if mark < now || mark - now < settings.max_wait_ms {
            return true;
        }
        if settings.policy != ClockBackPolicy::Bits {
            return false;
        }
        let values = max_value(settings.layout.widths().clock_back) + 1;
        let reserved = earlier.iter().filter(|(_, m)| *m >= now).count() as u64;
        values > reserved
    }

    fn earlier_mark(&self, clock_back: u32) -> u64 {
        mark_of(&self.earlier, clock_back)
    }

    /// The next clockBack value after the current one (counting round within `mask`) under which no earlier holder
    /// issued an id at or after `now`, or `None` once the count comes back round to the starting value.
    fn next_free_clock_back(&self, mask: u32, now: u64) -> Option<u32> {
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

    pub fn configured_clock_back(&self) -> u32 {
        self.configured_clock_back
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// The value of [`Shared::word`] while the fast path is closed. No id has every bit set (ids are below 2^63).
const CLOSED: u64 = u64::MAX;

/// Where every [`Shared::generation`] comes from: even numbers, each handed out once in the process, so a thread's
/// run (see [`Shared`]) can never match a section or a state other than the one it was claimed in, even when a freed
/// state's memory is reused.
static GENERATIONS: AtomicU64 = AtomicU64::new(2);

/// The bit of [`Shared::generation`] that says a run was claimed in this generation, so threads look for one.
const RUNS: u64 = 1;

/// The rest of a run of one ms claimed by one swap, which only this thread hands out (see [`Shared`]): `next` to
/// `last`, word values, valid while the state is still in `generation`.
#[derive(Clone, Copy)]
struct Run {
    generation: u64,
    next: u64,
    last: u64,
}

impl Run {
    /// No run: generation 0 is never handed out.
    const NONE: Run = Run { generation: 0, next: 1, last: 0 };
}

thread_local! {
    static RUN: std::cell::Cell<Run> = const { std::cell::Cell::new(Run::NONE) };
}

/// The most ids a thread claims at once (see [`Generator::run_len`]).
const MAX_RUN: u64 = 64;

/// A value on a cache line (and its neighbour, which some CPUs fetch in pairs) of its own.
#[repr(align(128))]
struct Line<T>(T);

/// The state of one identity, shared by its generators: the state machine, and the lock-free fast path over it.
///
/// # The fast path
///
/// `word` holds either [`CLOSED`] or the last id issued under the state, without its datacenterId and workerId bits
/// (constant for the identity): its timestamp, clockBack and sequence in place. While it is open, a caller reads
/// `word`, then `bound`, then the clock at `t` (ms since the epoch), and issues
/// - `t` with sequence 0 and the word's clockBack, when `t` is past the word's timestamp, or
/// - the word plus one, when `t` is the word's timestamp and its sequence is not the last,
///
/// both only when `t <= bound`, by a compare-and-swap of `word` from the value read to the id issued. Everything
/// else (no word, a full ms, a clock behind the word, a mark to write, a deadline) goes to the mutex.
///
/// # Runs
///
/// Threads that take every id from one word move its cache line between their cores on every id, and together make
/// fewer ids than one thread alone. So a caller whose swap lost to another's claims a run instead: up to
/// `run_len` consecutive ids of the ms (fewer when less is left), by one swap that moves the word to the last of
/// them, exactly as a batch does. Before that swap it sets the generation's `RUNS` flag. It returns the first id
/// and keeps the rest in a thread-local [`Run`], with the `generation` it read *before* it loaded the word. Later
/// calls on that thread hand out the run's ids, with no write to shared memory, while both hold:
/// - the generation is still the run's: no mutex section has begun since the run was claimed (each begins by
///   closing the word, then storing a new generation; a caller that reads the new one loads the word after the
///   swap to `CLOSED`, so it claims only from a word that section or a later one opened), and no swap has moved the
///   word to a later ms (one that does stores a new generation before it returns its id, when it reads the flag:
///   a swap that comes after a claim's reads the flag its claimer set before that claim's swap);
/// - the clock reads the run's ms.
///
/// Otherwise the run is dropped, and so are its unused ids, which the word already covers and nothing issues again.
/// A run is issued ids (the word moved past them when it was claimed), so points 1 to 5 below hold for it as for
/// ids the swap returns: its ids are unique, within the `bound` of the open run of swaps that claimed it (which
/// no section has changed since), and a fence, being a section, ends it. Each thread's ids still increase: a batch
/// drops the thread's run first, a section ends it, and a swap issues past it. Two threads' ids of one ms may
/// interleave, as two processes' do; an id asked for after another was returned is never of an earlier ms, even
/// when the clock steps back (a run dies with its ms, and a step back is the mutex's, with its policy).
///
/// # The mutex
///
/// Every section under the mutex that reads or changes the state machine first swaps `word` to `CLOSED` and takes
/// the word it held into the state (`last`, `next_seq`): the state then knows every id issued, and no fast-path
/// swap can succeed until the word is opened again. A section opens it again (stores `bound`, then the word) only
/// right after it has itself issued an id, and with that id. A section that issues none (a failed call, a deadline,
/// a mark taken in) leaves it closed, and the next call takes the mutex.
///
/// # Why no id is issued twice, and why nothing passes a fence
///
/// 1. **No word value comes back.** Every value the word takes, other than `CLOSED`, is an id just issued: a swap
///    puts in the id it issues, an opening puts in the id its section issued. Ids issued under the state are
///    distinct (each is issued by the state machine's rules from a state that knows every earlier id), so a value,
///    once replaced, never returns. This is what rules out ABA: a caller that read a word and was then held up for
///    any time can complete its swap only if the word still holds that very value, which means no mutex section
///    began in between (each begins by swapping in `CLOSED`) and no other id was issued in between.
/// 2. **The bound read is the bound of that word.** `bound` changes only inside a mutex section, after its swap to
///    `CLOSED` (Release store, Acquire load). The word a caller loads (Acquire) is in the release sequence of the
///    opening that began its run of swaps, whose `bound` store came before it: the caller sees that bound or a later
///    one. A later one was stored after a later swap to `CLOSED`, which then happens before the caller's swap, and
///    that swap fails (the word never returns to the value it expects, by 1). So a swap that succeeds was computed
///    from the bound of its own open run, and `bound` (the stored mark, the lease deadline, the end of the
///    timestamp field) holds for every id the fast path issues.
/// 3. **Time order.** The clock is read after the word is loaded: a caller that loads a word another caller put in
///    reads the clock after that caller did, so it does not see that caller's timestamp as a step back. A clock that
///    did step back reads behind the word, which is the mutex's case.
/// 4. **Fences.** `set_deadline` (and so a release or a lost lease) and `stop` (a host lease found taken) close the
///    word under the mutex and do not open it; no swap can succeed from then on (by 1), and the calls that follow
///    take the mutex, which refuses them past the deadline. Only a section that issues an id, under a deadline that
///    allows it, opens the word again. So once `set_deadline(0)` or `stop` returns, no id is issued, and
///    `highest_ms` (read under the mutex) covers every id.
/// 5. **Marks.** The fast path never issues past `bound`, which is at most the mark the store confirmed
///    (`reserved_until`): a mark is written under the mutex, before the word that lets ids up to it be issued is
///    opened.
#[repr(align(64))]
pub struct Shared {
    /// `CLOSED`, or the last id issued without its fixed bits (see above).
    word: AtomicU64,
    /// While the word is open: the latest timestamp (ms since the epoch) the fast path may issue at.
    bound: AtomicU64,
    /// Changed by every mutex section as it begins, right after it closes the word, and by a swap into a later ms
    /// while there are runs; `RUNS` set once a run is claimed in it. Read by every call, written at most a few
    /// times per ms, so it has a line of its own, away from `word`.
    generation: Line<AtomicU64>,
    state: Mutex<State>,
}

impl Shared {
    /// A shared state over `state`, with the fast path closed until the first id.
    pub fn new(state: State) -> SharedState {
        Arc::new(Shared {
            word: AtomicU64::new(CLOSED),
            bound: AtomicU64::new(0),
            generation: Line(AtomicU64::new(GENERATIONS.fetch_add(2, Ordering::Relaxed))),
            state: Mutex::new(state),
        })
    }

    /// The clockBack the state was configured with, which never changes.
    pub fn configured_clock_back(&self) -> u32 {
        self.state.lock().configured_clock_back()
    }

    /// Takes the mutex and closes the fast path, bringing the ids it issued into the state (see above): `shift` and
    /// `max_sequence` are the layout's timestamp shift and largest sequence value.
    #[inline]
    fn close(&self, shift: u32, max_sequence: u64) -> parking_lot::MutexGuard<'_, State> {
        let mut st = self.state.lock();
        let word = self.word.swap(CLOSED, Ordering::AcqRel);
        // After the swap: a caller that reads the new generation loads the word after it, so it claims a run only
        // from a word this section (or a later one) opens, and no run claimed before this section is kept under it.
        self.generation.0.store(GENERATIONS.fetch_add(2, Ordering::Relaxed), Ordering::Release);
        if word != CLOSED {
            st.last = word >> shift;
            st.next_seq = (word & max_sequence) + 1;
        }
        st
    }

    /// Stops every generator of the state for good, from outside them (the host lease's repair thread, when it
    /// finds its slot taken): a fence, as `set_deadline(0)` is (point 4 above), so once it returns no thread issues
    /// another id, and every call from then on returns `why`. `layout` is the state's.
    pub fn stop(&self, layout: &Layout, why: Error) {
        let mut st = self.close(layout.timestamp_shift(), max_value(layout.widths().sequence));
        st.deadline = 0;
        st.lost = Some(why);
    }
}

pub type SharedState = Arc<Shared>;

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

/// A point-in-time view of a generator's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// How far the last id's timestamp is ahead of the clock, in ms (0 when it is not).
    pub lead_ms: u64,
    pub clock_back: u32,
    pub stats: Stats,
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
    /// The clockBack bits in place: what the fast path keeps of the word when it moves to a new ms.
    clock_back_bits: u64,
    /// How many ids a thread claims at once after losing a swap (see [`Shared`]): 1/4096 of a ms's sequence
    /// values, at most 64, so the rest a thread leaves unused costs little of the cap. 1 for the default layout.
    run_len: u64,
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
        let clock_back_mask = max_value(layout.widths().clock_back);
        Ok(Generator {
            settings,
            fixed,
            epoch: layout.epoch(),
            max_timestamp: layout.max_timestamp(),
            max_sequence: max_value(layout.widths().sequence),
            clock_back_mask: max_value(layout.widths().clock_back) as u32,
            timestamp_shift: layout.timestamp_shift(),
            clock_back_shift: layout.clock_back_shift(),
            clock_back_bits: clock_back_mask << layout.clock_back_shift(),
            run_len: ((max_value(layout.widths().sequence) + 1) >> 12).clamp(1, MAX_RUN),
            state,
            clock,
        })
    }

    pub fn layout(&self) -> &Layout {
        &self.settings.layout
    }

    /// The current lead, clockBack and counters of the state this generator shares.
    pub fn snapshot(&self) -> Snapshot {
        let st = self.state.state.lock();
        let last = self.last_of(&st);
        let now = self.clock.now_ms();
        Snapshot { lead_ms: (last + self.epoch).saturating_sub(now), clock_back: st.clock_back, stats: st.stats }
    }

    /// The timestamp of the last id issued, read under the mutex without closing the fast path: the state's own, or
    /// the open word's, which the fast path moves only forward and only within the state's clockBack.
    fn last_of(&self, st: &State) -> u64 {
        match self.state.word.load(Ordering::Acquire) {
            CLOSED => st.last,
            w => w >> self.timestamp_shift,
        }
    }

    /// The next id.
    #[inline]
    pub fn next_id(&self) -> Result<u64> {
        if let Some(id) = self.next_fast() {
            return Ok(id);
        }
        let mut st = self.close();
        let (ts, seq, _) = self.run(&mut st, 1)?;
        self.open(&st);
        Ok(self.compose(ts, st.clock_back, seq))
    }

    /// The fast path (see [`Shared`]): the next id from this thread's run, or by one compare-and-swap, or `None`
    /// when the mutex must decide. A swap that loses to another thread's claims a run instead of one id.
    #[inline]
    fn next_fast(&self) -> Option<u64> {
        // Read before the word, so a run claimed below is never taken for one of a later generation.
        let generation = self.state.generation.0.load(Ordering::Acquire);
        if generation & RUNS != 0 {
            if let Some(id) = self.take_from_run(generation) {
                return Some(id);
            }
        }
        let (next, taken) = self.swap(1, self.run_len)?;
        let first = next - (taken - 1);
        if taken > 1 {
            self.keep_run(generation, first + 1, next);
        }
        Some(first | self.fixed)
    }

    /// The next id of this thread's run, when it has one of this state's current generation at the ms the clock
    /// reads. A run of another ms is dropped.
    fn take_from_run(&self, generation: u64) -> Option<u64> {
        RUN.with(|cell| {
            let run = cell.get();
            if run.generation != generation & !RUNS || run.next > run.last {
                return None;
            }
            let t = self.clock.now_ms().checked_sub(self.epoch);
            if t != Some(run.next >> self.timestamp_shift) {
                cell.set(Run::NONE);
                return None;
            }
            cell.set(Run { next: run.next + 1, ..run });
            Some(run.next | self.fixed)
        })
    }

    /// Keeps `next..=last` (word values, already issued by the swap that claimed them) as this thread's run, of
    /// `generation` (read before the word; `swap` flagged the generation as having runs before it claimed them).
    fn keep_run(&self, generation: u64, next: u64, last: u64) {
        RUN.with(|cell| cell.set(Run { generation: generation & !RUNS, next, last }));
    }

    /// Ends every thread's run, after the word moved to a later ms, before the id that moved it is returned: a run
    /// of an earlier ms is then never handed out after an id of a later one, even when the clock steps back to the
    /// run's ms. One write per ms, and only while there are runs; a section's newer generation is left as it is.
    fn end_runs(&self) {
        let generation = &self.state.generation.0;
        let g = generation.load(Ordering::Relaxed);
        if g & RUNS != 0 {
            let _ = generation.compare_exchange(
                g,
                GENERATIONS.fetch_add(2, Ordering::Relaxed),
                Ordering::Release,
                Ordering::Relaxed,
            );
        }
    }

    /// Drops this thread's run, before it issues ids by another way: a run's ids are below them.
    fn drop_run(&self) {
        if self.state.generation.0.load(Ordering::Relaxed) & RUNS != 0 {
            RUN.with(|cell| cell.set(Run::NONE));
        }
    }

    /// One compare-and-swap of the fast path for `count` ids (1 to `max_sequence + 1`) of one ms, consecutive: the
    /// word it moved to (the last of them) and how many it took, or `None` when they do not fit the ms the clock
    /// reads (or the mutex must decide). The word stays the last id issued, so the argument of [`Shared`] holds as
    /// for one id. After a swap lost to another caller, it asks for `on_loss` instead, and takes what is left of
    /// the ms when that is less.
    #[inline(always)]
    fn swap(&self, count: u64, on_loss: u64) -> Option<(u64, u64)> {
        let shared = &*self.state;
        let mut count = count;
        let mut partial = false;
        let mut word = shared.word.load(Ordering::Acquire);
        loop {
            if word == CLOSED {
                return None;
            }
            let bound = shared.bound.load(Ordering::Acquire);
            let t = self.clock.now_ms().checked_sub(self.epoch)?;
            if t > bound {
                return None;
            }
            let last = word >> self.timestamp_shift;
            // The last of the ids taken: sequence `taken - 1` of a new ms, or `taken` past the word in its own.
            let (next, taken) = if t > last {
                ((t << self.timestamp_shift) | (word & self.clock_back_bits) | (count - 1), count)
            } else if t == last {
                let left = self.max_sequence - (word & self.max_sequence);
                let taken = if count <= left {
                    count
                } else if partial && left > 0 {
                    left
                } else {
                    return None;
                };
                (word + taken, taken)
            } else {
                return None;
            };
            match shared.word.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    if t > last {
                        self.end_runs();
                    }
                    return Some((next, taken));
                }
                // Another caller issued an id (or the mutex closed the word): read the clock again after its word.
                // A weak swap may also fail with the word unchanged (on LL/SC machines), which is no loss.
                Err(current) => {
                    if current != word && on_loss > count {
                        count = on_loss;
                        partial = true;
                        // Flagged before the claim, whose swap releases it: a swap into a later ms that comes after
                        // the claim sees the flag, and ends the run (see `end_runs`).
                        let generation = &shared.generation.0;
                        if generation.load(Ordering::Relaxed) & RUNS == 0 {
                            generation.fetch_or(RUNS, Ordering::Relaxed);
                        }
                    }
                    word = current;
                }
            }
        }
    }

    /// Takes the mutex and closes the fast path, bringing the ids it issued into the state (see [`Shared`]).
    #[inline]
    fn close(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.close(self.timestamp_shift, self.max_sequence)
    }

    /// Opens the fast path after the section holding `st` issued an id (the last one, at `st.last`), so the word is
    /// that id. Left closed when no later ms could be issued anyway: a deadline or mark before the epoch.
    fn open(&self, st: &State) {
        let Some(seq) = st.next_seq.checked_sub(1) else {
            return;
        };
        // The latest timestamp the fast path may take: within the stored mark, before the deadline (a clock at
        // `deadline` or later issues nothing), within the timestamp field.
        let (Some(marked), Some(before_deadline)) =
            (st.reserved_until.checked_sub(self.epoch), st.deadline.checked_sub(self.epoch + 1))
        else {
            return;
        };
        let bound = marked.min(before_deadline).min(self.max_timestamp);
        self.state.bound.store(bound, Ordering::Release);
        let word = (st.last << self.timestamp_shift) | (u64::from(st.clock_back) << self.clock_back_shift) | seq;
        self.state.word.store(word, Ordering::Release);
    }

    /// Fills `out` with the next ids, in order, under one lock. The clock is read once per run of sequence values
    /// rather than once per id. On an error, the ids already placed are not issued to anyone else, and the error
    /// is returned.
    pub fn fill(&self, out: &mut [u64]) -> Result<()> {
        // A batch that fits one ms is one swap of the fast path; the sequence is the lowest field, so its ids are
        // the first one plus 0, 1, 2...
        let count = out.len() as u64;
        self.drop_run();
        if count >= 1 && count - 1 <= self.max_sequence {
            if let Some((next, _)) = self.swap(count, count) {
                let first = (next - (count - 1)) | self.fixed;
                for (k, slot) in out.iter_mut().enumerate() {
                    *slot = first + k as u64;
                }
                return Ok(());
            }
        }
        let mut st = self.close();
        let mut rest = out;
        let issued = !rest.is_empty();
        while !rest.is_empty() {
            let (ts, seq, n) = self.run(&mut st, rest.len() as u64)?;
            let base = self.compose(ts, st.clock_back, seq);
            let (chunk, tail) = rest.split_at_mut(n as usize);
            for (k, slot) in chunk.iter_mut().enumerate() {
                *slot = base + k as u64;
            }
            rest = tail;
        }
        if issued {
            self.open(&st);
        }
        Ok(())
    }

    /// Takes up to `want` (at least 1) consecutive sequence values in one ms: returns the timestamp, the first
    /// sequence value and how many were taken.
    #[inline]
    fn run(&self, st: &mut State, want: u64) -> Result<(u64, u64, u64)> {
        let mut waited = 0u64;
        let mut spun = false;
        loop {
            let now = self.clock.now_ms();
            if now >= st.deadline {
                return Err(self.lease_lost(st, now));
            }
            let Some(t) = now.checked_sub(self.epoch) else {
                return Err(self.before_epoch(now));
            };
            // `moved`: a step back under `Bits` moves to this clockBack value, once its mark is stored.
            let mut moved = None;
            let (ts, seq) = if t > st.last {
                if t > self.max_timestamp {
                    return Err(self.exhausted(now));
                }
                (t, 0)
            } else if st.last - t <= st.tolerance {
                // At the last ms, or behind it by no more than the lead: carry on from the last timestamp.
                let behind = st.last - t;
                if st.next_seq <= self.max_sequence {
                    (st.last, st.next_seq)
                } else if behind < self.settings.max_lead_ms {
                    // Full ms, and the next one is still within the lead: borrow it.
                    if st.last >= self.max_timestamp {
                        return Err(self.exhausted(now));
                    }
                    (st.last + 1, 0)
                } else {
                    // Full ms at the edge of the lead: spin until the clock moves on.
                    if !spun {
                        spun = true;
                        st.stats.waits += 1;
                    }
                    std::hint::spin_loop();
                    continue;
                }
            } else {
                let behind = st.last - t;
                match self.settings.policy {
                    ClockBackPolicy::Bits => {
                        // The new clockBack value has issued nothing at or after this time, here or (per the
                        // earlier holders' marks) before this process took the slot. It is taken only once a mark
                        // for it is stored, so a failed write spends no clockBack value.
                        moved = Some(self.free_clock_back(st, now, behind)?);
                        (t, 0)
                    }
                    ClockBackPolicy::Wait => {
                        let need = behind - st.tolerance;
                        if waited + need > self.settings.max_wait_ms {
                            let why = format!(
                                "onClockBack is 'wait' and catching up would exceed maxWaitMs {} (waited {waited} ms)",
                                self.settings.max_wait_ms
                            );
                            return Err(self.backwards(st, now, behind, &why));
                        }
                        if waited == 0 {
                            st.stats.waits += 1;
                        }
                        self.clock.sleep_ms(need);
                        waited += need;
                        continue;
                    }
                    ClockBackPolicy::Throw => {
                        return Err(self.backwards(st, now, behind, "onClockBack is 'throw'"));
                    }
                }
            };
            let unix = ts + self.epoch;
            if let Some(c) = moved {
                // No mark covers the new value yet; `persist` writes one (or, with no store, none).
                self.persist(st, c, unix, now)?;
                // `last` moves back, so the later ids of the old value are remembered in `highest`.
                st.highest = st.highest.max(st.last);
                st.clock_back = c;
                st.stats.clock_back_events += 1;
            } else if unix > st.reserved_until {
                self.persist(st, st.clock_back, unix, now)?;
            }
            let n = want.min(self.max_sequence + 1 - seq);
            st.last = ts;
            st.next_seq = seq + n;
            return Ok((ts, seq, n));
        }
    }

    /// Stores a new mark for `clock_back` past `unix` before an id at `unix` is issued under it.
    #[cold]
    fn persist(&self, st: &mut State, clock_back: u32, unix: u64, now: u64) -> Result<()> {
        match &st.store {
            Some(store) => {
                // One window of id time past this id, lead or not: a holder at the edge of its lead writes as often
                // as one that is not, so a deleted file is made again within a window (see `Lease::locate`).
                let until = unix + MARK_WINDOW_MS;
                store.reserve(clock_back, until, now)?;
                st.reserved_until = until;
                st.stats.mark_writes += 1;
            }
            None => st.reserved_until = u64::MAX,
        }
        Ok(())
    }

    /// The clockBack value to move to after a step back to `now`: the next one after the current that has issued
    /// nothing at or after `now`, before the count comes back round to the starting value.
    fn free_clock_back(&self, st: &State, now: u64, behind: u64) -> Result<u32> {
        st.next_free_clock_back(self.clock_back_mask, now)
            .ok_or_else(|| self.backwards(st, now, behind, "every clockBack value has been used"))
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

    #[cold]
    fn lease_lost(&self, st: &State, now: u64) -> Error {
        if let Some(why) = &st.lost {
            return why.clone();
        }
        let d = st.deadline;
        let found = if d == 0 {
            "a lease that was released or lost".to_string()
        } else {
            format!(
                "its deadline {d} ({}) passed {} ms ago, so another process may hold the slot now",
                format_iso(d),
                now - d
            )
        };
        Error::new(
            Code::LeaseLost,
            Class::Error,
            format!(
                "lease: expected a confirmed lease on datacenterId {} workerId {}, found {found}",
                self.settings.datacenter_id, self.settings.worker_id
            ),
        )
    }

    /// Sets the lease deadline: no id is issued once the clock reads `deadline` (Unix ms) or later. `0` stops the
    /// generator at once. A state [`Shared::stop`] stopped stays stopped.
    pub fn set_deadline(&self, deadline: u64) {
        // Closed and left closed: the next id takes the mutex, which checks the new deadline (see `Shared`).
        let mut st = self.close();
        if st.lost.is_none() {
            st.deadline = deadline;
        }
    }

    /// The Unix ms of the latest id issued under any clockBack value (or of the last mark taken in): no id of this
    /// state is stamped later. After a step back, the last id issued is earlier than this.
    pub fn highest_ms(&self) -> u64 {
        let st = self.state.state.lock();
        self.last_of(&st).max(st.highest) + self.epoch
    }

    /// Takes in the mark another holder of the slot left: it may have issued ids at any clockBack up to Unix ms
    /// `until`. No id at or before `until` is issued from here on, under any clockBack value.
    pub fn absorb_mark(&self, until: u64) {
        let mut st = self.close();
        let Some(t) = until.checked_sub(self.epoch) else {
            return;
        };
        if t >= st.last {
            // As if this state had used up the ms `until`: the next id is in a later ms, and a clock behind it is a
            // step back, which the clock-back policy handles.
            st.last = t;
            st.next_seq = self.max_sequence + 1;
        }
        for c in 0..=self.clock_back_mask {
            match st.earlier.iter_mut().find(|(ec, _)| *ec == c) {
                Some((_, m)) => *m = (*m).max(until),
                None => st.earlier.push((c, until)),
            }
        }
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

    type Meanwhile = Box<dyn FnOnce() + Send>;

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
        /// Run once inside the next read: what another thread could do between a caller's load and its swap.
        meanwhile: Arc<Mutex<Option<Meanwhile>>>,
        armed: Arc<std::sync::atomic::AtomicBool>,
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
        /// Runs `f` inside the next read of the clock, before it returns.
        pub fn meanwhile(&self, f: impl FnOnce() + Send + 'static) {
            *self.meanwhile.lock() = Some(Box::new(f));
            self.armed.store(true, Ordering::SeqCst);
        }
    }

    impl Clock for FakeClock {
        fn now_ms(&self) -> u64 {
            if self.armed.load(Ordering::SeqCst) && self.armed.swap(false, Ordering::SeqCst) {
                if let Some(f) = self.meanwhile.lock().take() {
                    f();
                }
            }
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
            max_lead_ms: 0,
        }
    }

    fn generator(policy: ClockBackPolicy, clock: &FakeClock) -> Generator<FakeClock> {
        let state = Shared::new(State::new(0));
        Generator::new(settings(Widths::default(), policy), state, clock.clone()).unwrap()
    }

    /// A generator on a fake clock at `NOW`, with a mark store and no earlier marks, borrowing up to `max_lead_ms`.
    fn with_store(max_lead_ms: u64) -> (FakeClock, Arc<MemStore>, Generator<FakeClock>) {
        let clock = FakeClock::at(NOW);
        let store = Arc::new(MemStore::default());
        let s = Settings { max_lead_ms, ..settings(Widths::default(), ClockBackPolicy::Bits) };
        let st = State::resume(&s, 0, Vec::new(), store.clone(), &clock).unwrap();
        let g = Generator::new(s, Shared::new(st), clock.clone()).unwrap();
        (clock, store, g)
    }

    fn fields(g: &Generator<FakeClock>, id: u64) -> Fields {
        g.layout().unpack(id)
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
            e.message()
                .starts_with("lease: expected a confirmed lease on datacenterId 1 workerId 3, found its deadline"),
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
        let state = Shared::new(State::new(2));
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
        let g = Generator::new(settings(w, ClockBackPolicy::Bits), Shared::new(State::new(0)), clock.clone()).unwrap();
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
        let state = Shared::new(State::new(0));
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
        let st = g.close();
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
        let out = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{what} waited for the mutex"));
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

    /// Widths whose sequence (18 bits) makes a thread claim runs of 64 ids after a lost swap.
    const RUNS_WIDTHS: Widths = Widths { datacenter: 1, worker: 2, clock_back: 2, sequence: 18 };

    /// A generator of `s` (with runs of 64) on `clock`, and another of its state whose calls run on their own thread,
    /// as a second thread's would.
    fn with_runs(clock: &FakeClock, s: Settings) -> (Generator<FakeClock>, Arc<Generator<FakeClock>>) {
        let state = Shared::new(State::new(0));
        let g = Generator::new(s, state.clone(), clock.clone()).unwrap();
        let other = Arc::new(Generator::new(s, state, clock.clone()).unwrap());
        (g, other)
    }

    /// `other`'s next id, taken on a thread of its own.
    fn elsewhere(other: &Arc<Generator<FakeClock>>) -> u64 {
        let other = other.clone();
        std::thread::spawn(move || other.next_id().unwrap()).join().unwrap()
    }

    /// Makes `g`'s next swap lose to an id `other` takes on another thread: the call claims a run. Returns the id the
    /// other thread took, and the call's.
    fn lose_a_swap(clock: &FakeClock, g: &Generator<FakeClock>, other: &Arc<Generator<FakeClock>>) -> (u64, u64) {
        let (tx, rx) = std::sync::mpsc::channel();
        let o = other.clone();
        clock.meanwhile(move || tx.send(elsewhere(&o)).unwrap());
        let id = g.next_id().unwrap();
        (rx.recv().unwrap(), id)
    }

    #[test]
    fn the_run_length_is_a_4096th_of_the_sequence_values_from_1_to_64() {
        let clock = FakeClock::at(NOW);
        for (sequence, run_len) in [(12, 1), (8, 1), (13, 2), (16, 16), (18, 64), (20, 64)] {
            let w = Widths { datacenter: 1, worker: 2, clock_back: 0, sequence };
            let g =
                Generator::new(settings(w, ClockBackPolicy::Bits), Shared::new(State::new(0)), clock.clone()).unwrap();
            assert_eq!(g.run_len, run_len, "sequenceBits {sequence}");
        }
    }

    #[test]
    fn a_lost_swap_claims_a_run_that_only_its_thread_hands_out() {
        let clock = FakeClock::at(NOW);
        let (g, other) = with_runs(&clock, settings(RUNS_WIDTHS, ClockBackPolicy::Bits));
        let a = g.next_id().unwrap();
        let (b, c) = lose_a_swap(&clock, &g, &other);
        // The other thread's id came between the load and the swap; this call then claimed 64 ids after it.
        assert_eq!((b, c), (a + 1, a + 2));
        assert_eq!(word(&g), (a + 65) & !g.fixed, "the word covers the whole run");
        // The other thread issues past the run; this one hands out the run's ids, in order, without the word.
        assert_eq!(elsewhere(&other), a + 66);
        for k in 3..=65 {
            assert_eq!(g.next_id().unwrap(), a + k);
        }
        assert_eq!(word(&g), (a + 66) & !g.fixed, "a run's ids move no shared word");
        // The run is used up: the next id is a swap's again.
        assert_eq!(g.next_id().unwrap(), a + 67);
        assert_eq!(word(&g), (a + 67) & !g.fixed);
    }

    #[test]
    fn a_run_is_dropped_by_a_section_a_fence_a_batch_and_another_ms() {
        let clock = FakeClock::at(NOW);
        let (g, other) = with_runs(&clock, settings(RUNS_WIDTHS, ClockBackPolicy::Bits));
        g.next_id().unwrap();
        // A section (here one that changes nothing but the deadline) ends every run of the generation before it.
        let (_, c) = lose_a_swap(&clock, &g, &other);
        g.set_deadline(u64::MAX);
        let d = g.next_id().unwrap();
        assert_eq!(d, c + 64, "after a section the next id is past the run ({c:#x}..), not in it");
        // A batch drops the thread's run first: the next single id comes after the batch.
        let (_, c) = lose_a_swap(&clock, &g, &other);
        let mut batch = [0u64; 3];
        g.fill(&mut batch).unwrap();
        assert_eq!(batch[0], c + 64);
        assert_eq!(g.next_id().unwrap(), batch[2] + 1);
        // A run is only of its ms: a later ms drops it, so a clock that steps back to the run's ms does not hand out
        // the rest of the run after the later id; it is a step back, under a new clockBack value.
        let (_, c) = lose_a_swap(&clock, &g, &other);
        clock.set(NOW + 1);
        let later = g.next_id().unwrap();
        assert_eq!((fields(&g, later).timestamp, fields(&g, later).sequence), (fields(&g, c).timestamp + 1, 0));
        clock.set(NOW);
        let back = g.next_id().unwrap();
        assert_eq!(fields(&g, back).clock_back, 1, "{back:#x} came from the dropped run");
        // A fence ends the run at once: nothing is handed out from it past the fence.
        clock.set(NOW + 2);
        g.next_id().unwrap();
        lose_a_swap(&clock, &g, &other);
        let fence = other.clone();
        std::thread::spawn(move || fence.set_deadline(0)).join().unwrap();
        assert_eq!(g.next_id().unwrap_err().code(), Code::LeaseLost);
    }

    #[test]
    fn a_run_dies_when_another_thread_takes_a_later_ms_so_a_step_back_gets_the_policy() {
        for (policy, lead) in [(ClockBackPolicy::Throw, 0), (ClockBackPolicy::Wait, 0), (ClockBackPolicy::Bits, 5)] {
            let clock = FakeClock::at(NOW);
            let (g, other) = with_runs(&clock, Settings { max_lead_ms: lead, ..settings(RUNS_WIDTHS, policy) });
            g.next_id().unwrap();
            let (_, c) = lose_a_swap(&clock, &g, &other);
            // Another thread is given an id of the next ms; then the clock steps back to the run's ms.
            clock.set(NOW + 1);
            let later = elsewhere(&other);
            clock.set(NOW);
            let what = format!("{policy:?} with a lead of {lead}");
            match g.next_id() {
                Ok(id) => {
                    assert!(id > later, "{what}: {id:#x} after {later:#x}");
                    assert_ne!(id, c + 1, "{what}: the run's next id");
                }
                Err(e) => assert_eq!((policy, e.code()), (ClockBackPolicy::Throw, Code::ClockBackwards), "{what}"),
            }
        }
    }

    #[test]
    fn generations_are_never_reused_nor_zero() {
        let (a, b) = (Shared::new(State::new(0)), Shared::new(State::new(0)));
        let (ga, gb) = (a.generation.0.load(Ordering::SeqCst), b.generation.0.load(Ordering::SeqCst));
        assert!(ga != gb && ga != 0 && gb != 0 && ga & RUNS == 0 && gb & RUNS == 0);
        let g = generator(ClockBackPolicy::Bits, &FakeClock::at(NOW));
        let before = g.state.generation.0.load(Ordering::SeqCst);
        g.next_id().unwrap();
        let after = g.state.generation.0.load(Ordering::SeqCst);
        assert!(after != before && after != ga && after != gb, "a section starts a new generation");
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
        assert_eq!(
            (fields(&g, batch[0]).timestamp, fields(&g, batch[0]).sequence),
            (fields(&g, first).timestamp + 1, 0)
        );
        assert_eq!(word(&g), batch[2] & !g.fixed);
        // The rest of the ms but one, then two: the second does not fit, so the mutex runs it into the next ms.
        let mut rest = vec![0u64; (g.max_sequence - 3) as usize];
        g.fill(&mut rest).unwrap();
        assert_eq!(fields(&g, rest[rest.len() - 1]).sequence, g.max_sequence as u32 - 1);
        let mut two = [0u64; 2];
        g.fill(&mut two).unwrap();
        assert_eq!(fields(&g, two[0]).sequence, g.max_sequence as u32);
        assert_eq!(
            (fields(&g, two[1]).timestamp, fields(&g, two[1]).sequence),
            (fields(&g, batch[0]).timestamp + 1, 0)
        );
        // A batch larger than a ms never takes the swap, and every id is still new.
        let mut big = vec![0u64; g.max_sequence as usize + 2];
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
        // A clock that also moves on by itself, as a real one does while a full ms at the edge of the lead spins.
        let clock = FakeClock::ticking(NOW, 5_000);
        let store = Arc::new(MemStore::default());
        let s = Settings { max_lead_ms: 3, ..settings(w, ClockBackPolicy::Bits) };
        let st = State::resume(&s, 0, Vec::new(), store.clone(), &clock).unwrap();
        let g = Generator::new(s, Shared::new(st), clock.clone()).unwrap();
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
        let state = Shared::new(State::resume(&s, 0, Vec::new(), store, &clock).unwrap());
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
    fn four_threads_that_claim_runs_take_ids_without_a_duplicate() {
        // Sequence values to spare, so lost swaps claim runs of 64, mixed with batches, over many ms.
        let (clock, lists) = threads_take(RUNS_WIDTHS, 4, 3_000_000, 1_000);
        for ids in &lists {
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "each thread sees increasing ids");
        }
        assert_eq!(merged_duplicates(&lists), 0);
        assert!(clock.get() > NOW + 5_000, "the clock moved only to {}", clock.get());
    }

    #[test]
    fn threads_never_collide_across_steps_back() {
        threads_never_collide_across_steps_back_in(Widths::default());
        threads_never_collide_across_steps_back_in(RUNS_WIDTHS);
    }

    fn threads_never_collide_across_steps_back_in(w: Widths) {
        let clock = FakeClock::ticking(NOW, 300);
        let store = Arc::new(MemStore::default());
        let s = settings(w, ClockBackPolicy::Bits);
        let state = Shared::new(State::resume(&s, 0, Vec::new(), store.clone(), &clock).unwrap());
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
            clock.now.fetch_sub(50, Ordering::SeqCst);
            let waited = std::time::Instant::now();
            while g.snapshot().stats.clock_back_events < step {
                assert!(
                    waited.elapsed() < std::time::Duration::from_secs(60),
                    "no thread took an id after step {step}"
                );
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
        no_thread_issues_an_id_past_a_fence_in(RUNS_WIDTHS);
    }

    fn no_thread_issues_an_id_past_a_fence_in(w: Widths) {
        let clock = FakeClock::ticking(NOW, 500);
        let s = settings(w, ClockBackPolicy::Bits);
        let state = Shared::new(State::new(0));
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

    /// A mark store that records what it is asked to store, and can be made to fail.
    #[derive(Default)]
    pub struct MemStore {
        pub writes: Mutex<Vec<(u32, u64)>>,
        pub fail: std::sync::atomic::AtomicBool,
    }

    impl MarkStore for MemStore {
        fn reserve(&self, clock_back: u32, until: u64, _now: u64) -> Result<()> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(Error::new(Code::LeaseDir, Class::Error, "disk full"));
            }
            self.writes.lock().push((clock_back, until));
            Ok(())
        }
    }

    fn leading(lead: u64, clock: &FakeClock) -> Generator<FakeClock> {
        let s = Settings { max_lead_ms: lead, ..settings(Widths::default(), ClockBackPolicy::Throw) };
        Generator::new(s, Shared::new(State::new(0)), clock.clone()).unwrap()
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
        assert_eq!(g.snapshot().stats.waits, 1);
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
        let g = Generator::new(s, Shared::new(State::new(0)), clock.clone()).unwrap();
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
        let state = Shared::new(State::new(0));
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

    fn resume_with(
        policy: ClockBackPolicy,
        earlier: Vec<(u32, u64)>,
        clock: &FakeClock,
    ) -> Result<Generator<FakeClock>> {
        let s = Settings { max_wait_ms: 100, ..settings(Widths::default(), policy) };
        let st = State::resume(&s, 0, earlier, Arc::new(MemStore::default()), clock)?;
        Generator::new(s, Shared::new(st), clock.clone())
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
            assert_eq!(g.snapshot().stats.waits, 1);
        }
        // A layout with no clockBack bits has no other value to move to.
        let clock = FakeClock::at(NOW);
        let w = Widths { clock_back: 0, ..Widths::default() };
        let s = settings(w, ClockBackPolicy::Bits);
        let st = State::resume(&s, 0, vec![(0, NOW + 60)], Arc::new(MemStore::default()), &clock).unwrap();
        let g = Generator::new(s, Shared::new(st), clock.clone()).unwrap();
        assert_eq!((clock.slept(), fields(&g, g.next_id().unwrap()).timestamp + DEFAULT_EPOCH), (61, NOW + 61));
    }

    #[test]
    fn a_new_holder_far_behind_the_mark_moves_to_a_free_clock_back_or_fails() {
        // 5 s behind the mark for clockBack 0, and clockBack 1 reserved too: 'bits' takes 2.
        let clock = FakeClock::at(NOW);
        let g =
            resume_with(ClockBackPolicy::Bits, vec![(0, NOW + 5000), (1, NOW + 4000), (2, NOW - 1)], &clock).unwrap();
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
            Shared::new(State::resume(&s, 0, Vec::new(), store_a.clone(), &clock).unwrap()),
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
            Shared::new(State::resume(&s, 0, marks, Arc::new(MemStore::default()), &clock).unwrap()),
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

    #[test]
    fn the_system_clock_reads_the_same_time_as_system_time() {
        for _ in 0..1000 {
            let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
            let ours = SystemClock.now_ms();
            let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
            assert!(before <= ours && ours <= after, "{before} <= {ours} <= {after}");
        }
    }
}
