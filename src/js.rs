//! The napi binding: converts JS values to and from the core's, and maps core errors to coded JS errors.
#![cfg_attr(test, allow(dead_code))]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::ptr;
use std::sync::{Arc, OnceLock};

use napi::bindgen_prelude::{FromNapiValue, Object, This, ToNapiValue};
use napi::{sys, Env, JsValue, Result, Status, Unknown};
use napi_derive::napi;
use parking_lot::Mutex;

use crate::core::config::{time_arg, Config, EnvSource, OptionValue, Options, ProcessEnv, Source, OPTION_NAMES};
use crate::core::encoding::{self, Encoding, Text, EXPECTED_ENCODING};
use crate::core::error::{Class, Code, Error as CoreError, Result as CoreResult};
use crate::core::generator::{Clock, ClockBackPolicy, Generator, Snapshot, SystemClock};
use crate::core::id::{self, Decimal, EXPECTED_ID};
use crate::core::layout::Layout;
use crate::core::lease::LeaseDir;
use crate::core::start::{bind_worker, open};

/// Throws `e` as a JS error of its class with its `code`.
fn throw(env: sys::napi_env, e: &CoreError) {
    let code = CString::new(e.code().as_str()).unwrap_or_default();
    let msg = CString::new(e.message().replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: `env` is the live env of the current call; both strings are NUL-terminated and outlive the calls.
    unsafe {
        match e.class() {
            Class::Error => sys::napi_throw_error(env, code.as_ptr(), msg.as_ptr()),
            Class::TypeError => sys::napi_throw_type_error(env, code.as_ptr(), msg.as_ptr()),
            Class::RangeError => sys::napi_throw_range_error(env, code.as_ptr(), msg.as_ptr()),
        };
    }
}

/// Throws `e` and returns the napi error that tells napi-rs an exception is already pending.
fn raise(env: sys::napi_env, e: &CoreError) -> napi::Error {
    throw(env, e);
    napi::Error::from_status(Status::PendingException)
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_status(Status::from(status)))
    }
}

/// An id, or the error that replaces it, converted to a JS `bigint` (or thrown) without taking `Env` as a
/// parameter: napi-rs hands the env to `to_napi_value`.
pub struct IdBigInt(CoreResult<u64>);

impl ToNapiValue for IdBigInt {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        match val.0 {
            Ok(id) => unsafe { bigint(env, id) },
            Err(e) => Err(raise(env, &e)),
        }
    }
}

/// An id, or the error that replaces it, converted to a decimal JS string written from a stack buffer.
pub struct IdString(CoreResult<u64>);

impl ToNapiValue for IdString {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        match val.0 {
            Ok(id) => unsafe { decimal(env, id) },
            Err(e) => Err(raise(env, &e)),
        }
    }
}

fn type_of(env: sys::napi_env, value: sys::napi_value) -> Result<sys::napi_valuetype> {
    let mut t = 0;
    // SAFETY: `env` and `value` come from the current call.
    check(unsafe { sys::napi_typeof(env, value, &mut t) })?;
    Ok(t)
}

fn is_date(env: sys::napi_env, value: sys::napi_value) -> Result<bool> {
    let mut yes = false;
    // SAFETY: as above.
    check(unsafe { sys::napi_is_date(env, value, &mut yes) })?;
    Ok(yes)
}

/// A JS value described for an error message, for the kinds a caller should not have passed.
fn describe(env: sys::napi_env, value: sys::napi_value) -> Result<String> {
    use sys::ValueType as T;
    Ok(match type_of(env, value)? {
        T::napi_undefined => "undefined".into(),
        T::napi_null => "null".into(),
        T::napi_boolean => {
            // SAFETY: `value` is a boolean.
            let b = unsafe { bool::from_napi_value(env, value) }?;
            format!("the boolean {b}")
        }
        T::napi_number => {
            // SAFETY: `value` is a number.
            let n = unsafe { f64::from_napi_value(env, value) }?;
            format!("the number {}", crate::core::config::js_number(n))
        }
        T::napi_string => "a string".into(),
        T::napi_symbol => "a symbol".into(),
        T::napi_function => "a function".into(),
        T::napi_bigint => "a bigint".into(),
        _ => "an object".into(),
    })
}

/// Reads a JS value given for an option, sorted by JS type for the core to check.
fn option_value(env: sys::napi_env, value: sys::napi_value) -> Result<Option<OptionValue>> {
    use sys::ValueType as T;
    Ok(Some(match type_of(env, value)? {
        T::napi_undefined => return Ok(None),
        // SAFETY: each cast below matches the type just checked.
        T::napi_number => OptionValue::Number(unsafe { f64::from_napi_value(env, value) }?),
        T::napi_string => OptionValue::Text(unsafe { String::from_napi_value(env, value) }?),
        T::napi_boolean => OptionValue::Bool(unsafe { bool::from_napi_value(env, value) }?),
        T::napi_object if is_date(env, value)? => {
            let mut t = 0.0;
            check(unsafe { sys::napi_get_date_value(env, value, &mut t) })?;
            OptionValue::Date(t)
        }
        _ => OptionValue::Other(describe(env, value)?),
    }))
}

