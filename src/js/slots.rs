//! `workerSlots`: the worker-id slots a set of environment variables would use on this host.

use std::collections::HashMap;

use napi::{Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::{Config, Options};
use crate::core::identity::lease_dir;
use crate::core::time::{Clock, SystemClock};

use super::env::{read_env_object, JsEnv, Overlay};
use super::errors::raise;

/// A slot whose lease file names a process.
#[napi(object)]
pub struct SlotRecord {
    pub worker_id: u32,
    /// The process that holds the slot: its lease file names it, and (on Linux) it holds the file's lock.
    pub pid: u32,
}

/// The worker-id slots of a configuration on this host.
#[napi(object)]
pub struct WorkerSlots {
    pub datacenter_id: u32,
    pub worker_bits: u32,
    /// Whether slots are leased (`SNOWID_LEASE`).
    pub lease: bool,
    /// The slots a live process holds, read without taking any lock (empty when leases are off).
    pub recorded: Vec<SlotRecord>,
}

/// The worker-id slots that processes started with `env` (merged over this process's `process.env`, as
/// `cluster.fork(env)` does) would use: their datacenterId, how many worker ids there are, and which slots' lease
/// files name a process. It takes no lock and starts nothing. `snowid/cluster` uses it to hand out slots.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when the configuration is bad.
/// @throws {Error} `ERR_SNOWID_LEASE_DIR` when the lease directory cannot be used.
#[napi]
pub fn worker_slots(
    env: Env,
    #[napi(ts_arg_type = "Record<string, string | undefined>")] vars: Option<Unknown>,
) -> Result<WorkerSlots> {
    let raw = env.raw();
    let mut vars = match vars {
        Some(v) => read_env_object(raw, v.raw())?,
        None => HashMap::new(),
    };
    // The worker id is what the caller is about to choose, so any inherited one is ignored.
    for name in ["SNOWID_WORKER_ID", "workerId"] {
        vars.insert(name.to_string(), "0".to_string());
    }
    let base = JsEnv::new(raw);
    let overlay = Overlay { vars, base: &base };
    let config = Config::resolve(&Options::default(), &overlay, SystemClock.now_ms());
    let config = base.finish(config).map_err(|e| raise(raw, &e))?;
    let dc = config.datacenter_id.value;
    let mut recorded = Vec::new();
    if config.lease.value {
        let dir = lease_dir(&config).map_err(|e| raise(raw, &e))?;
        for (worker_id, pid) in dir.recorded(dc).map_err(|e| raise(raw, &e))? {
            recorded.push(SlotRecord { worker_id, pid });
        }
    }
    Ok(WorkerSlots { datacenter_id: dc, worker_bits: config.worker_bits.value, lease: config.lease.value, recorded })
}
