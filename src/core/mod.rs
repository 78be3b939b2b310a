//! The pure Rust core: layout, generator state machine, configuration and decimal ids. No napi here.

pub mod claim;
pub mod config;
pub mod error;
pub mod generator;
pub mod id;
pub mod layout;
// The host lease is built on Unix's flock and file APIs. Elsewhere (WASI, which has no flock, and Windows) it is a
// stand-in whose directory never opens (lease_none.rs).
pub mod encoding;
#[cfg(unix)]
pub mod lease;
#[cfg(not(unix))]
#[path = "lease_none.rs"]
pub mod lease;
pub mod registry;
pub mod replicas;
pub mod start;
pub mod statefulset;
pub mod time;

/// Helpers shared by the core's tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::layout::MAX_ID;

    /// A small deterministic random generator (xorshift64*) for property tests.
    pub(crate) struct Rng(u64);

    impl Rng {
        pub(crate) fn new(seed: u64) -> Rng {
            Rng(seed | 1)
        }

        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        /// A value below `n` (`n` > 0).
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// An id of random magnitude: a random value cut to 1 to 63 bits.
        pub(crate) fn id(&mut self) -> u64 {
            let bits = 1 + self.below(63);
            (self.next() >> (64 - bits)) & MAX_ID
        }
    }
}