/// The own enumerable string-keyed properties of an object argument named `what`, as (key, value) pairs.
/// `undefined` and `null` have none; any other non-object is a coded `TypeError`.
fn own_entries(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<Vec<(String, sys::napi_value)>> {
    use sys::ValueType as T;
    match type_of(env, value)? {
        T::napi_undefined | T::napi_null => return Ok(Vec::new()),
        T::napi_object => {}
        _ => {
            let e = CoreError::type_error(Code::InvalidConfig, what, "an object", &describe(env, value)?);
            return Err(raise(env, &e));
        }
    }
    let mut keys = ptr::null_mut();
    // SAFETY: `value` is an object of the current call; `keys` is a valid out-pointer.
    check(unsafe {
        sys::napi_get_all_property_names(
            env,
            value,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut keys,
        )
    })?;
    let mut len = 0u32;
    // SAFETY: `keys` is the array just created.
    check(unsafe { sys::napi_get_array_length(env, keys, &mut len) })?;
    let mut entries = Vec::with_capacity(len as usize);
    for i in 0..len {
        let (mut key, mut v) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: `i` is below the array's length; its elements are strings (numbers were converted), each an own
        // key of `value`.
        check(unsafe { sys::napi_get_element(env, keys, i, &mut key) })?;
        let name = unsafe { String::from_napi_value(env, key) }?;
        check(unsafe { sys::napi_get_property(env, value, key, &mut v) })?;
        entries.push((name, v));
    }
    Ok(entries)
}

/// Reads an options argument: each own key a known option. A missing argument, `undefined` and `null` are no
/// options.
fn read_options(env: sys::napi_env, value: Option<Unknown>) -> Result<Options> {
    let mut opts = Options::default();
    let Some(value) = value else {
        return Ok(opts);
    };
    for (name, v) in own_entries(env, value.raw(), "options")? {
        let Some(slot) = opts.slot(&name) else {
            let e = CoreError::type_error(
                Code::InvalidConfig,
                "options",
                &format!("only the options {}", OPTION_NAMES.join(", ")),
                &format!("an unknown option {}", crate::core::error::quote(&name)),
            );
            return Err(raise(env, &e));
        };
        *slot = option_value(env, v)?;
    }
    Ok(opts)
}

/// Reads an id argument: a bigint, a decimal string, or a safe integer.
fn read_id(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<u64> {
    use sys::ValueType as T;
    let parsed = match type_of(env, value)? {
        T::napi_bigint => {
            let (mut sign, mut count) = (0, 0usize);
            // SAFETY: a first call with null sign and words asks for the word count only.
            check(unsafe {
                sys::napi_get_value_bigint_words(env, value, ptr::null_mut(), &mut count, ptr::null_mut())
            })?;
            let mut words = vec![0u64; count];
            check(unsafe {
                sys::napi_get_value_bigint_words(env, value, &mut sign, &mut count, words.as_mut_ptr())
            })?;
            words.truncate(count);
            id::from_bigint(sign != 0, &words, what)
        }
        // SAFETY: the casts match the types just checked.
        T::napi_string => id::parse_decimal(&unsafe { String::from_napi_value(env, value) }?, what),
        T::napi_number => id::from_f64(unsafe { f64::from_napi_value(env, value) }?, what),
        _ => Err(CoreError::type_error(Code::InvalidId, what, EXPECTED_ID, &describe(env, value)?)),
    };
    parsed.map_err(|e| raise(env, &e))
}

/// Reads a time argument: a `Date`, Unix ms, or ISO-8601 text.
fn read_time(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<u64> {
    let v = match option_value(env, value)? {
        Some(v) => v,
        None => OptionValue::Other("undefined".into()),
    };
    time_arg(&v, what).map_err(|e| raise(env, &e))
}

/// Reads an encoding name.
fn read_encoding(env: sys::napi_env, value: sys::napi_value) -> Result<Encoding> {
    let e = match type_of(env, value)? {
        sys::ValueType::napi_string => {
            // SAFETY: `value` is a string.
            let name = unsafe { String::from_napi_value(env, value) }?;
            match Encoding::parse(&name) {
                Some(e) => return Ok(e),
                None => CoreError::range_error(Code::InvalidArgument, "encoding", EXPECTED_ENCODING, &crate::core::error::quote(&name)),
            }
        }
        _ => CoreError::type_error(Code::InvalidArgument, "encoding", EXPECTED_ENCODING, &describe(env, value)?),
    };
    Err(raise(env, &e))
}

/// The fields of an id. Every value is a plain number or string, so the object is safe for `JSON.stringify`.
#[napi(object)]
pub struct DecodedId {
    /// The id in decimal.
    pub id: String,
    /// When the id was made, in Unix ms (the layout's epoch plus the timestamp field).
    pub timestamp: f64,
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The clock-back counter: bumped each time the generator's clock moved backwards.
    pub clock_back: u32,
    /// The counter within the ms.
    pub sequence: u32,
}

fn decode_with(layout: &Layout, id: u64) -> DecodedId {
    let f = layout.unpack(id);
    DecodedId {
        id: Decimal::new(id).as_str().to_string(),
        timestamp: (layout.epoch() + f.timestamp) as f64,
        datacenter_id: f.datacenter_id,
        worker_id: f.worker_id,
        clock_back: f.clock_back,
        sequence: f.sequence,
    }
}

/// Where a configured value came from: an option, an environment variable, PM2's `NODE_APP_INSTANCE`, a StatefulSet
/// pod's host name (`SNOWID_WORKER_ID_FROM=statefulset`) or an automatic lease on this host (worker id only), or the
/// default.
#[napi(string_enum = "lowercase")]
pub enum ConfigSource {
    Option,
    Env,
    Pm2,
    Lease,
    Statefulset,
    Default,
}

impl From<Source> for ConfigSource {
    fn from(s: Source) -> Self {
        match s {
            Source::Option => ConfigSource::Option,
            Source::Env => ConfigSource::Env,
            Source::Pm2 => ConfigSource::Pm2,
            Source::Lease => ConfigSource::Lease,
            Source::StatefulSet => ConfigSource::Statefulset,
            Source::Default => ConfigSource::Default,
        }
    }
}

/// What the generator does when the clock reads earlier than the last id's timestamp.
/// `'bits'` adds 1 to clockBack and carries on, and throws once clockBack would come back round to its starting
/// value; `'wait'` blocks until the clock catches up, for at most `maxWaitMs`; `'throw'` throws at once.
#[napi(string_enum = "lowercase")]
pub enum OnClockBack {
    Bits,
    Wait,
    Throw,
}

impl From<ClockBackPolicy> for OnClockBack {
    fn from(p: ClockBackPolicy) -> Self {
        match p {
            ClockBackPolicy::Bits => OnClockBack::Bits,
            ClockBackPolicy::Wait => OnClockBack::Wait,
            ClockBackPolicy::Throw => OnClockBack::Throw,
        }
    }
}

/// Options of a generator. Each one left out is read from its environment variable, else takes its default.
/// Numbers must be integers in range: nothing is masked, clamped or truncated.
#[napi(object, object_from_js = false)]
#[allow(dead_code)] // Declares the typings only: `read_options` reads the object itself, to check every value.
pub struct SnowflakeOptions {
    /// Datacenter (or machine) number, 0 to 2^datacenterBits - 1. Env `SNOWID_DATACENTER_ID`, else `datacenterId`.
    /// @default 0
    pub datacenter_id: Option<u32>,
    /// Worker (process) number, 0 to 2^workerBits - 1. Env `SNOWID_WORKER_ID`, else `workerId`, else the ordinal of
    /// a StatefulSet pod's host name with `SNOWID_WORKER_ID_FROM=statefulset`, else PM2's `NODE_APP_INSTANCE`;
    /// else the lowest slot no other process on this host holds (the lease); else 0 when leases are off.
    /// @default the lease's slot
    pub worker_id: Option<u32>,
    /// Starting clock-back value, 0 to 2^clockBackBits - 1. Env `SNOWID_CLOCK_BACK`.
    /// @default 0
    pub clock_back: Option<u32>,
    /// Epoch: Unix ms, a decimal string of Unix ms, an ISO-8601 date (`YYYY-MM-DD`, or a date-time with `Z` or an
    /// offset), or a `Date`. Not in the future. Env `SNOWID_EPOCH`.
    /// @default 1580486400000 (2020-02-01T00:00:00+08:00)
    #[napi(ts_type = "number | string | Date")]
    pub epoch: Option<f64>,
    /// Width of the datacenterId field in bits. Env `SNOWID_DATACENTER_BITS`.
    /// @default 3
    pub datacenter_bits: Option<u32>,
    /// Width of the workerId field in bits. Env `SNOWID_WORKER_BITS`.
    /// @default 5
    pub worker_bits: Option<u32>,
    /// Width of the clockBack field in bits. Env `SNOWID_CLOCK_BACK_BITS`.
    /// @default 2
    pub clock_back_bits: Option<u32>,
    /// Width of the sequence field in bits. Env `SNOWID_SEQUENCE_BITS`.
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
    /// @default a `snowid` folder in the OS temp dir
    pub lease_dir: Option<String>,
}

/// Where each configured value came from.
#[napi(object)]
pub struct ConfigSources {
    pub datacenter_id: ConfigSource,
    pub worker_id: ConfigSource,
    pub clock_back: ConfigSource,
    pub epoch: ConfigSource,
    pub datacenter_bits: ConfigSource,
    pub worker_bits: ConfigSource,
    pub clock_back_bits: ConfigSource,
    pub sequence_bits: ConfigSource,
    pub on_clock_back: ConfigSource,
    pub max_wait_ms: ConfigSource,
    pub max_lead_ms: ConfigSource,
    pub lease: ConfigSource,
    pub lease_dir: ConfigSource,
}

/// The effective configuration of a generator.
#[napi(object)]
pub struct SnowidConfig {
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The starting clock-back value.
    pub clock_back: u32,
    /// The epoch in Unix ms.
    pub epoch: f64,
    pub datacenter_bits: u32,
    pub worker_bits: u32,
    pub clock_back_bits: u32,
    pub sequence_bits: u32,
    /// What is left of 63 bits for the timestamp.
    pub timestamp_bits: u32,
    pub on_clock_back: OnClockBack,
    pub max_wait_ms: u32,
    pub max_lead_ms: u32,
    /// Whether the (datacenterId, workerId) slot is leased on this host.
    pub lease: bool,
    pub lease_dir: String,
    /// The most ids one generator issues in one ms: 2^sequenceBits.
    pub max_ids_per_ms: u32,
    /// The last Unix ms the layout can encode. Generation throws `ERR_SNOWID_TIME_EXHAUSTED` after it.
    pub expires_at: f64,
    /// Where each value came from.
    pub sources: ConfigSources,
}

fn report(c: &Config) -> SnowidConfig {
    SnowidConfig {
        datacenter_id: c.datacenter_id.value,
        worker_id: c.worker_id.value,
        clock_back: c.clock_back.value,
        epoch: c.epoch.value as f64,
        datacenter_bits: c.datacenter_bits.value,
        worker_bits: c.worker_bits.value,
        clock_back_bits: c.clock_back_bits.value,
        sequence_bits: c.sequence_bits.value,
        timestamp_bits: c.layout.timestamp_bits(),
        on_clock_back: c.on_clock_back.value.into(),
        max_wait_ms: c.max_wait_ms.value as u32,
        max_lead_ms: c.max_lead_ms.value as u32,
        lease: c.lease.value,
        lease_dir: c.lease_dir.value.to_string_lossy().into_owned(),
        max_ids_per_ms: c.max_ids_per_ms() as u32,
        expires_at: c.layout.expires_at() as f64,
        sources: ConfigSources {
            datacenter_id: c.datacenter_id.source.into(),
            worker_id: c.worker_id.source.into(),
            clock_back: c.clock_back.source.into(),
            epoch: c.epoch.source.into(),
            datacenter_bits: c.datacenter_bits.source.into(),
            worker_bits: c.worker_bits.source.into(),
            clock_back_bits: c.clock_back_bits.source.into(),
            sequence_bits: c.sequence_bits.source.into(),
            on_clock_back: c.on_clock_back.source.into(),
            max_wait_ms: c.max_wait_ms.source.into(),
            max_lead_ms: c.max_lead_ms.source.into(),
            lease: c.lease.source.into(),
            lease_dir: c.lease_dir.source.into(),
        },
    }
}

fn resolve(opts: &Options) -> CoreResult<Config> {
    Config::resolve(opts, &ProcessEnv, SystemClock.now_ms())
}

/// Takes the lease `config` calls for (filling in an automatic worker id) and makes its generator.
fn build(config: &mut Config) -> CoreResult<Generator<SystemClock>> {
    let lease = bind_worker(config)?;
    let state = open(config, lease, &SystemClock)?;
    Generator::new(config.settings(), state, SystemClock)
}

/// Counters and the current lead of a generator's state.
#[napi(object)]
pub struct SnowidStats {
    /// How far the last id's timestamp is ahead of the clock, in ms (borrowed time; 0 when none).
    pub lead_ms: f64,
    /// The clockBack value in use now.
    pub clock_back: u32,
    /// Steps back of the clock that moved clockBack to a new value.
    pub clock_back_events: f64,
    /// Calls that had to wait: for the next ms, for the clock to catch up, or for an earlier holder's mark.
    pub waits: f64,
    /// High-water marks written to the lease file.
    pub mark_writes: f64,
}

fn stats_of(s: Snapshot) -> SnowidStats {
    SnowidStats {
        lead_ms: s.lead_ms as f64,
        clock_back: s.clock_back,
        clock_back_events: s.stats.clock_back_events as f64,
        waits: s.stats.waits as f64,
        mark_writes: s.stats.mark_writes as f64,
    }
}

/// The process-wide default generator, once it has issued its first id.
static DEFAULT: OnceLock<(Generator<SystemClock>, Config)> = OnceLock::new();
/// The default generator's configuration before it starts.
static PENDING: Mutex<Pending> = Mutex::new(Pending { options: None, config: None });

/// What `configure()` gave, and the configuration resolved from it and the environment on first need. Every call
/// before the first id (`decode`, `config`, `minIdAt`, ...) and the generator itself then use that one resolution.
struct Pending {
    options: Option<Options>,
    config: Option<Config>,
}

impl Pending {
    fn config(&mut self) -> CoreResult<&Config> {
        let config = match self.config.take() {
            Some(c) => c,
            None => resolve(&self.options.clone().unwrap_or_default())?,
        };
        Ok(self.config.insert(config))
    }
}

#[inline]
fn default_generator() -> CoreResult<&'static Generator<SystemClock>> {
    match DEFAULT.get() {
        Some((g, _)) => Ok(g),
        None => start_default(),
    }
}

#[cold]
fn start_default() -> CoreResult<&'static Generator<SystemClock>> {
    let mut pending = PENDING.lock();
    if let Some((g, _)) = DEFAULT.get() {
        return Ok(g);
    }
    let mut config = pending.config()?.clone();
    let generator = build(&mut config)?;
    Ok(&DEFAULT.get_or_init(|| (generator, config)).0)
}

/// The default generator's configuration, without starting it. With `bind`, an automatic worker id is leased so
/// that it can be reported (the process keeps that slot, and the generator will use it).
fn default_config(bind: bool) -> CoreResult<Config> {
    let mut pending = PENDING.lock();
    if let Some((_, c)) = DEFAULT.get() {
        return Ok(c.clone());
    }
    let mut config = pending.config()?.clone();
    if bind && config.worker_id.source == Source::Lease {
        bind_worker(&mut config)?;
    }
    Ok(config)
}

/// The default generator's layout, without starting it.
#[inline]
fn default_layout() -> CoreResult<Layout> {
    match DEFAULT.get() {
        Some((g, _)) => Ok(*g.layout()),
        None => PENDING.lock().config().map(|c| c.layout),
    }
}

/// The next id of the process-wide default generator, as a `bigint`.
///
/// The default generator is configured from the environment (`SNOWID_*`) on its first use, or by `configure()`
/// before it. Its state is shared by every `worker_thread` and every `Snowflake` with the same identity.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when the environment holds a bad value.
/// @throws {Error} `ERR_SNOWID_CLOCK_BACKWARDS` when the clock moved back and the `onClockBack` policy gives up.
/// @throws {Error} `ERR_SNOWID_TIME_EXHAUSTED` past the layout's `expiresAt`.
#[napi(ts_return_type = "bigint")]
pub fn next_id() -> IdBigInt {
    IdBigInt(default_generator().and_then(|g| g.next_id()))
}

/// The next id of the process-wide default generator, as a decimal string. Throws as `nextId()` does.
#[napi(ts_return_type = "string")]
pub fn next_id_string() -> IdString {
    IdString(default_generator().and_then(|g| g.next_id()))
}

/// The next `count` ids of the default generator in a new `BigInt64Array`, or, given a `BigInt64Array`, that array
/// filled with the next ids and returned. Ids come out in order, as `count` calls of `nextId()` would make them.
/// @param count - an integer from 1 to 1048576, or a `BigInt64Array` of that length.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for any other `count`.
/// @throws {Error} as `nextId()` does.
#[napi(ts_return_type = "BigInt64Array")]
pub fn next_ids(env: Env, #[napi(ts_arg_type = "number | BigInt64Array")] count: Unknown) -> Result<Raw> {
    next_ids_impl(env.raw(), default_generator(), count.raw()).map(Raw)
}

/// The next `count` ids of the default generator as decimal strings, in order.
/// @param count - an integer from 1 to 1048576.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for any other `count`.
/// @throws {Error} as `nextId()` does.
#[napi(ts_return_type = "string[]")]
pub fn next_id_strings(env: Env, #[napi(ts_arg_type = "number")] count: Unknown) -> Result<Raw> {
    next_id_strings_impl(env.raw(), default_generator(), count.raw()).map(Raw)
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
    let layout = default_layout().map_err(|e| raise(raw, &e))?;
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
    let layout = default_layout().map_err(|e| raise(raw, &e))?;
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
    Ok(IdBigInt(default_layout().and_then(|l| l.min_id_at(at, "time"))))
}

/// The largest id any generator with the default layout and epoch can make in the ms `time`: the upper bound of
/// `WHERE id BETWEEN minIdAt(a) AND maxIdAt(b)`. It does not start the generator.
/// @param time - a `Date`, Unix ms, or an ISO-8601 date (`YYYY-MM-DD`, or a date-time with `Z` or an offset).
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as `minIdAt()` does.
#[napi(ts_return_type = "bigint")]
pub fn max_id_at(env: Env, #[napi(ts_arg_type = "Date | number | string")] time: Unknown) -> Result<IdBigInt> {
    let raw = env.raw();
    let at = read_time(raw, time.raw(), "time")?;
    Ok(IdBigInt(default_layout().and_then(|l| l.max_id_at(at, "time"))))
}

/// An id as fixed-width text: `'base62'` (11 characters of `0-9A-Za-z`), `'base36'` (13 of `0-9a-z`) or `'hex'`
/// (16 of `0-9a-f`). Shorter values are padded with `0`, so texts in one encoding compare (byte by byte, as JS `<`
/// does) in the same order as their ids.
/// @param id - a `bigint`, a decimal string, or a safe integer `number`.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for input that is not a valid id.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for an unknown encoding.
#[napi]
pub fn encode(
    env: Env,
    #[napi(ts_arg_type = "bigint | string | number")] id: Unknown,
    #[napi(ts_arg_type = "'base62' | 'base36' | 'hex'")] encoding: Unknown,
) -> Result<String> {
    let raw = env.raw();
    let id = read_id(raw, id.raw(), "id")?;
    let encoding = read_encoding(raw, encoding.raw())?;
    Ok(Text::new(id, encoding).as_str().to_string())
}

/// Reads text made by `encode()` back into the id, as a `bigint`. The text must have exactly the encoding's width
/// (11, 13 or 16 characters): shorter or longer text is refused, never padded or cut. `'hex'` and `'base36'` also
/// take capital letters.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for text of another length, a character outside the
/// alphabet, or a value above 2^63 - 1.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for an unknown encoding.
#[napi(ts_return_type = "bigint")]
pub fn parse(
    env: Env,
    #[napi(ts_arg_type = "string")] text: Unknown,
    #[napi(ts_arg_type = "'base62' | 'base36' | 'hex'")] encoding: Unknown,
) -> Result<IdBigInt> {
    let raw = env.raw();
    let encoding = read_encoding(raw, encoding.raw())?;
    let text = match type_of(raw, text.raw())? {
        // SAFETY: `text` is a string.
        sys::ValueType::napi_string => unsafe { String::from_napi_value(raw, text.raw()) }?,
        _ => {
            let expected = format!("a string of {} {} characters", encoding.width(), encoding.name());
            let e = CoreError::type_error(Code::InvalidId, "text", &expected, &describe(raw, text.raw())?);
            return Err(raise(raw, &e));
        }
    };
    Ok(IdBigInt(encoding::parse(&text, encoding, "text")))
}

/// The effective configuration of the default generator and where each value came from. It does not start the
/// generator; when the worker id comes from the lease, it takes this process's automatic slot to report it.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` when the environment holds a bad value.
/// @throws {Error} `ERR_SNOWID_LEASE_DIR`, `ERR_SNOWID_LEASE_CORRUPT` or `ERR_SNOWID_NO_FREE_WORKER_ID` when the
/// automatic lease cannot be taken.
#[napi]
pub fn config(env: Env) -> Result<SnowidConfig> {
    default_config(true).map(|c| report(&c)).map_err(|e| raise(env.raw(), &e))
}

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
struct Overlay {
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
fn read_env_object(env: sys::napi_env, value: sys::napi_value) -> Result<HashMap<String, String>> {
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
    let config = resolve(&opts).map_err(|e| raise(raw, &e))?;
    *pending = Pending { options: Some(opts), config: Some(config) };
    Ok(())
}

/// A generator with its own options. Generators with the same identity (layout, epoch, datacenterId, workerId)
/// in one process share one state, so making one per request can never duplicate ids.
#[napi]
pub struct Snowflake {
    generator: Arc<Generator<SystemClock>>,
    config: Config,
}

#[napi]
impl Snowflake {
    /// Options left out are read from the environment, else take their defaults, as for the default generator.
    /// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` for a bad option or environment value.
    #[napi(constructor)]
    pub fn new(env: Env, this: This, #[napi(ts_arg_type = "SnowflakeOptions")] options: Option<Unknown>) -> Result<Self> {
        let raw = env.raw();
        let opts = read_options(raw, options)?;
        let mut config = resolve(&opts).map_err(|e| raise(raw, &e))?;
        let generator = Arc::new(build(&mut config).map_err(|e| raise(raw, &e))?);
        install_instance(raw, this.raw(), &generator)?;
        Ok(Snowflake { generator, config })
    }

    /// The next id, as a `bigint`. Throws as the module's `nextId()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn next_id(&self) -> IdBigInt {
        IdBigInt(self.generator.next_id())
    }

    /// The next id, as a decimal string. Throws as the module's `nextId()` does.
    #[napi(ts_return_type = "string")]
    pub fn next_id_string(&self) -> IdString {
        IdString(self.generator.next_id())
    }

    /// The next `count` ids in a new `BigInt64Array`, or, given a `BigInt64Array`, that array filled and returned.
    /// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for a `count` that is not an integer from 1 to
    /// 1048576 or such an array.
    #[napi(ts_return_type = "BigInt64Array")]
    pub fn next_ids(&self, env: Env, #[napi(ts_arg_type = "number | BigInt64Array")] count: Unknown) -> Result<Raw> {
        next_ids_impl(env.raw(), Ok(&self.generator), count.raw()).map(Raw)
    }

    /// The next `count` ids as decimal strings, in order.
    /// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_ARGUMENT` for a `count` that is not an integer from 1 to
    /// 1048576.
    #[napi(ts_return_type = "string[]")]
    pub fn next_id_strings(&self, env: Env, #[napi(ts_arg_type = "number")] count: Unknown) -> Result<Raw> {
        next_id_strings_impl(env.raw(), Ok(&self.generator), count.raw()).map(Raw)
    }

    /// The fields of an id, read with this generator's layout and epoch.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for input that is not a valid id.
    #[napi]
    pub fn decode(&self, env: Env, #[napi(ts_arg_type = "bigint | string | number")] id: Unknown) -> Result<DecodedId> {
        let id = read_id(env.raw(), id.raw(), "id")?;
        Ok(decode_with(self.generator.layout(), id))
    }

    /// The Unix ms of an id's timestamp, read with this generator's layout and epoch.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for input that is not a valid id.
    #[napi]
    pub fn timestamp_of(&self, env: Env, #[napi(ts_arg_type = "bigint | string | number")] id: Unknown) -> Result<f64> {
        let id = read_id(env.raw(), id.raw(), "id")?;
        Ok(self.generator.layout().unix_ms_of(id) as f64)
    }

    /// The smallest id any generator with this layout and epoch can make in the ms `time`.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as the module's `minIdAt()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn min_id_at(&self, env: Env, #[napi(ts_arg_type = "Date | number | string")] time: Unknown) -> Result<IdBigInt> {
        let at = read_time(env.raw(), time.raw(), "time")?;
        Ok(IdBigInt(self.generator.layout().min_id_at(at, "time")))
    }

    /// The largest id any generator with this layout and epoch can make in the ms `time`.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as the module's `minIdAt()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn max_id_at(&self, env: Env, #[napi(ts_arg_type = "Date | number | string")] time: Unknown) -> Result<IdBigInt> {
        let at = read_time(env.raw(), time.raw(), "time")?;
        Ok(IdBigInt(self.generator.layout().max_id_at(at, "time")))
    }

    /// For `snowid/redis`: sets the lease deadline (Unix ms; no id from then on, 0 stops at once) and takes in the
    /// mark an earlier holder left (Unix ms; ids at or before it are never issued). Returns the Unix ms of the last
    /// id issued. Not part of the typed API.
    #[napi(js_name = "_fence", skip_typescript)]
    pub fn fence(&self, env: Env, deadline: f64, mark: Option<f64>) -> Result<f64> {
        let ms = |n: f64, what: &str| time_arg(&OptionValue::Number(n), what).map_err(|e| raise(env.raw(), &e));
        let deadline = ms(deadline, "deadline")?;
        if let Some(mark) = mark {
            self.generator.absorb_mark(ms(mark, "mark")?);
        }
        self.generator.set_deadline(deadline);
        Ok(self.generator.last_ms() as f64)
    }

    /// This generator's effective configuration and where each value came from.
    #[napi]
    pub fn config(&self) -> SnowidConfig {
        report(&self.config)
    }

    /// The current lead and counters of this generator's state (shared with every generator of its identity).
    #[napi]
    pub fn stats(&self) -> SnowidStats {
        stats_of(self.generator.snapshot())
    }
}

