//! `workerSlots`: the worker-id slots a set of environment variables would use on this host.

use std::collections::HashMap;
use std::ffi::OsString;
use std::ptr;

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::{Config, EnvSource, Options};
use crate::core::generator::{Clock, SystemClock};
use crate::core::lease::LeaseDir;

use super::errors::{check, raise};
use super::values::{own_entries, type_of};

/// A slot whose lease file names a process.
#[napi(object)]
pub struct SlotRecord {
    pub worker_id: u32,
    /// The pid that last wrote the slot's lease file. It may have exited since; the file does not say.
    pub pid: u32,
}

/// The worker-id slots of a configuration on this host.
#[napi(object)]
pub struct WorkerSlots {
    pub datacenter_id: u32,
    pub worker_bits: u32,
    /// Whether slots are leased (`SNOWID_LEASE`).
    pub lease: bool,
    /// The slots whose lease file names a process, read without taking any lock (empty when leases are off).
    pub recorded: Vec<SlotRecord>,
}

/// Environment variables given in JS over the process environment, as `cluster.fork(env)` merges them.
pub(crate) struct Overlay {
    vars: HashMap<String, String>,
}

impl EnvSource for Overlay {
    fn var(&self, name: &str) -> Option<OsString> {
        match self.vars.get(name) {
            Some(v) => Some(OsString::from(v)),
            None => std::env::var_os(name),
        }
    }
}

/// Reads an environment object as `cluster.fork(env)` does: `undefined` values are left out, every other value
/// becomes its string form.
pub(crate) fn read_env_object(env: sys::napi_env, value: sys::napi_value) -> Result<HashMap<String, String>> {
    let mut vars = HashMap::new();
    for (name, v) in own_entries(env, value, "env")? {
        if type_of(env, v)? == sys::ValueType::napi_undefined {
            continue;
        }
        let mut s = ptr::null_mut();
        // SAFETY: `v` is a value of the current call.
        check(unsafe { sys::napi_coerce_to_string(env, v, &mut s) })?;
        vars.insert(name, unsafe { String::from_napi_value(env, s) }?);
    }
    Ok(vars)
}

/// The worker-id slots that processes started with `env` (merged over this process's environment, as
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
    for name in ["SNOWID_WORKER_ID", "workerId", "NODE_APP_INSTANCE"] {
        vars.insert(name.to_string(), "0".to_string());
    }
    let overlay = Overlay { vars };
    let config = Config::resolve(&Options::default(), &overlay, SystemClock.now_ms()).map_err(|e| raise(raw, &e))?;
    let dc = config.datacenter_id.value;
    let mut recorded = Vec::new();
    if config.lease.value {
        let dir = LeaseDir::open(&config.lease_dir.value).map_err(|e| raise(raw, &e))?;
        for (worker_id, pid) in dir.recorded(dc).map_err(|e| raise(raw, &e))? {
            recorded.push(SlotRecord { worker_id, pid });
        }
    }
    Ok(WorkerSlots { datacenter_id: dc, worker_bits: config.worker_bits.value, lease: config.lease.value, recorded })
}

