//! A slot this process holds, with its record: the [`Fence`] of the generators of its identity.

#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Weak;

use parking_lot::Mutex;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::super::fence::{Fence, Stop};
use super::super::time::format_iso;
use super::backend::{SlotFile, Trouble};
use super::record::Record;
use super::repair::{self, Watched};

/// A slot this process holds, with its record.
///
/// The slot is this process's for its whole life: its claims are bound before it takes the slot and are freed only
/// by its exit, whatever happens to the files. At every mark write it finds the slot file again from the configured
/// path, as a newcomer would, so that its marks are where the next holder will look (see [`SlotFile::locate`]):
/// the same file; a file it may take over; or anything else (a file another process locked, another user's file,
/// marks ahead of the clock, a path it cannot use), when it stops with `ERR_SNOWID_LEASE_LOST`, because it cannot
/// be sure whose ids those are. The loss is for good.
///
/// While its marks reach past the clock, the repair thread does the same every
/// [`REPAIR_EVERY_MS`](super::repair::REPAIR_EVERY_MS), off the id path (see [`Lease::repair`]); when it finds the
/// slot lost, it stops every generator writing marks here at once, so that a process in another network namespace,
/// which the claims do not reach, that took the slot in a directory put in place of this one shares at most that
/// long of ids with it.
pub struct Lease {
    /// The slot file's configured path, for messages.
    path: PathBuf,
    datacenter_id: u32,
    worker_id: u32,
    /// The record as found when the slot was taken: the earlier holders' marks.
    previous: Record,
    held: Mutex<Held>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("path", &self.path)
            .field("datacenter_id", &self.datacenter_id)
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

/// Where a lease's marks are written, and the record written last, changed together.
struct Held {
    file: Box<dyn SlotFile>,
    record: Record,
    loss: Loss,
}

/// What a holder knows of losing its slot, and whom it stops when it does.
#[derive(Default)]
struct Loss {
    /// The `ERR_SNOWID_LEASE_LOST` the holder met, once it met one: it is for good, and every mark write returns it.
    error: Option<Error>,
    /// Unix ms of the last check that found the configured path leading to this holder's own file.
    confirmed: u64,
    /// The states of the generators that write marks here, to stop when the slot is lost (see [`Fence::guard`]).
    /// Emptied once they are stopped.
    stops: Vec<Weak<dyn Stop>>,
}

impl Lease {
    /// A lease of the slot whose file at `path` was just taken, with the record its earlier holders left. It names
    /// this process as the holder at once (pid, host name, command line, and `now` as the time it took the slot),
    /// keeping the earlier marks, before it is returned.
    pub(super) fn take(
        path: PathBuf,
        datacenter_id: u32,
        worker_id: u32,
        file: Box<dyn SlotFile>,
        previous: Record,
        now: u64,
    ) -> Result<Lease> {
        let (host, command) = super::process::this_process();
        let record = Record { since: now, host: host.clone(), command: command.clone(), ..previous.clone() };
        let held = Held { file, record, loss: Loss::default() };
        let lease = Lease { path, datacenter_id, worker_id, previous, held: Mutex::new(held) };
        lease.advance(now, |_| Ok(()))?;
        Ok(lease)
    }

    pub fn worker_id(&self) -> u32 {
        self.worker_id
    }

    pub fn datacenter_id(&self) -> u32 {
        self.datacenter_id
    }