// Fast paths. napi-rs's wrapper around an exported function or method costs more than the generator itself, so the
// hot calls are plain N-API callbacks: the module's read the default generator, and each `Snowflake` instance gets
// its own, whose callback data is its generator (no `this` to unwrap). The `#[napi]` items above still declare the
// typings and remain as correct, slower fallbacks.

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// The largest batch `nextIds` and `nextIdStrings` make in one call.
pub const MAX_BATCH: u64 = 1 << 20;

/// The value to return from a raw callback: `v` converted, or null with the exception pending.
unsafe fn finish<T: ToNapiValue>(env: sys::napi_env, v: Result<T>) -> sys::napi_value {
    // SAFETY: `env` is the live env of the current call.
    match v.and_then(|v| unsafe { T::to_napi_value(env, v) }) {
        Ok(out) => out,
        Err(e) => {
            unsafe { napi::JsError::from(e).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// The first argument and the callback data of a call.
unsafe fn call_info(env: sys::napi_env, info: sys::napi_callback_info) -> Result<(sys::napi_value, *mut std::ffi::c_void)> {
    let mut argc = 1usize;
    let mut argv = [ptr::null_mut(); 1];
    let mut data = ptr::null_mut();
    // SAFETY: `argv` has room for `argc` values.
    check(unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) })?;
    let [arg] = argv;
    if argc == 0 || arg.is_null() {
        let mut undefined = ptr::null_mut();
        check(unsafe { sys::napi_get_undefined(env, &mut undefined) })?;
        return Ok((undefined, data));
    }
    Ok((arg, data))
}

/// The generator behind an instance callback's data.
///
/// # Safety
/// `data` is the pointer `install_instance` gave the function, which its finalizer frees only once the function
/// is unreachable, so it is alive while the function runs.
unsafe fn instance_generator<'a>(data: *mut std::ffi::c_void) -> &'a Generator<SystemClock> {
    unsafe { &*(data as *const Generator<SystemClock>) }
}

/// What a batch call was asked for: a count, or a caller's `BigInt64Array` to fill.
enum Batch {
    Count(usize),
    Fill { array: sys::napi_value, data: *mut u64, len: usize },
}

fn read_batch(env: sys::napi_env, value: sys::napi_value, allow_array: bool) -> Result<Batch> {
    use sys::ValueType as T;
    let expected = format!("an integer from 1 to {MAX_BATCH}{}", if allow_array { " or a BigInt64Array" } else { "" });
    let bad_range = |found: String| raise(env, &CoreError::range_error(Code::InvalidArgument, "count", &expected, &found));
    match type_of(env, value)? {
        T::napi_number => {
            // SAFETY: `value` is a number.
            let n = unsafe { f64::from_napi_value(env, value) }?;
            if n.is_finite() && n.fract() == 0.0 && n >= 1.0 && n <= MAX_BATCH as f64 {
                Ok(Batch::Count(n as usize))
            } else {
                Err(bad_range(crate::core::config::js_number(n)))
            }
        }
        T::napi_object if allow_array => {
            let mut is_typed = false;
            check(unsafe { sys::napi_is_typedarray(env, value, &mut is_typed) })?;
            let (mut kind, mut len, mut data, mut buffer, mut offset) = (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
            if is_typed {
                // SAFETY: `value` is a typed array; every out-pointer is valid.
                check(unsafe {
                    sys::napi_get_typedarray_info(env, value, &mut kind, &mut len, &mut data, &mut buffer, &mut offset)
                })?;
            }
            if !is_typed || kind != sys::TypedarrayType::bigint64_array {
                let e = CoreError::type_error(Code::InvalidArgument, "count", &expected, "an object that is not a BigInt64Array");
                return Err(raise(env, &e));
            }
            if len == 0 || len as u64 > MAX_BATCH {
                return Err(bad_range(format!("a BigInt64Array of length {len}")));
            }
            Ok(Batch::Fill { array: value, data: data.cast(), len })
        }
        _ => {
            let e = CoreError::type_error(Code::InvalidArgument, "count", &expected, &describe(env, value)?);
            Err(raise(env, &e))
        }
    }
}

/// `nextIds(count | array)`: a new `BigInt64Array` of `count` ids, or the caller's array filled.
fn next_ids_impl(env: sys::napi_env, generator: CoreResult<&Generator<SystemClock>>, arg: sys::napi_value) -> Result<sys::napi_value> {
    let batch = read_batch(env, arg, true)?;
    let generator = generator.map_err(|e| raise(env, &e))?;
    let (array, data, len) = match batch {
        Batch::Fill { array, data, len } => (array, data, len),
        Batch::Count(len) => {
            let (mut data, mut buffer, mut array) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
            // SAFETY: the buffer is created with room for `len` 8-byte ids and is 8-byte aligned.
            check(unsafe { sys::napi_create_arraybuffer(env, len * 8, &mut data, &mut buffer) })?;
            check(unsafe {
                sys::napi_create_typedarray(env, sys::TypedarrayType::bigint64_array, len, buffer, 0, &mut array)
            })?;
            (array, data.cast::<u64>(), len)
        }
    };
    // SAFETY: `data` points at `len` elements of a BigInt64Array that this call keeps alive; a BigInt64Array's
    // elements are 8-byte aligned, and ids below 2^63 have the same bits as i64 and u64.
    let ids = unsafe { std::slice::from_raw_parts_mut(data, len) };
    generator.fill(ids).map_err(|e| raise(env, &e))?;
    Ok(array)
}

/// `nextIdStrings(count)`: an array of `count` decimal ids.
fn next_id_strings_impl(
    env: sys::napi_env,
    generator: CoreResult<&Generator<SystemClock>>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let Batch::Count(len) = read_batch(env, arg, false)? else {
        return Err(napi::Error::from_status(Status::InvalidArg));
    };
    let generator = generator.map_err(|e| raise(env, &e))?;
    let mut ids = vec![0u64; len];
    generator.fill(&mut ids).map_err(|e| raise(env, &e))?;
    let mut array = ptr::null_mut();
    // SAFETY: plain N-API calls on values of this call.
    check(unsafe { sys::napi_create_array_with_length(env, len, &mut array) })?;
    for (i, id) in ids.into_iter().enumerate() {
        let s = unsafe { decimal(env, id) }?;
        check(unsafe { sys::napi_set_element(env, array, i as u32, s) })?;
    }
    Ok(array)
}

/// An id as a JS bigint.
#[inline]
unsafe fn bigint(env: sys::napi_env, id: u64) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: `env` is the live env of this call and `out` a valid out-pointer.
    check(unsafe { sys::napi_create_bigint_uint64(env, id, &mut out) })?;
    Ok(out)
}

/// An id as a decimal JS string, written from a stack buffer.
#[inline]
unsafe fn decimal(env: sys::napi_env, id: u64) -> Result<sys::napi_value> {
    let digits = Decimal::new(id);
    let bytes = digits.as_bytes();
    let mut out = ptr::null_mut();
    // SAFETY: `bytes` is ASCII (so latin1) and its length is passed explicitly.
    check(unsafe { sys::napi_create_string_latin1(env, bytes.as_ptr().cast(), bytes.len() as isize, &mut out) })?;
    Ok(out)
}

/// A hot callback's return value: `make(id)` for a generated id, else null with the coded error thrown.
#[inline(always)]
unsafe fn id_value(
    env: sys::napi_env,
    id: Result<CoreResult<u64>>,
    make: unsafe fn(sys::napi_env, u64) -> Result<sys::napi_value>,
) -> sys::napi_value {
    match id {
        Ok(Ok(id)) => match unsafe { make(env, id) } {
            Ok(out) => out,
            Err(e) => unsafe { finish::<Raw>(env, Err(e)) },
        },
        Ok(Err(e)) => {
            throw(env, &e);
            ptr::null_mut()
        }
        Err(e) => unsafe { finish::<Raw>(env, Err(e)) },
    }
}

unsafe extern "C" fn module_next_id(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { id_value(env, Ok(default_generator().and_then(|g| g.next_id())), bigint) }
}

unsafe extern "C" fn module_next_id_string(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { id_value(env, Ok(default_generator().and_then(|g| g.next_id())), decimal) }
}

unsafe extern "C" fn module_next_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| next_ids_impl(env, default_generator(), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn module_next_id_strings(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| next_id_strings_impl(env, default_generator(), arg));
    unsafe { finish(env, out.map(Raw)) }
}

/// The generator of an instance callback, from its callback data.
#[inline]
unsafe fn callback_generator<'a>(env: sys::napi_env, info: sys::napi_callback_info) -> Result<&'a Generator<SystemClock>> {
    let mut data = ptr::null_mut();
    // SAFETY: only the callback data is asked for.
    check(unsafe { sys::napi_get_cb_info(env, info, ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), &mut data) })?;
    Ok(unsafe { instance_generator(data) })
}

unsafe extern "C" fn instance_next_id(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let id = unsafe { callback_generator(env, info) }.map(|g| g.next_id());
    unsafe { id_value(env, id, bigint) }
}

unsafe extern "C" fn instance_next_id_string(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let id = unsafe { callback_generator(env, info) }.map(|g| g.next_id());
    unsafe { id_value(env, id, decimal) }
}

unsafe extern "C" fn instance_next_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| next_ids_impl(env, Ok(unsafe { instance_generator(data) }), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn instance_next_id_strings(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| next_id_strings_impl(env, Ok(unsafe { instance_generator(data) }), arg));
    unsafe { finish(env, out.map(Raw)) }
}

/// `timestampOf(id)` with `layout`: the id's Unix ms as a JS number.
fn timestamp_impl(env: sys::napi_env, layout: CoreResult<Layout>, arg: sys::napi_value) -> Result<sys::napi_value> {
    let id = read_id(env, arg, "id")?;
    let layout = layout.map_err(|e| raise(env, &e))?;
    let mut out = ptr::null_mut();
    // SAFETY: `env` is the live env of this call; every Unix ms a layout encodes is below 2^53, so exact as f64.
    check(unsafe { sys::napi_create_double(env, layout.unix_ms_of(id) as f64, &mut out) })?;
    Ok(out)
}

unsafe extern "C" fn module_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| timestamp_impl(env, default_layout(), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn instance_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| timestamp_impl(env, Ok(*unsafe { instance_generator(data) }.layout()), arg));
    unsafe { finish(env, out.map(Raw)) }
}

