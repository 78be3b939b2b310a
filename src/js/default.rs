//! The process's default generator (configured on first need, started by the first id) and the module
//! functions that use it.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use napi::{sys, Env, JsValue, Result, Unknown};
use napi_derive::napi;
use parking_lot::Mutex;

use crate::core::config::{Config, Options};
use crate::core::error::{Class, Code, Error as CoreError, Result as CoreResult};
use crate::core::generator::{Generator, Snapshot};
use crate::core::identity::{self, bind_worker};
use crate::core::layout::Layout;
use crate::core::time::{Clock, SystemClock};

use super::callbacks::{next_id_strings_impl, next_ids_impl};
use super::env::{JsEnv, Remembered};
use super::errors::{emit_warning, raise};
use super::options::read_options;
use super::report::{decode_with, report, stats_of, DecodedId, SnowidConfig, SnowidStats};
use super::values::{read_id, read_time, IdBigInt, IdString, Raw};

/// A configuration resolved from `opts` over the environment `env` holds now.
pub(crate) fn resolve(opts: &Options, env: &JsEnv) -> CoreResult<Config> {
    env.finish(Config::resolve(opts, env, SystemClock.now_ms()))
}

/// Whether the process has given its one warning of an identity no one chose.
static WARNED: AtomicBool = AtomicBool::new(false);

/// Gives `warning` (from `identity::generator` or `identity::check`), the first time there is one in this process, as a
/// `SnowidWarning` with the code `SNOWID_IDENTITY_UNCHOSEN`. Call it holding no lock: `process.emitWarning` is JS.
pub(crate) fn warn_once(env: sys::napi_env, warning: Option<String>) {
    if let Some(message) = warning {
        if !WARNED.swap(true, Ordering::AcqRel) {
            emit_warning(env, &message, "SNOWID_IDENTITY_UNCHOSEN");
        }
    }
}

/// The process-wide default generator, once it has issued its first id.
pub(crate) static DEFAULT: OnceLock<(Generator<SystemClock>, Config)> = OnceLock::new();
/// The default generator's configuration before it starts.
pub(crate) static PENDING: Mutex<Pending> =
    Mutex::new(Pending { options: None, seen: BTreeMap::new(), layout: None, config: None });

/// What `configure()` gave, and what was resolved from it and the environment on first need.
///
/// The environment is the `process.env` of the thread that first needs a value, and each variable is read once and
/// kept: `decode()` before the first id, `config()` and the generator itself all see the same values. Reading ids
/// resolves only the layout, so a variable it does not need can never stop it.
pub(crate) struct Pending {
    options: Option<Options>,
    seen: BTreeMap<String, Option<OsString>>,
    layout: Option<Layout>,
    config: Option<Config>,
}

impl Pending {
    fn config(&mut self, env: sys::napi_env) -> CoreResult<&Config> {
        let config = match self.config.take() {
            Some(c) => c,
            None => {
                let source = JsEnv::new(env);
                let remembered = Remembered { seen: RefCell::new(&mut self.seen), source: &source };
                let opts = self.options.clone().unwrap_or_default();
                source.finish(Config::resolve(&opts, &remembered, SystemClock.now_ms()))?
            }
        };
        Ok(self.config.insert(config))
    }

    fn layout(&mut self, env: sys::napi_env) -> CoreResult<Layout> {
        if let Some(c) = &self.config {
            return Ok(c.layout);
        }
        if let Some(l) = self.layout {
            return Ok(l);
        }
        let source = JsEnv::new(env);
        let remembered = Remembered { seen: RefCell::new(&mut self.seen), source: &source };
        let opts = self.options.clone().unwrap_or_default();
        let layout = source.finish(Config::resolve_layout(&opts, &remembered, SystemClock.now_ms()))?;
        Ok(*self.layout.insert(layout))
    }
}

#[inline]
pub(crate) fn default_generator(env: sys::napi_env) -> CoreResult<&'static Generator<SystemClock>> {
    match DEFAULT.get() {
        Some((g, _)) => Ok(g),
        None => start_default(env),
    }
}

