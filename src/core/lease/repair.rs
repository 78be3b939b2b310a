//! The thread that watches held slots off the id path (see `Lease::repair`): while some slot's marks reach past
//! the clock, it looks at each every [`REPAIR_EVERY_MS`]; when none does, it sleeps until a mark write wakes it. So
//! an idle process with a lease makes no periodic wake-ups. It holds no lock while it sleeps and keeps no event loop
//! alive.

use std::sync::{Arc, OnceLock};
use std::thread::Thread;

use parking_lot::Mutex;

use super::super::time::{Clock, SystemClock};

/// How often the thread looks at the slots whose marks reach past the clock.
pub const REPAIR_EVERY_MS: u64 = 10;

/// A held slot the thread watches.
pub trait Watched: Send + Sync {
    /// Looks at the slot at Unix ms `now`: whether to look again in [`REPAIR_EVERY_MS`] (its marks still reach past
    /// the clock).
    fn repair(&self, now: u64) -> bool;
}

/// The slots watched, for the life of the process (as the process holds them), and the thread, once started.
struct Watch {
    slots: Mutex<Vec<Arc<dyn Watched>>>,
    thread: OnceLock<Option<Thread>>,
    /// Held by the thread while it looks at the slots, so that [`unwatch`] can wait for a look to end.
    #[cfg(test)]
    pass: Mutex<()>,
}

fn watch_list() -> &'static Watch {
    static WATCH: OnceLock<Watch> = OnceLock::new();
    WATCH.get_or_init(|| Watch {
        slots: Mutex::new(Vec::new()),
        thread: OnceLock::new(),
        #[cfg(test)]
        pass: Mutex::new(()),
    })
}

/// For the tests: stops watching every slot `which` picks, once any look at it under way has ended, so that a test
/// removing its lease directory does not find it put back.
#[cfg(test)]
pub fn unwatch(which: impl Fn(&Arc<dyn Watched>) -> bool) {
    let w = watch_list();
    w.slots.lock().retain(|s| !which(s));
    drop(w.pass.lock());
}

/// Watches `slot` from now on, starting the thread the first time.
pub fn watch(slot: Arc<dyn Watched>) {
    let w = watch_list();
    w.slots.lock().push(slot);
    // Without the thread, marks are still put back at the holder's next mark write.
    w.thread.get_or_init(|| {
        std::thread::Builder::new().name("snowid-lease".into()).spawn(run).ok().map(|h| h.thread().clone())
    });
    wake();
}

/// Wakes the thread, should it sleep: a mark now reaches past the clock.
pub fn wake() {
    if let Some(Some(thread)) = watch_list().thread.get() {
        thread.unpark();
    }
}

fn run() {
    loop {
        #[cfg(test)]
        let pass = watch_list().pass.lock();
        let slots: Vec<Arc<dyn Watched>> = watch_list().slots.lock().clone();
        let now = SystemClock.now_ms();
        // Every slot is looked at, even once one asks to be looked at again.
        let again = slots.iter().fold(false, |again, slot| slot.repair(now) | again);
        drop(slots);
        #[cfg(test)]
        drop(pass);
        if again {
            std::thread::sleep(std::time::Duration::from_millis(REPAIR_EVERY_MS));
        } else {
            // Until `wake`; a wake that came first makes this return at once.
            std::thread::park();
        }
    }
}
