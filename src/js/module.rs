//! The module's own functions, over the default generator: the hot calls made from plain N-API callbacks (`nextId`,
//! `nextIdString`, `timestampOf`, and the native halves of `decode`, `nextIds` and `nextIdStrings`, which `index.js`
//! completes), and the rest as napi-rs functions.

use std::ffi::{c_void, CStr};
use std::ptr;

use napi::bindgen_prelude::Object;
use napi::{sys, Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::identity;

use super::batches::{joined_ids_impl, next_ids_impl, scratch_ids_impl};
use super::decoding::{decode_fields, timestamp_impl};
use super::default::{
    configure_default, configured_view, counted_default_layout, default_config, default_generator, default_layout,
    default_snapshot,
};
use super::env::JsEnv;
use super::errors::{check, raise};
use super::functions::{call_info, finish, id_value, make_function, Callback};
use super::module_instance::{env_scratch, make_instance, make_scratch, scratch_of};
use super::options::read_options;
use super::report::{report, stats_of, SnowidConfig, SnowidStats};
use super::values::{bigint, decimal, read_time, IdBigInt, Raw};

unsafe extern "C" fn module_next_id(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { id_value(env, Ok(default_generator(env).and_then(|g| g.next_id())), bigint) }
}

unsafe extern "C" fn module_next_id_string(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { id_value(env, Ok(default_generator(env).and_then(|g| g.next_id())), decimal) }
}

unsafe extern "C" fn module_next_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| next_ids_impl(env, || default_generator(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn module_scratch_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: the data is the scratch `module::install` gave this function (see `scratch_of`).
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        scratch_ids_impl(env, || default_generator(env), unsafe { scratch_of(data.cast()) }, arg)
    });
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn module_joined_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| joined_ids_impl(env, || default_generator(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn module_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| timestamp_impl(env, default_layout(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn module_decode_fields(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: the data is the scratch `module::install` gave this function (see `scratch_of`).
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        decode_fields(env, counted_default_layout(env), unsafe { scratch_of(data.cast()) }, arg)
    });
    unsafe { finish(env, out.map(Raw)) }
}

/// Adds the module's hot calls, made from plain callbacks, to the exports napi-rs registered, with the scratch and
/// the view of the `configure()` count that `index.js` reads. The functions `index.js` completes, and the scratch,
/// are named with `__`: `index.js` does not export them.
#[napi(module_exports)]
pub fn install(env: Env, exports: Object) -> Result<()> {
    let (env, exports) = (env.raw(), exports.raw());
    // A plain property, as napi-rs's own exports are.
    // SAFETY: `exports` is the exports object and every name is NUL-terminated.
    let set = |key: &CStr, value| check(unsafe { sys::napi_set_named_property(env, exports, key.as_ptr(), value) });
    // This module instance's scratch, which the functions that write it are given as their data.
    let (scratch, fields, ids) = make_scratch(env)?;
    make_instance(env, exports, scratch)?;
    let data = env_scratch(env).cast_mut().cast::<c_void>();
    let functions: [(&CStr, &CStr, Callback, *mut c_void); 7] = [
        (c"nextId", c"nextId", module_next_id, ptr::null_mut()),
        (c"nextIdString", c"nextIdString", module_next_id_string, ptr::null_mut()),
        (c"nextIds", c"nextIds", module_next_ids, ptr::null_mut()),
        (c"timestampOf", c"timestampOf", module_timestamp_of, ptr::null_mut()),
        (c"__joinedIds", c"joinedIds", module_joined_ids, ptr::null_mut()),
        (c"__decodeFields", c"decodeFields", module_decode_fields, data),
        (c"__scratchIds", c"scratchIds", module_scratch_ids, data),
    ];
    for (key, name, cb, data) in functions {
        set(key, make_function(env, name, cb, data)?)?;
    }
    set(c"__decodeScratch", fields)?;
    set(c"__idScratch", ids)?;
    if let Some(view) = configured_view(env) {
        set(c"__configured", view)?;
    }
    Ok(())
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
    stats_of(default_snapshot())
}

/// Sets the options of the default generator before its first id. Options win over environment variables.
/// A later call before the first id replaces the earlier options. The options are validated at once.
/// @throws {Error} `ERR_SNOWID_ALREADY_CONFIGURED` once the default generator has issued an id.
/// @throws {RangeError|TypeError} `ERR_SNOWID_INVALID_CONFIG` for a bad option, or a bad environment value.
#[napi]
pub fn configure(env: Env, #[napi(ts_arg_type = "SnowflakeOptions")] options: Option<Unknown>) -> Result<()> {
    let raw = env.raw();
    let opts = read_options(raw, options)?;
    configure_default(raw, opts).map_err(|e| raise(raw, &e))
}
