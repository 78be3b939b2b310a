//! Generator options read from JS, and their typings.

use napi::{sys, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::{Options, OPTIONS};
use crate::core::error::{quote, Code, Error as CoreError};

use super::errors::raise;
use super::report::OnClockBack;
use super::values::{option_value, own_entries};

/// Reads a generator's options argument: a plain object whose every own key is a known option. A missing
/// argument, `undefined` and `null` are no options.
pub(crate) fn read_options(env: sys::napi_env, value: Option<Unknown>) -> Result<Options> {
    read_only(env, value, false)
}

/// Reads a layout's options argument, as `read_options` does, with only the layout's options (what reading ids
/// needs) known.
pub(crate) fn read_layout_options(env: sys::napi_env, value: Option<Unknown>) -> Result<Options> {
    read_only(env, value, true)
}

/// Reads an options argument whose keys must be options of the table, and, with `layout_only`, a layout's.
fn read_only(env: sys::napi_env, value: Option<Unknown>, layout_only: bool) -> Result<Options> {
    let known = |name: &str| OPTIONS.iter().any(|o| o.name == name && (o.layout || !layout_only));
    let mut opts = Options::default();
    let Some(value) = value else {
        return Ok(opts);
    };
    for (name, v) in own_entries(env, value.raw(), "options")? {
        let slot = if known(&name) { opts.slot(&name) } else { None };
        let Some(slot) = slot else {
            let e = CoreError::type_error(
                Code::InvalidConfig,
                "options",
                &format!("only the options {}", option_names(layout_only).join(", ")),
                &format!("an unknown option {}", quote(&name)),
            );
            return Err(raise(env, &e));
        };
        *slot = option_value(env, v)?;
    }
    Ok(opts)
}

/// Options of a generator. Each one left out is read from its environment variable, else takes its default.
/// Numbers must be integers in range: nothing is masked, clamped or truncated.
#[napi(object, object_from_js = false)]
#[allow(dead_code)] // Declares the typings only: `read_options` reads the object itself, to check every value.
pub struct SnowflakeOptions {
    /// Datacenter (or machine) number, 0 to 2^datacenterBits - 1. Env `SNOWID_DATACENTER_ID`, else `datacenterId`;
    /// else, when the worker id comes from the lease too, the lease's: datacenterId 0's slots first, then 1's, and so
    /// on; else 0.
    /// @default the lease's datacenter id, or 0
    pub datacenter_id: Option<u32>,
    /// Worker (process) number, 0 to 2^workerBits - 1. Env `SNOWID_WORKER_ID`, else `workerId`, else the ordinal of
    /// a StatefulSet pod's host name with `workerIdFrom: 'statefulset'`; else the lowest slot no other process on
    /// this host holds (the lease); else 0 when leases are off. PM2's `NODE_APP_INSTANCE` is not read.
    /// @default the lease's slot
    pub worker_id: Option<u32>,
    /// Starting clock-back value, 0 to 2^clockBackBits - 1. Env `SNOWID_CLOCK_BACK`.
    /// @default 0
    pub clock_back: Option<u32>,
    /// Epoch: Unix ms, a decimal string of Unix ms, an ISO-8601 date (`YYYY-MM-DD`, or a date-time with `Z` or an
    /// offset), or a `Date`. Not in the future. Given as a number of ms, it is 0 or from 2000-01-01: a number before
    /// that is most likely seconds, and is refused (give a date before 2000 as ISO-8601 text or a `Date`). Env
    /// `SNOWID_EPOCH`.
    /// @default 1580486400000 (2020-02-01T00:00:00+08:00)
    #[napi(ts_type = "number | string | Date")]
    pub epoch: Option<f64>,
    /// Width of the datacenterId field in bits, 0 to 32. Env `SNOWID_DATACENTER_BITS`.
    /// @default 3
    pub datacenter_bits: Option<u32>,
    /// Width of the workerId field in bits, 0 to 32. Env `SNOWID_WORKER_BITS`.
    /// @default 5
    pub worker_bits: Option<u32>,
    /// Width of the clockBack field in bits, 0 to 32. Env `SNOWID_CLOCK_BACK_BITS`.
    /// @default 2
    pub clock_back_bits: Option<u32>,
    /// Width of the sequence field in bits, 0 to 32. Env `SNOWID_SEQUENCE_BITS`.
    /// @default 12
    pub sequence_bits: Option<u32>,
    /// What to do when the clock moves backwards. Env `SNOWID_ON_CLOCK_BACK`.
    /// @default 'bits'
    pub on_clock_back: Option<OnClockBack>,
    /// Under `'wait'`, the longest the generator blocks for the clock to catch up, 0 to 60000 ms.
    /// Env `SNOWID_MAX_WAIT_MS`.
    /// @default 1000
    pub max_wait_ms: Option<u32>,
    /// How far ahead of the clock, 0 to 60000 ms, the generator may move on when a ms is full (bounded borrowing).
    /// Timestamps may then run ahead of real time by up to this much. Env `SNOWID_MAX_LEAD_MS`.
    /// @default 0
    pub max_lead_ms: Option<u32>,
    /// Whether to lease the (datacenterId, workerId) slot on this host, so that no two live processes use it.
    /// Env `SNOWID_LEASE` (`on` or `off`).
    /// @default true
    pub lease: Option<bool>,
    /// The lease directory. Env `SNOWID_LEASE_DIR`.
    /// @default `/dev/shm/snowid` on Linux (`/tmp/snowid` without `/dev/shm`), `/tmp/snowid` on macOS,
    /// `%ProgramData%\snowid` on Windows
    pub lease_dir: Option<String>,
    /// A separate set of this host's slots, 1 to 64 characters of `A-Z a-z 0-9 . _ -`: processes of another
    /// namespace, or of none, never see these slots taken. For tests. Env `SNOWID_LEASE_NAMESPACE`.
    /// @default unset (the host's slots)
    pub lease_namespace: Option<String>,
    /// What a worker id given as a number does when another live process on this host holds its slot: `'fail'`
    /// throws `ERR_SNOWID_WORKER_ID_IN_USE`; `'next'` gives way to the automatic lease, from that slot on. Env
    /// `SNOWID_WORKER_ID_IF_TAKEN`, which covers only a worker id from the environment; the option covers the
    /// `workerId` option too.
    /// @default 'fail'
    #[napi(ts_type = "'fail' | 'next'")]
    pub worker_id_if_taken: Option<String>,
    /// `'statefulset'`: with no worker id given as a number, the worker id is the ordinal at the end of the host
    /// name, as a Kubernetes StatefulSet names its pods (`web-3` is 3). Env `SNOWID_WORKER_ID_FROM`.
    /// @default unset
    #[napi(ts_type = "'statefulset'")]
    pub worker_id_from: Option<String>,
    /// `true` declares this the only instance of the service: where replicas are the norm (Kubernetes, ECS, Cloud
    /// Run, Nomad, Heroku, Fly.io, AWS Lambda), the first id then goes ahead with no worker id or datacenter id chosen
    /// instead of throwing `ERR_SNOWID_IDENTITY_REQUIRED`, and a plain container gives no warning. Env
    /// `SNOWID_SINGLE_INSTANCE` (`true` or `false`).
    /// @default false
    pub single_instance: Option<bool>,
}

/// The names of the options a generator (or, with `layout_only`, a layout) takes, for messages.
fn option_names(layout_only: bool) -> Vec<&'static str> {
    OPTIONS.iter().filter(|o| o.layout || !layout_only).map(|o| o.name).collect()
}