/// A value already made in JS.
pub struct Raw(sys::napi_value);

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
    }
}

unsafe extern "C" fn drop_generator(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // SAFETY: `data` came from `Arc::into_raw` in `install_instance`, and this finalizer runs once.
    drop(unsafe { Arc::from_raw(data as *const Generator<SystemClock>) });
}

/// A JS function named `name` that runs `cb` with `data`.
fn make_function(env: sys::napi_env, name: &std::ffi::CStr, cb: Callback, data: *mut std::ffi::c_void) -> Result<sys::napi_value> {
    let mut f = ptr::null_mut();
    let len = name.to_bytes().len() as isize;
    // SAFETY: `name` is NUL-terminated and `len` long; `cb` is a valid N-API callback.
    check(unsafe { sys::napi_create_function(env, name.as_ptr(), len, Some(cb), data, &mut f) })?;
    Ok(f)
}

/// Defines `name` on `target` as a non-enumerable, read-only function running `cb` with `data`.
fn define_function(
    env: sys::napi_env,
    target: sys::napi_value,
    name: &std::ffi::CStr,
    cb: Callback,
    data: *mut std::ffi::c_void,
) -> Result<sys::napi_value> {
    let f = make_function(env, name, cb, data)?;
    let descriptor = sys::napi_property_descriptor {
        utf8name: name.as_ptr(),
        name: ptr::null_mut(),
        method: None,
        getter: None,
        setter: None,
        value: f,
        attributes: sys::PropertyAttributes::default,
        data: ptr::null_mut(),
    };
    check(unsafe { sys::napi_define_properties(env, target, 1, &descriptor) })?;
    Ok(f)
}

