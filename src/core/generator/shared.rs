//! The state of one identity as its generators share it: the state machine behind a mutex, and the lock-free fast
//! path in front of it for the two common cases (a later ms the stored mark covers, or the same ms with sequence
//! values left). The fast path takes an id with one compare-and-swap on the last id issued; anything else goes
//! through the mutex, where the clock is read while it is held. [`Shared`] argues why the two never issue the same
//! id, and why nothing passes a fence.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::super::error::Error;
use super::super::fence::Stop;
use super::super::layout::{max_value, Layout};
use super::super::time::Clock;
use super::sequencer::State;

/// The value of [`Shared::word`] while the fast path is closed. No id has every bit set (ids are below 2^63).
pub(super) const CLOSED: u64 = u64::MAX;

/// Where the fields of a word are, and the limits of the layout it belongs to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packing {
    pub(super) epoch: u64,
    pub(super) max_timestamp: u64,
    pub(super) max_sequence: u64,
    pub(super) timestamp_shift: u32,
    pub(super) clock_back_shift: u32,
    /// The clockBack bits in place: what the fast path keeps of the word when it moves to a new ms.
    pub(super) clock_back_bits: u64,
}

impl Packing {
    pub(super) fn of(layout: &Layout) -> Packing {
        let w = layout.widths();
        Packing {
            epoch: layout.epoch(),
            max_timestamp: layout.max_timestamp(),
            max_sequence: max_value(w.sequence),
            timestamp_shift: layout.timestamp_shift(),
            clock_back_shift: layout.clock_back_shift(),
            clock_back_bits: max_value(w.clock_back) << layout.clock_back_shift(),
        }
    }
}

/// The state of one identity, shared by its generators: the state machine, and the lock-free fast path over it.
///
/// # The fast path
///
/// `word` holds either [`CLOSED`] or the last id issued under the state, without its datacenterId and workerId bits
/// (constant for the identity): its timestamp, clockBack and sequence in place. While it is open, a caller reads
/// `word`, then the clock at `t` (ms since the epoch), then `bound`, and issues
/// - `t` with sequence 0 and the word's clockBack, when `t` is past the word's timestamp, or
/// - the word plus one, when `t` is the word's timestamp and its sequence is not the last,
///
/// both only when `t <= bound`, by a compare-and-swap of `word` from the value read to the id issued. Everything
/// else (no word, a full ms, a clock behind the word, a mark to write, a deadline) goes to the mutex.
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
    pub(super) word: AtomicU64,
    /// While the word is open: the latest timestamp (ms since the epoch) the fast path may issue at.
    bound: AtomicU64,
    pub(super) state: Mutex<State>,
    packing: Packing,
}

pub type SharedState = Arc<Shared>;

impl Shared {
    /// A shared state of an identity of `layout` over `state`, with the fast path closed until the first id.
    pub fn new(state: State, layout: &Layout) -> SharedState {
        Arc::new(Shared {
            word: AtomicU64::new(CLOSED),
            bound: AtomicU64::new(0),
            state: Mutex::new(state),
            packing: Packing::of(layout),
        })
    }

    /// The clockBack the state was configured with, which never changes.
    pub fn configured_clock_back(&self) -> u32 {
        self.state.lock().configured_clock_back()
    }

