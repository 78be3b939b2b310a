//! The thread that watches held slots off the id path (see `Lease::repair`): it looks at each every
//! [`REPAIR_EVERY_MS`]. It holds no lock while it sleeps and keeps no event loop alive.

use std::sync::{Arc, OnceLock};
use std::thread::Thread;

use parking_lot::Mutex;

use super::super::time::{Clock, SystemClock};

/// How often the thread looks at the slots whose marks reach past the clock.
pub const REPAIR_EVERY_MS: u64 = 10;

/// A held slot the thread watches.
pub trait Watched: Send + Sync {
    /// Looks at the slot at Unix ms `now`.
    fn repair(&self, now: u64);
}

/// The slots watched, for the life of the process (as the process holds them), and whether the thread started.
struct Watch {
    slots: Mutex<Vec<Arc<dyn Watched>>>,
    thread: OnceLock<Option<Thread>>,
}

fn watch_list() -> &'static Watch {
    static WATCH: OnceLock<Watch> = OnceLock::new();
    WATCH.get_or_init(|| Watch { slots: Mutex::new(Vec::new()), thread: OnceLock::new() })
}

/// Watches `slot` from now on, starting the thread the first time.
pub fn watch(slot: Arc<dyn Watched>) {
    let w = watch_list();
    w.slots.lock().push(slot);
    // Without the thread, marks are still put back at the holder's next mark write.
    w.thread.get_or_init(|| {
        std::thread::Builder::new().name("snowid-lease".into()).spawn(run).ok().map(|h| h.thread().clone())
    });
}

fn run() {
    loop {
        std::thread::sleep(std::time::Duration::from_millis(REPAIR_EVERY_MS));
        let slots: Vec<Arc<dyn Watched>> = watch_list().slots.lock().clone();
        let now = SystemClock.now_ms();
        for slot in slots {
            slot.repair(now);
        }
    }
}
