//! Options and environment variables into one validated configuration that remembers where each value came from.
//!
//! Precedence: an option, then the `SNOWID_` variable, then (for the two ids) the JS article's own variable name,
//! then the default. The worker id goes on to a StatefulSet pod's ordinal (`SNOWID_WORKER_ID_FROM=statefulset`),
//! then to an automatic lease of a free slot on this host (unless leases are off, when it is 0); with no datacenter
//! id configured either, that lease chooses the datacenter id too. PM2's `NODE_APP_INSTANCE` is not read: it is
//! unique per app, not per host. Every value is checked in full; nothing is masked, clamped or truncated into range.

//!
//! - [`options`]: the one table of options, and the [`Options`] given in JS;
//! - [`values`]: integers, epochs and times as options and variables give them;
//! - `resolve`: the resolver, over an [`EnvSource`](super::env::EnvSource);
//! - [`resolved`]: the [`Config`] it makes, each value with its [`Source`].

pub mod options;
mod resolve;
pub mod resolved;
pub mod values;

pub(crate) use options::option_table;
pub use options::{OptionValue, Options, OPTIONS};
pub use resolve::wanted;
pub use resolved::{Config, IfTaken, Source, Sourced, WorkerIdFrom};
pub use values::time_arg;

#[cfg(test)]
mod documented_tests;
#[cfg(test)]
mod tests;
