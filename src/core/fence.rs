//! What guards an identity's ids from outside the generator: the interface a lease implements, so that the generator
//! never depends on a lease (as sonyflake's generator takes its machine id from outside through `MachineID` and
//! `CheckMachineID`).
//!
//! - A [`Fence`] stores high-water marks ("ids under clockBack `c` may have been issued up to Unix ms `until`")
//!   before the generator issues ids past them, and may stop the generators it guards at any time.
//! - A generator's shared state is [`Stop`]: once `stop` returns, it issues no more ids.

use std::sync::Weak;

use super::error::{Error, Result};

/// An identity's marks: (clockBack, Unix ms) pairs, at most one per clockBack value.
pub type Marks = Vec<(u32, u64)>;

/// The mark for `clock_back` among `marks`: 0 when there is none.
pub fn mark_of(marks: &[(u32, u64)], clock_back: u32) -> u64 {
    marks.iter().find(|(c, _)| *c == clock_back).map_or(0, |(_, m)| *m)
}

/// Durable high-water marks, and the right to stop the generators that write them.
pub trait Fence: Send + Sync {
    /// Stores "ids under `clock_back` may be issued up to Unix ms `until`" before returning; the generator issues
    /// nothing past the old mark unless this succeeds. `now` is the clock the generator read.
    fn reserve(&self, clock_back: u32, until: u64, now: u64) -> Result<()>;

    /// Has `state`, whose generators write their marks here, stopped as soon as the fence finds its identity lost
    /// (at once when it already is). A fence with nothing to watch ignores it.
    fn guard(&self, _state: Weak<dyn Stop>) {}

    /// The error the fence found its identity lost with, once it did (for good); `None` while it holds.
    fn lost(&self) -> Option<Error> {
        None
    }
}

/// A generator state that can be stopped from outside its generators.
pub trait Stop: Send + Sync {
    /// Stops every generator of the state for good: once it returns no id is issued, and every call returns `why`.
    fn stop(&self, why: Error);
}