#[cold]
pub(crate) fn start_default(env: sys::napi_env) -> CoreResult<&'static Generator<SystemClock>> {
    let mut pending = PENDING.lock();
    if let Some((g, _)) = DEFAULT.get() {
        return Ok(g);
    }
    let mut config = pending.config(env)?.clone();
    let (generator, warning) = identity::generator(&mut config)?;
    let generator = &DEFAULT.get_or_init(|| (generator, config)).0;
    drop(pending);
    warn_once(env, warning);
    Ok(generator)
}

/// The default generator's configuration, without starting it, refused (or warned of) as its first id would be. With
/// `bind`, an automatic worker id is leased so that it can be reported (the process keeps that slot, and the generator
/// will use it).
pub(crate) fn default_config(env: sys::napi_env, bind: bool) -> CoreResult<Config> {
    let mut pending = PENDING.lock();
    if let Some((_, c)) = DEFAULT.get() {
        return Ok(c.clone());
    }
    let mut config = pending.config(env)?.clone();
    let warning = identity::check(&config)?;
    if bind && config.worker_id_needs_lease() {
        bind_worker(&mut config)?;
    }
    drop(pending);
    warn_once(env, warning);
    Ok(config)
}

/// How many times `configure()` has replaced the pending configuration: a layout read before the generator starts is
/// kept by each thread with the count it was read under, and is current for as long as the count has not moved.
static CONFIGURED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's last layout read from the pending configuration, and the `CONFIGURED` count it was read under.
    static PENDING_LAYOUT: Cell<Option<(u64, Layout)>> = const { Cell::new(None) };
}

/// The default generator's layout, without starting it, and without reading the variables only generating needs.
/// Before the generator starts, a thread reads it under the `PENDING` lock once per configuration, not per call
/// (`decode` of ids an application only reads would otherwise take the lock every time).
#[inline]
pub(crate) fn default_layout(env: sys::napi_env) -> CoreResult<Layout> {
    counted_default_layout(env).map(|(_, layout)| layout)
}

/// [`default_layout`], with the `CONFIGURED` count it is current for: the layout stays the default's for as long as
/// the count has not moved (once the generator has started, `configure()` is refused and the count never moves).
pub(crate) fn counted_default_layout(env: sys::napi_env) -> CoreResult<(u64, Layout)> {
    if let Some((g, _)) = DEFAULT.get() {
        return Ok((CONFIGURED.load(Ordering::Acquire), *g.layout()));
    }
    let configured = CONFIGURED.load(Ordering::Acquire);
    if let Some((count, layout)) = PENDING_LAYOUT.with(Cell::get) {
        if count == configured {
            return Ok((count, layout));
        }
    }
    let mut pending = PENDING.lock();
    // Read under the lock, which `configure()` holds while it replaces the configuration and moves the count.
    let count = CONFIGURED.load(Ordering::Relaxed);
    let layout = pending.layout(env)?;
    PENDING_LAYOUT.with(|c| c.set(Some((count, layout))));
    Ok((count, layout))
}

/// A `Uint32Array` of two elements over `CONFIGURED` itself, for `index.js`'s `decode`, which keeps the default
/// layout it was last told with the count it is current for, and reads the count through this view to know that it
/// still is. `None` where the runtime cannot show JS this memory itself (one that refuses external buffers, or that
/// copies their data), which `index.js` takes as a layout never known to be current.
pub(crate) fn configured_view(env: sys::napi_env) -> Option<sys::napi_value> {
    let at = CONFIGURED.as_ptr().cast::<std::ffi::c_void>();
    let (mut buffer, mut view, mut data, mut length) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), 0usize);
    // SAFETY: `CONFIGURED` is a static, so its 8 bytes outlive every view, which nothing frees (no finalizer); JS
    // only reads it, and an aligned 32-bit load of a word that an atomic store changes sees the old or the new word.
    let made = unsafe { sys::napi_create_external_arraybuffer(env, at, 8, None, ptr::null_mut(), &mut buffer) }
        == sys::Status::napi_ok
        && unsafe { sys::napi_get_arraybuffer_info(env, buffer, &mut data, &mut length) } == sys::Status::napi_ok
        && data == at
        && length == 8
        && unsafe { sys::napi_create_typedarray(env, sys::TypedarrayType::uint32_array, 2, buffer, 0, &mut view) }
            == sys::Status::napi_ok;
    if made {
        Some(view)
    } else {
        // A refused external buffer may leave an exception pending.
        super::env::clear_pending(env);
        None
    }
}

