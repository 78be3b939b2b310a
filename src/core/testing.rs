//! Helpers shared by the core's tests: a deterministic random generator, a clock the test sets by hand, a fence
//! that records its marks, and temporary directories.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::error::{Class, Code, Error, Result};
use super::fence::Fence;
use super::generator::{ClockBackPolicy, Settings};
use super::layout::{Layout, Widths, DEFAULT_EPOCH, MAX_ID};
use super::time::Clock;

/// A small deterministic random generator (xorshift64*) for property tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An id of random magnitude: a random value cut to 1 to 63 bits.
    pub fn id(&mut self) -> u64 {
        let bits = 1 + self.below(63);
        (self.next() >> (64 - bits)) & MAX_ID
    }
}

/// The time the tests run at, in Unix ms.
pub const NOW: u64 = 1_795_000_000_000;

type Meanwhile = Box<dyn FnOnce() + Send>;

/// A clock the test sets by hand. With `tick_every` > 0 it also moves 1 ms forward after that many reads, as a
/// real clock does while a caller waits.
#[derive(Clone, Default)]
pub struct FakeClock {
    now: Arc<AtomicU64>,
    reads: Arc<AtomicU64>,
    tick_every: u64,
    slept: Arc<AtomicU64>,
    /// How many times a caller waited for the next ms.
    next_ms_waits: Arc<AtomicU64>,
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
    /// A clock at `now` that stays behind while the generator sleeps.
    pub fn stuck(now: u64) -> Self {
        FakeClock { sleep_moves: false, ..Self::at(now) }
    }
    pub fn ticking(now: u64, tick_every: u64) -> Self {
        FakeClock { tick_every, ..Self::at(now) }
    }
    pub fn set(&self, now: u64) {
        self.now.store(now, Ordering::SeqCst);
    }
    /// Moves the clock back by `ms` at once, even while other threads read (and tick) it.
    pub fn step_back(&self, ms: u64) {
        self.now.fetch_sub(ms, Ordering::SeqCst);
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
    pub fn next_ms_waits(&self) -> u64 {
        self.next_ms_waits.load(Ordering::SeqCst)
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
    /// Counts the wait and leaves the clock where it is: the test moves it (from another thread), or a ticking
    /// clock does after enough reads.
    fn sleep_to_next_ms(&self) {
        self.next_ms_waits.fetch_add(1, Ordering::SeqCst);
        std::thread::yield_now();
    }
}

/// Settings of datacenterId 1 and workerId 3 for a layout of `widths` (default epoch), waiting up to 1 s, with no lead.
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

/// A mark store that records what it is asked to store, and can be made to fail.
#[derive(Default)]
pub struct MemStore {
    pub writes: Mutex<Vec<(u32, u64)>>,
    pub fail: std::sync::atomic::AtomicBool,
}

impl Fence for MemStore {
    fn reserve(&self, clock_back: u32, until: u64, _now: u64) -> Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::new(Code::LeaseDir, Class::Error, "disk full"));
        }
        self.writes.lock().push((clock_back, until));
        Ok(())
    }
}

/// A directory of the test's own under the OS temp dir (`snowid-test-<pid>-<name>`), removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("snowid-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The directory's name: a lease namespace of the test's own, so that tests running at once, and other
    /// processes on the host, do not meet each other's slots.
    pub fn namespace(&self) -> String {
        self.0.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // A lease taken here is held for the life of the process, and its repair thread would make the directory
        // again while its marks reach past the clock.
        super::lease::forget_under(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A root directory holding the marker files `markers` (paths under it), and a `run` directory, as a container's
/// root would: for detecting where a process runs.
pub fn marker_root(markers: &[&str]) -> TempDir {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = TempDir::new(&format!("root-{}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(dir.join("run")).unwrap();
    for m in markers {
        std::fs::write(dir.join(m), "").unwrap();
    }
    dir
}