    /// Takes the mutex and closes the fast path, bringing the ids it issued into the state (see above).
    #[inline]
    pub(super) fn close(&self) -> MutexGuard<'_, State> {
        let mut st = self.state.lock();
        let word = self.word.swap(CLOSED, Ordering::AcqRel);
        if word != CLOSED {
            st.last = word >> self.packing.timestamp_shift;
            st.next_seq = (word & self.packing.max_sequence) + 1;
        }
        st
    }

    /// The timestamp of the last id issued, read under the mutex without closing the fast path: the state's own, or
    /// the open word's, which the fast path moves only forward and only within the state's clockBack.
    pub(super) fn last_of(&self, st: &State) -> u64 {
        match self.word.load(Ordering::Acquire) {
            CLOSED => st.last,
            w => w >> self.packing.timestamp_shift,
        }
    }

    /// Opens the fast path after the section holding `st` issued an id (the last one, at `st.last`), so the word is
    /// that id. Left closed when no later ms could be issued anyway: a deadline or mark before the epoch.
    pub(super) fn open(&self, st: &State) {
        let p = &self.packing;
        let Some(seq) = st.next_seq.checked_sub(1) else {
            return;
        };
        // The latest timestamp the fast path may take: within the stored mark, before the deadline (a clock at
        // `deadline` or later issues nothing), within the timestamp field.
        let (Some(marked), Some(before_deadline)) =
            (st.reserved_until.checked_sub(p.epoch), st.deadline.checked_sub(p.epoch + 1))
        else {
            return;
        };
        let bound = marked.min(before_deadline).min(p.max_timestamp);
        self.bound.store(bound, Ordering::Release);
        let word = (st.last << p.timestamp_shift) | (u64::from(st.clock_back) << p.clock_back_shift) | seq;
        self.word.store(word, Ordering::Release);
    }

    /// One compare-and-swap of the fast path for `count` ids (1 to `max_sequence + 1`) of one ms, consecutive, with
    /// `p` the packing of this state's layout: the word it moved to (the last of them), or `None` when they do not
    /// fit the ms `clock` reads (or the mutex must decide). The word stays the last id issued, so the argument above
    /// holds as for one id. The first try is inlined into the caller; a swap lost to another caller tries again
    /// out of line, so the common case keeps few registers.
    #[inline(always)]
    pub(super) fn swap<C: Clock>(&self, p: &Packing, clock: &C, count: u64) -> Option<u64> {
        match self.try_swap(p, clock, count, self.word.load(Ordering::Acquire))? {
            Ok(next) => Some(next),
            Err(current) => self.swap_again(p, clock, count, current),
        }
    }

    /// [`swap`](Self::swap) after a lost try, from the word that won: tries again until a swap succeeds or the mutex
    /// must decide.
    #[cold]
    #[inline(never)]
    fn swap_again<C: Clock>(&self, p: &Packing, clock: &C, count: u64, mut word: u64) -> Option<u64> {
        loop {
            match self.try_swap(p, clock, count, word)? {
                Ok(next) => return Some(next),
                Err(current) => word = current,
            }
        }
    }

    /// One try from `word` (just loaded): the word moved to (`Ok`), the word another caller (or the mutex) put in
    /// meanwhile (`Err`), or `None` when the mutex must decide.
    #[inline(always)]
    fn try_swap<C: Clock>(&self, p: &Packing, clock: &C, count: u64, word: u64) -> Option<Result<u64, u64>> {
        if word == CLOSED {
            return None;
        }
        // A clock before the epoch wraps to 2^64 - epoch or more: past any bound (a timestamp, below 2^63).
        let t = clock.now_ms().wrapping_sub(p.epoch);
        // After the clock, so nothing read before the call is kept across it but the word.
        if t > self.bound.load(Ordering::Acquire) {
            return None;
        }
        let last = word >> p.timestamp_shift;
        // The last of the ids taken: sequence `count - 1` of a new ms, or `count` past the word in its own.
        let next = if t > last {
            (t << p.timestamp_shift) | (word & p.clock_back_bits) | (count - 1)
        } else if t == last && count <= p.max_sequence - (word & p.max_sequence) {
            word + count
        } else {
            return None;
        };
        // On failure: another caller issued an id (or the mutex closed the word), and the next try reads the clock
        // again after its word. A weak swap may also fail with the word unchanged (on LL/SC machines).
        Some(self.word.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire).map(|_| next))
    }
}

impl Stop for Shared {
    /// Stops every generator of the state for good, from outside them (a lease that finds its slot taken): a fence,
    /// as `set_deadline(0)` is (point 4 above), so once it returns no thread issues another id, and every call from
    /// then on returns `why`.
    fn stop(&self, why: Error) {
        self.close().stop(why);
    }
}