/// The next id of the process-wide default generator, as a `bigint`.
///
/// The default generator is configured from the environment (`SNOWID_*`) on its first use, or by `configure()`
/// before it. Its state is shared by every `worker_thread` and every `Snowflake` with the same identity.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when the environment holds a bad value.
/// @throws {Error} `ERR_SNOWID_IDENTITY_REQUIRED` where replicas are the norm (Kubernetes, ECS, Cloud Run, ...) and
/// neither a worker id nor a datacenter id was chosen (nor `SNOWID_SINGLE_INSTANCE=true`).
/// @throws {Error} `ERR_SNOWID_CLOCK_BACKWARDS` when the clock moved back and the `onClockBack` policy gives up.
/// @throws {Error} `ERR_SNOWID_TIME_EXHAUSTED` past the layout's `expiresAt`.
#[napi(ts_return_type = "bigint")]
pub fn next_id(env: Env) -> IdBigInt {
    IdBigInt(default_generator(env.raw()).and_then(|g| g.next_id()))
}

/// The next id of the process-wide default generator, as a decimal string. Throws as `nextId()` does.
#[napi(ts_return_type = "string")]
pub fn next_id_string(env: Env) -> IdString {
    IdString(default_generator(env.raw()).and_then(|g| g.next_id()))
}

/// The next `count` ids of the default generator in a new `BigInt64Array`, or, given a `BigInt64Array`, that array
/// filled with the next ids and returned. Ids come out in order, as `count` calls of `nextId()` would make them.
/// @param count - an integer from 1 to 1048576, or a `BigInt64Array` of that length.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for any other `count`.
/// @throws {Error} as `nextId()` does.
#[napi(ts_return_type = "BigInt64Array")]
pub fn next_ids(env: Env, #[napi(ts_arg_type = "number | BigInt64Array")] count: Unknown) -> Result<Raw> {
    next_ids_impl(env.raw(), || default_generator(env.raw()), count.raw()).map(Raw)
}

/// The next `count` ids of the default generator as decimal strings, in order.
/// @param count - an integer from 1 to 1048576.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for any other `count`.
/// @throws {Error} as `nextId()` does.
#[napi(ts_return_type = "string[]")]
pub fn next_id_strings(env: Env, #[napi(ts_arg_type = "number")] count: Unknown) -> Result<Raw> {
    next_id_strings_impl(env.raw(), || default_generator(env.raw()), count.raw()).map(Raw)
}

/// The fields of an id, read with the default generator's layout and epoch. It does not start the generator.
///
/// @param id - a `bigint`, a decimal string, or a safe integer `number` (ids above 2^53 have already lost digits
/// as numbers).
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for negative, too large, non-integer, empty or
/// non-decimal input.
#[napi]
pub fn decode(env: Env, #[napi(ts_arg_type = "bigint | string | number")] id: Unknown) -> Result<DecodedId> {
    let raw = env.raw();
    let id = read_id(raw, id.raw(), "id")?;
    let layout = default_layout(raw).map_err(|e| raise(raw, &e))?;
    Ok(decode_with(&layout, id))
}

/// The Unix ms of an id's timestamp, read with the default generator's layout and epoch: `decode(id).timestamp`
/// without the other fields. It does not start the generator.
/// @param id - a `bigint`, a decimal string, or a safe integer `number`.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for input that is not a valid id.
#[napi]
pub fn timestamp_of(env: Env, #[napi(ts_arg_type = "bigint | string | number")] id: Unknown) -> Result<f64> {
    let raw = env.raw();
    let id = read_id(raw, id.raw(), "id")?;
    let layout = default_layout(raw).map_err(|e| raise(raw, &e))?;
    Ok(layout.unix_ms_of(id) as f64)
}