const INSTANCE_METHODS: [(&std::ffi::CStr, Callback); 5] = [
    (c"nextId", instance_next_id),
    (c"nextIdString", instance_next_id_string),
    (c"nextIds", instance_next_ids),
    (c"nextIdStrings", instance_next_id_strings),
    (c"timestampOf", instance_timestamp_of),
];

/// Gives a `Snowflake` its own fast methods, each holding a reference to its generator until it is collected.
fn install_instance(env: sys::napi_env, this: sys::napi_value, generator: &Arc<Generator<SystemClock>>) -> Result<()> {
    for (name, cb) in INSTANCE_METHODS {
        let data = Arc::into_raw(Arc::clone(generator)) as *mut std::ffi::c_void;
        match define_function(env, this, name, cb, data) {
            // SAFETY: `f` is the function just made; the finalizer frees `data` when it is collected.
            Ok(f) => check(unsafe {
                sys::napi_add_finalizer(env, f, data, Some(drop_generator), ptr::null_mut(), ptr::null_mut())
            })?,
            Err(e) => {
                // SAFETY: the function was not made, so nothing else owns `data`.
                unsafe { drop_generator(env, data, ptr::null_mut()) };
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Replaces the module's hot exports with their raw callbacks once napi-rs has registered everything.
#[napi(module_exports)]
pub fn install_fast_paths(env: Env, exports: Object) -> Result<()> {
    let (env, value) = (env.raw(), exports.raw());
    let module: [(&std::ffi::CStr, Callback); 5] = [
        (c"nextId", module_next_id),
        (c"nextIdString", module_next_id_string),
        (c"nextIds", module_next_ids),
        (c"nextIdStrings", module_next_id_strings),
        (c"timestampOf", module_timestamp_of),
    ];
    for (name, cb) in module {
        let f = make_function(env, name, cb, ptr::null_mut())?;
        // A plain property, as napi-rs's own exports are.
        // SAFETY: `value` is the exports object and `name` is NUL-terminated.
        check(unsafe { sys::napi_set_named_property(env, value, name.as_ptr(), f) })?;
    }
    Ok(())
}
