//! `workerSlots`: the worker-id slots a set of environment variables would use on this host.

use std::collections::HashMap;

use napi::{Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::{Config, Options, Source};
use crate::core::identity::{check, lease_dir};
use crate::core::layout::max_value;
use crate::core::lease::SlotHolder;
use crate::core::time::{Clock, SystemClock};

use super::env::{read_env_object, JsEnv, Overlay};
use super::errors::raise;
use super::report::ConfigSource;

/// A slot whose lease file names a process: its holder, or (in `gone`) its last holder.
#[napi(object, use_nullable = true)]
pub struct SlotRecord {
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The process the slot's lease file names. In `recorded` it holds the slot (on Linux, it holds the file's lock;
    /// on Windows, the slot's claim); in `gone` it no longer does.
    pub pid: u32,
    /// Whether that process holds the slot now: `true` in `recorded`, `false` in `gone`.
    pub live: bool,
    /// Unix ms at which that process took the slot, or `null` when its lease file does not say (a version-1 record).
    pub since: Option<f64>,
    /// Its host name, or `null` when its lease file does not say.
    pub host: Option<String>,
    /// Its command line (arguments joined by spaces, at most 256 bytes, cut on a character boundary), or `null`
    /// when its lease file does not say.
    pub command: Option<String>,
}

impl From<SlotHolder> for SlotRecord {
    fn from(h: SlotHolder) -> SlotRecord {
        let text = |s: String| Some(s).filter(|s| !s.is_empty());
        let r = h.record;
        SlotRecord {
            datacenter_id: h.datacenter_id,
            worker_id: h.worker_id,
            pid: r.pid,
            live: h.live,
            since: Some(r.since as f64).filter(|&s| s > 0.0),
            host: text(r.host),
            command: text(r.command),
        }
    }
}

/// The worker-id slots of a configuration on this host, and what its processes' first ids would meet.
#[napi(object, use_nullable = true)]
pub struct WorkerSlots {
    /// The datacenter id configured (its default when none is); see `datacenterIdSource`.
    pub datacenter_id: u32,
    /// Where the datacenter id comes from: `'lease'` when the automatic lease picks it too (none configured), each
    /// process taking the lowest free slot of every datacenter id of `datacenterBits`, datacenterId 0's first.
    pub datacenter_id_source: ConfigSource,
    /// Where the worker id comes from (`'lease'`: the automatic lease; `'default'`: none, with leases off).
    pub worker_id_source: ConfigSource,
    pub datacenter_bits: u32,
    pub worker_bits: u32,
    /// Whether slots are leased (`SNOWID_LEASE`).
    pub lease: bool,
    /// Whether the worker ids come from the automatic lease: leases on, and no worker id configured (no
    /// `SNOWID_WORKER_ID`, `workerId` or `SNOWID_WORKER_ID_FROM`).
    pub automatic: bool,
    /// The slots a live process holds, read without taking any lock: of every datacenter id the automatic lease
    /// would search (all of them, when it picks the datacenter id), else of `datacenterId`. Empty when leases are off.
    pub recorded: Vec<SlotRecord>,
    /// The slots of the same datacenter ids whose lease file names a process that no longer holds them (it exited,
    /// was killed, or let the slot go): their last holder, for the record. Free to take, unless their marks reach
    /// ahead of the clock. Empty when leases are off.
    pub gone: Vec<SlotRecord>,
    /// The warning each process would give (`SNOWID_IDENTITY_UNCHOSEN`) for an identity no one chose in a plain
    /// container, or `null`.
    pub warning: Option<String>,
}

/// The worker-id slots that processes started with `env` (merged over this process's `process.env`, as
/// `cluster.fork(env)` does: a variable given as `undefined` is unset) would use, their configuration resolved as
/// theirs will be: their datacenter id, how many worker ids there are, whether the automatic lease gives them their
/// ids, which slots' lease files name a live process (and which a process that has gone), with who they are, and the identity rule as their first ids would meet it. It
/// takes no lock and starts nothing. `snowid/cluster` uses it to fork.
/// @throws {Error} `ERR_SNOWID_IDENTITY_REQUIRED` where their first ids would be refused: no identity chosen where
/// replicas are the norm (see docs/guarantees.md).
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when the configuration is bad.
/// @throws {Error} `ERR_SNOWID_LEASE_DIR` when the lease directory cannot be used.
#[napi]
pub fn worker_slots(
    env: Env,
    #[napi(ts_arg_type = "Record<string, string | undefined>")] vars: Option<Unknown>,
) -> Result<WorkerSlots> {
    let raw = env.raw();
    let vars = match vars {
        Some(v) => read_env_object(raw, v.raw())?,
        None => HashMap::new(),
    };
    let base = JsEnv::new(raw);
    let overlay = Overlay { vars, base: &base };
    let config = Config::resolve(&Options::default(), &overlay, SystemClock.now_ms());
    let config = base.finish(config).map_err(|e| raise(raw, &e))?;
    let warning = check(&config).map_err(|e| raise(raw, &e))?;
    let dc = config.datacenter_id.value;
    let automatic = config.lease.value && config.worker_id.source == Source::Lease;
    let from_lease = automatic && config.datacenter_id.source == Source::Lease;
    let mut recorded = Vec::new();
    let mut gone = Vec::new();
    if config.lease.value {
        let datacenters = if from_lease { 0..=max_value(config.datacenter_bits.value) as u32 } else { dc..=dc };
        let dir = lease_dir(&config).map_err(|e| raise(raw, &e))?;
        for holder in dir.holders(datacenters).map_err(|e| raise(raw, &e))? {
            let list = if holder.live { &mut recorded } else { &mut gone };
            list.push(SlotRecord::from(holder));
        }
    }
    Ok(WorkerSlots {
        datacenter_id: dc,
        datacenter_id_source: config.datacenter_id.source.into(),
        worker_id_source: config.worker_id.source.into(),
        datacenter_bits: config.datacenter_bits.value,
        worker_bits: config.worker_bits.value,
        lease: config.lease.value,
        automatic,
        recorded,
        gone,
        warning,
    })
}