    /// The marks earlier holders left, as found when this process took the slot.
    pub fn previous(&self) -> &Record {
        &self.previous
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the next version of the record: the current one changed by `edit`, naming this process as holder,
    /// to the slot file the configured path leads to now (see [`SlotFile::locate`]).
    fn advance(&self, now: u64, edit: impl FnOnce(&mut Record) -> Result<()>) -> Result<()> {
        let mut held = self.held.lock();
        self.advance_held(&mut held, now, edit)
    }

    fn advance_held(&self, held: &mut Held, now: u64, edit: impl FnOnce(&mut Record) -> Result<()>) -> Result<()> {
        if let Some(e) = &held.loss.error {
            return Err(e.clone());
        }
        let mut next = held.record.clone();
        next.seq += 1;
        next.pid = std::process::id();
        edit(&mut next)?;
        match held.file.locate(now) {
            Ok(()) => held.loss.confirmed = now,
            Err(Trouble::Lost { holder, why }) => {
                let e = self.lost(holder, &why, held.loss.confirmed, now);
                held.loss.error = Some(e.clone());
                return Err(e);
            }
            Err(Trouble::Failed(e)) => return Err(e),
        }
        held.file.write(&next)?;
        held.record = next;
        Ok(())
    }

    /// `ERR_SNOWID_LEASE_LOST`, found at `now`: the path leads to what `why` says, whose record names `holder` (when
    /// one can be read). The last check that found this holder's own file there was at `since`: ids issued after it
    /// may also have been issued by the process that took the slot.
    fn lost(&self, holder: Option<u32>, why: &str, since: u64, now: u64) -> Error {
        let holder = match holder {
            Some(pid) if pid == std::process::id() => {
                format!("the record there names this process (pid {pid}): a copy of its own file")
            }
            Some(pid) => format!("the record there names pid {pid} as its holder"),
            None => "no lease record there can be read, so its holder cannot be named".to_string(),
        };
        Error::new(
            Code::LeaseLost,
            Class::Error,
            format!(
                "lease file {}: expected the file this process locked, found that {why}; {holder}. It issues no more ids \
                 on workerId {} (restart it to take a slot again); ids it issued after its last check that found its own \
                 file there, at {} ({} ms before), may collide with that holder's",
                quote_path(&self.path),
                self.worker_id,
                format_iso(since),
                now.saturating_sub(since)
            ),
        )
    }
}

impl Fence for Lease {
    /// Records that ids under `clock_back` may be issued up to Unix ms `until`, dropping marks before `now` only
    /// when the record is full (see [`Record::reserve`]), and writes the record before returning.
    fn reserve(&self, clock_back: u32, until: u64, now: u64) -> Result<()> {
        self.advance(now, |next| next.reserve(clock_back, until, now))?;
        // The mark reaches past the clock: the repair thread watches it from now on.
        repair::wake();
        Ok(())
    }

    fn guard(&self, state: Weak<dyn Stop>) {
        let lost = {
            let mut held = self.held.lock();
            if !held.loss.stops.iter().any(|s| std::ptr::addr_eq(s.as_ptr(), state.as_ptr())) {
                held.loss.stops.push(state.clone());
            }
            held.loss.error.clone()
        };
        if let (Some(why), Some(state)) = (lost, state.upgrade()) {
            state.stop(why);
        }
    }

    /// The `ERR_SNOWID_LEASE_LOST` a mark write or the repair thread met, once one did.
    fn lost(&self) -> Option<Error> {
        self.held.lock().loss.error.clone()
    }
}

impl Watched for Lease {
    /// Off the id path: while the record's marks reach past the clock (the only time they constrain anyone, and
    /// the only time ids may be being issued), puts them back where newcomers look when the configured path no
    /// longer leads to this holder's file, so that a file or directory deleted or moved under an idle holder does
    /// not take them away should it exit next. When that finds the slot lost (`ERR_SNOWID_LEASE_LOST`), or a mark
    /// write has, it stops every generator writing marks here at once. Any other error is left for the next mark
    /// write to report.
    fn repair(&self, now: u64) -> bool {
        let (why, stops) = {
            let mut held = self.held.lock();
            if held.loss.error.is_none() {
                if !held.record.reaches(now) {
                    return false;
                }
                if held.file.in_place() {
                    held.loss.confirmed = now;
                    return true;
                }
                let _ = self.advance_held(&mut held, now, |_| Ok(()));
            }
            match &held.loss.error {
                Some(e) if !held.loss.stops.is_empty() => (e.clone(), std::mem::take(&mut held.loss.stops)),
                Some(_) => return false,
                None => return true,
            }
        };
        // With the lease's lock let go: a generator writing a mark holds its state's lock, then takes this one.
        for state in stops {
            if let Some(state) = state.upgrade() {
                state.stop(why.clone());
            }
        }
        false
    }
}
