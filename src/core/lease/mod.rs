//! Host-local leases of (datacenterId, workerId) slots, and the high-water marks stored with them.
//!
//! Each slot is a file `dc<D>-worker<W>.lease` in the lease directory. A process takes a slot when it has bound the
//! slot's claims (on Unix, abstract sockets named after the slot's id space, after the directory's configured path
//! and after its inode) and an exclusive, non-blocking lock on the file, and holds them all for its whole life. The
//! OS frees them when the process exits or is killed. No file operation frees a claim, so while a process lives no
//! other process in its network namespace can take its slot, whatever happens to the file or the directory, and
//! whatever directory the other uses; the file's lock also reaches processes in other network namespaces, for as
//! long as the file is left alone. The file keeps the slot's marks ([`record`]), for the holders that come after.
//! `worker_threads` share their process's leases.
//!
//! - [`backend`]: the interface a platform implements (claims, the file's lock, records in the file, and an
//!   identity's claim within the process that every loaded copy of snowid sees), and
//!   `unix` (Linux, macOS, the BSDs, Android) and `none` (WASI, and Windows until its backend lands), which
//!   implement it;
//! - [`record`]: the slot file's format;
//! - [`space`]: the id space of a host's slots, and the names of a slot's claims;
//! - `slots`: which slot a process takes ([`LeaseDir`]);
//! - `holder`: a slot this process holds ([`Lease`]), the fence of its generators;
//! - `repair`: the thread that puts marks back under an idle holder.

// Where no backend implements them yet (WASI, and Windows until its backend lands), the interface, the record format
// and the claims' names go unused.
#[cfg_attr(not(unix), allow(dead_code))]
pub mod backend;
mod holder;
#[cfg(not(unix))]
mod none;
#[cfg_attr(not(unix), allow(dead_code))]
pub mod record;
mod repair;
mod slots;
#[cfg_attr(not(unix), allow(dead_code))]
pub mod space;
#[cfg(unix)]
mod unix;

pub use backend::{CopyClaim, Sharing};
pub use holder::Lease;
pub use record::Record;
#[cfg(test)]
pub use slots::forget_under;

/// The platform's backend.
#[cfg(unix)]
pub type Platform = unix::UnixDir;
#[cfg(not(unix))]
pub type Platform = none::NoDir;

/// An identity's claim by one loaded copy of snowid, on this platform.
#[cfg(unix)]
pub type PlatformCopyClaim = unix::UnixCopyClaim;
#[cfg(not(unix))]
pub type PlatformCopyClaim = none::NoCopyClaim;

/// A lease directory of this platform.
pub type LeaseDir = slots::LeaseDir<Platform>;
