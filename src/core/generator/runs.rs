//! Runs: ids of one ms that one thread claimed by one swap of the shared word, and hands out alone (see `Shared`,
//! "Runs", for why they are unique and when they end).
//!
//! A run is valid while its state is still in the generation it was claimed in. A [`Generation`] changes when a
//! mutex section begins, and when a swap moves the word to a later ms while runs exist, so the thread's run of an
//! older generation is never handed out.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where every generation comes from: even numbers, each handed out once in the process, so a thread's run can
/// never match a section or a state other than the one it was claimed in, even when a freed state's memory is
/// reused.
static GENERATIONS: AtomicU64 = AtomicU64::new(2);

/// The bit of a generation that says a run was claimed in it, so threads look for one.
pub(super) const RUNS: u64 = 1;

/// The most ids a thread claims at once.
const MAX_RUN: u64 = 64;

/// How many ids a thread claims at once after losing a swap: 1/4096 of a ms's sequence values (`max_sequence + 1`),
/// at most 64, so the rest a thread leaves unused costs little of the cap. 1 for the default layout.
pub(super) fn run_len(max_sequence: u64) -> u64 {
    ((max_sequence + 1) >> 12).clamp(1, MAX_RUN)
}

fn fresh() -> u64 {
    GENERATIONS.fetch_add(2, Ordering::Relaxed)
}

/// A shared state's generation, with [`RUNS`] set once a run was claimed in it. Read by every call and written at
/// most a few times per ms, so it has a cache line (and its neighbour, which some CPUs fetch in pairs) to itself,
/// away from the word that every call swaps.
#[repr(align(128))]
pub(super) struct Generation(AtomicU64);

impl Generation {
    pub(super) fn new() -> Generation {
        Generation(AtomicU64::new(fresh()))
    }

    #[inline]
    pub(super) fn load(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Whether a run was claimed in the current generation.
    #[inline]
    pub(super) fn has_runs(&self) -> bool {
        self.0.load(Ordering::Relaxed) & RUNS != 0
    }

    /// A mutex section begins, right after it closed the word: no run claimed before it is handed out under it.
    pub(super) fn begin_section(&self) {
        self.0.store(fresh(), Ordering::Release);
    }

    /// Flags the generation as having runs, before the swap that claims one (which releases the flag): a swap into
    /// a later ms that comes after the claim sees the flag, and ends the run ([`Generation::end_runs`]).
    pub(super) fn flag_runs(&self) {
        if !self.has_runs() {
            self.0.fetch_or(RUNS, Ordering::Relaxed);
        }
    }

    /// Ends every thread's run, after the word moved to a later ms, before the id that moved it is returned: a run
    /// of an earlier ms is then never handed out after an id of a later one, even when the clock steps back to the
    /// run's ms. One write per ms, and only while there are runs; a section's newer generation is left as it is.
    pub(super) fn end_runs(&self) {
        let g = self.0.load(Ordering::Relaxed);
        if g & RUNS != 0 {
            let _ = self.0.compare_exchange(g, fresh(), Ordering::Release, Ordering::Relaxed);
        }
    }
}

/// The rest of a run of one ms claimed by one swap, which only this thread hands out: `next` to `last`, word values,
/// valid while the state is still in `generation`.
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
    static RUN: Cell<Run> = const { Cell::new(Run::NONE) };
}

/// The next word value of this thread's run, when it has one of `generation` at the ms `timestamp()` reads (ms since
/// the epoch, read only when there is a run). A run of another ms is dropped.
#[inline]
pub(super) fn take(generation: u64, timestamp_shift: u32, timestamp: impl FnOnce() -> Option<u64>) -> Option<u64> {
    RUN.with(|cell| {
        let run = cell.get();
        if run.generation != generation & !RUNS || run.next > run.last {
            return None;
        }
        if timestamp() != Some(run.next >> timestamp_shift) {
            cell.set(Run::NONE);
            return None;
        }
        cell.set(Run { next: run.next + 1, ..run });
        Some(run.next)
    })
}

/// Keeps `next..=last` (word values, already issued by the swap that claimed them) as this thread's run, of
/// `generation` (read before the word; the claim flagged it as having runs).
pub(super) fn keep(generation: u64, next: u64, last: u64) {
    RUN.with(|cell| cell.set(Run { generation: generation & !RUNS, next, last }));
}

/// Drops this thread's run, before it issues ids by another way: a run's ids are below them.
pub(super) fn drop_mine(generation: &Generation) {
    if generation.has_runs() {
        RUN.with(|cell| cell.set(Run::NONE));
    }
}