/// The smallest id any generator with the default layout and epoch can make in the ms `time`, whatever its
/// datacenterId, workerId, clockBack and sequence: the lower bound of `WHERE id BETWEEN minIdAt(a) AND maxIdAt(b)`.
/// It does not start the generator.
/// @param time - a `Date`, Unix ms, or an ISO-8601 date (`YYYY-MM-DD`, or a date-time with `Z` or an offset).
/// @throws {TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for a value of another kind.
/// @throws {RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for a time before the epoch or past `expiresAt`, or not a
/// whole ms.
#[napi(ts_return_type = "bigint")]
pub fn min_id_at(env: Env, #[napi(ts_arg_type = "Date | number | string")] time: Unknown) -> Result<IdBigInt> {
    let raw = env.raw();
    let at = read_time(raw, time.raw(), "time")?;
    Ok(IdBigInt(default_layout(raw).and_then(|l| l.min_id_at(at, "time"))))
}

/// The largest id any generator with the default layout and epoch can make in the ms `time`: the upper bound of
/// `WHERE id BETWEEN minIdAt(a) AND maxIdAt(b)`. It does not start the generator.
/// @param time - a `Date`, Unix ms, or an ISO-8601 date (`YYYY-MM-DD`, or a date-time with `Z` or an offset).
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as `minIdAt()` does.
#[napi(ts_return_type = "bigint")]
pub fn max_id_at(env: Env, #[napi(ts_arg_type = "Date | number | string")] time: Unknown) -> Result<IdBigInt> {
    let raw = env.raw();
    let at = read_time(raw, time.raw(), "time")?;
    Ok(IdBigInt(default_layout(raw).and_then(|l| l.max_id_at(at, "time"))))
}

/// The effective configuration of the default generator and where each value came from. It does not start the
/// generator; when the worker id comes from the lease, it takes this process's automatic slot to report it.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when the environment holds a bad value.
/// @throws {Error} `ERR_SNOWID_IDENTITY_REQUIRED` as the first `nextId()` does.
/// @throws {Error} `ERR_SNOWID_LEASE_DIR`, `ERR_SNOWID_LEASE_CORRUPT` or `ERR_SNOWID_NO_FREE_WORKER_ID` when the
/// automatic lease cannot be taken.
#[napi]
pub fn config(env: Env) -> Result<SnowidConfig> {
    let raw = env.raw();
    let c = default_config(raw, true).map_err(|e| raise(raw, &e))?;
    Ok(report(&c, identity::environment(&c, &JsEnv::new(raw))))
}

/// The default generator's current lead and counters (all 0 before its first id).
#[napi]
pub fn stats() -> SnowidStats {
    match DEFAULT.get() {
        Some((g, _)) => stats_of(g.snapshot()),
        None => stats_of(Snapshot { lead_ms: 0, clock_back: 0, stats: Default::default() }),
    }
}

/// Sets the options of the default generator before its first id. Options win over environment variables.
/// A later call before the first id replaces the earlier options. The options are validated at once.
/// @throws {Error} `ERR_SNOWID_ALREADY_CONFIGURED` once the default generator has issued an id.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` for a bad option, or a bad environment value.
#[napi]
pub fn configure(env: Env, #[napi(ts_arg_type = "SnowflakeOptions")] options: Option<Unknown>) -> Result<()> {
    let raw = env.raw();
    let opts = read_options(raw, options)?;
    let mut pending = PENDING.lock();
    if DEFAULT.get().is_some() {
        let e = CoreError::new(
            Code::AlreadyConfigured,
            Class::Error,
            "configure: expected a call before the default generator's first id, found it already started; \
             use new Snowflake(options) for a generator of your own",
        );
        return Err(raise(raw, &e));
    }
    // A new Pending: options from before are replaced, and the environment is read again for them.
    let mut next = Pending { options: Some(opts), seen: BTreeMap::new(), layout: None, config: None };
    next.config(raw).map_err(|e| raise(raw, &e))?;
    *pending = next;
    CONFIGURED.fetch_add(1, Ordering::Release);
    Ok(())
}
