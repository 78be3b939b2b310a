//! Host-local leases of (datacenterId, workerId) slots, and the high-water marks stored with them.
//!
//! Each slot is a file `dc<D>-worker<W>.lease` in the lease directory. A process takes a slot when it has bound the
//! slot's claims (named after the slot's id space, after the directory's configured path and after the directory's
//! identity: abstract sockets on Linux, named events on Windows) and an exclusive, non-blocking lock on the file, and
//! holds them all for its whole life. The OS frees them when the process exits or is killed. No file operation frees
//! a claim, so while a process lives no other process that sees its claims (on Linux, in its network namespace; on
//! Windows, on the machine) can take its slot, whatever happens to the file or the directory, and whatever directory
//! the other uses; the file's lock also reaches processes the claims do not, for as long as the file is left alone. The file keeps the slot's marks ([`record`]), for the holders that come after.
//! `worker_threads` share their process's leases.
//!
//! - [`backend`]: the interface of a lease directory (`Backend`, `SlotFile`) and what a platform supplies to it
//!   (`Os`: claims, the file's lock, files opened and checked, and an identity's claim within the process that every
//!   loaded copy of snowid sees); `host`, the slot logic written once over `Os`; `unix` (Linux, macOS, the BSDs,
//!   Android) and `windows`, which supply it, and `none` (WASI), which stands in for the whole backend;
//! - [`record`]: the slot file's format, and `files`: slot files read and checked alike on every platform;
//!   `process`: what a record says of its holder (host name, command line);
//! - [`space`]: the id space of a host's slots, and the names of a slot's claims;
//! - `slots`: which slot a process takes ([`LeaseDir`]);
//! - `holder`: a slot this process holds ([`Lease`]), the fence of its generators;
//! - `repair`: the thread that puts marks back under an idle holder.

// Where no backend implements them (WASI), the interface, the record format and the claims' names go unused.
#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub mod backend;
#[cfg(any(unix, windows))]
mod files;
mod holder;
#[cfg(any(unix, windows))]
mod host;
#[cfg(not(any(unix, windows)))]
mod none;
mod process;
#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub mod record;
mod repair;
mod slots;
#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub mod space;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

pub use backend::{CopyClaim, Sharing, SlotHolder};
pub use holder::Lease;
pub use record::Record;
#[cfg(test)]
pub use slots::forget_under;

/// The platform's backend.
#[cfg(unix)]
pub type Platform = unix::UnixDir;
#[cfg(windows)]
pub type Platform = windows::WinDir;
#[cfg(not(any(unix, windows)))]
pub type Platform = none::NoDir;

/// The folder for application data of every user of the machine (`%ProgramData%`, as the shell knows it).
#[cfg(windows)]
pub use windows::program_data;

/// An identity's claim by one loaded copy of snowid, on this platform.
#[cfg(unix)]
pub type PlatformCopyClaim = unix::UnixCopyClaim;
#[cfg(windows)]
pub type PlatformCopyClaim = windows::WinCopyClaim;
#[cfg(not(any(unix, windows)))]
pub type PlatformCopyClaim = none::NoCopyClaim;

/// A lease directory of this platform.
pub type LeaseDir = slots::LeaseDir<Platform>;

#[cfg(all(test, any(unix, windows)))]
mod tests;
