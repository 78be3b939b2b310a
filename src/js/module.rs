//! The module's own functions, over the default generator: the hot calls made from plain N-API callbacks (`nextId`,
//! `nextIdString`, `timestampOf`, and the native halves of `decode`, `nextIds` and `nextIdStrings`, which `index.js`
//! completes), made for each load of `lib/addon.js` (`__module`), and the rest as napi-rs functions.

use std::ffi::CStr;
use std::ptr;

use napi::bindgen_prelude::Object;
use napi::{sys, Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::identity;

use super::batches::{joined_ids_impl, next_ids_impl, scratch_ids_impl};
use super::decoding::{decode_fields, timestamp_impl};
use super::default::{
    configure_default, configured_view, counted_default_layout, default_config, default_generator, default_layout,
    default_stats, DEFAULT,
};
use super::env::{register_os_backed, JsEnv};
use super::errors::{check, raise};
use super::functions::{call_with_data, id_call, owning_function, Callback};
use super::module_instance::{env_scratch, make_instance, make_scratch, scratch_of, Scratch};
use super::options::read_options;
use super::report::{report, SnowidConfig, SnowidStats};
use super::values::{bigint, decimal, read_time, IdBigInt, Raw};

/// What the module's functions keep: the scratch of their module instance.
struct ModuleFunction {
    scratch: *const Scratch,
}

/// The module's `nextId` and `nextIdString`, over the default generator (see `id_call`).
#[inline(always)]
unsafe fn module_id(
    env: sys::napi_env,
    make: unsafe fn(sys::napi_env, u64) -> Result<sys::napi_value>,
) -> sys::napi_value {
    unsafe { id_call(env, DEFAULT.get().map(|(g, _)| g), move || default_generator(env), make) }
}

unsafe extern "C" fn module_next_id(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { module_id(env, bigint) }
}

unsafe extern "C" fn module_next_id_string(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { module_id(env, decimal) }
}

/// On WASI, a bigint or a string made in wasm costs more than the call itself: emnapi builds each in JS, reading
/// wasm memory byte by byte. So there the module's `nextId` writes the id here instead, where `index.js` reads it
/// through a view of wasm memory (`__idOut`, made once per module instance), and makes the bigint or the decimal
/// string itself. A wasm instance's memory is its own, and only its JS thread calls it: one slot serves each.
#[cfg(target_os = "wasi")]
static ID_OUT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(target_os = "wasi")]
unsafe fn id_out(_env: sys::napi_env, id: u64) -> Result<sys::napi_value> {
    ID_OUT.store(id, std::sync::atomic::Ordering::Relaxed);
    Ok(ptr::null_mut())
}

#[cfg(target_os = "wasi")]
unsafe extern "C" fn module_next_id_out(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { module_id(env, id_out) }
}

#[cfg(target_os = "wasi")]
extern "C" {
    /// emnapi's view of wasm memory as a JS typed array (no copy).
    fn emnapi_create_memory_view(
        env: sys::napi_env,
        typedarray_type: sys::napi_typedarray_type,
        external_data: *mut std::ffi::c_void,
        byte_length: usize,
        finalize_cb: sys::napi_finalize,
        finalize_hint: *mut std::ffi::c_void,
        result: *mut sys::napi_value,
    ) -> sys::napi_status;
}

unsafe extern "C" fn module_next_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { call_with_data::<ModuleFunction>(env, info, |arg, _| next_ids_impl(env, || default_generator(env), arg)) }
}

unsafe extern "C" fn module_scratch_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let f = |arg, m: &ModuleFunction| {
        let generator = || match DEFAULT.get() {
            Some((g, _)) => Ok(g),
            None => default_generator(env),
        };
        // SAFETY: the scratch is this env's (see `scratch_of`).
        scratch_ids_impl(env, generator, unsafe { scratch_of(m.scratch) }, arg)
    };
    unsafe { call_with_data::<ModuleFunction>(env, info, f) }
}

unsafe extern "C" fn module_joined_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe {
        call_with_data::<ModuleFunction>(env, info, |arg, _| joined_ids_impl(env, || default_generator(env), arg))
    }
}

unsafe extern "C" fn module_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { call_with_data::<ModuleFunction>(env, info, |arg, _| timestamp_impl(env, default_layout(env), arg)) }
}

unsafe extern "C" fn module_decode_fields(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: the scratch is this env's (see `scratch_of`).
    let f = |arg, m: &ModuleFunction| {
        decode_fields(env, counted_default_layout(env), unsafe { scratch_of(m.scratch) }, arg)
    };
    unsafe { call_with_data::<ModuleFunction>(env, info, f) }
}

/// The module's hot calls, made from plain callbacks.
const MODULE_FUNCTIONS: &[(&CStr, Callback)] = &[
    (c"nextId", module_next_id),
    #[cfg(target_os = "wasi")]
    (c"nextIdOut", module_next_id_out),
    (c"nextIdString", module_next_id_string),
    (c"nextIds", module_next_ids),
    (c"timestampOf", module_timestamp_of),
    (c"joinedIds", module_joined_ids),
    (c"decodeFields", module_decode_fields),
    (c"scratchIds", module_scratch_ids),
];

/// For `lib/addon.js`, once per load: the module's hot functions in an object: `nextId`, `nextIdString`, `nextIds`,
/// `timestampOf`, and the halves `index.js` completes (`joinedIds`, `decodeFields`, `scratchIds`). `processEnv`, given
/// only on Node's main thread by the file loaded in the module instance's own global, is Node's own view of the OS
/// environment (see `env::register_os_backed`).
#[napi(skip_typescript, js_name = "__module")]
pub fn module_functions(env: Env, process_env: Option<Object>) -> Result<Raw> {
    let env = env.raw();
    if let Some(process_env) = process_env {
        register_os_backed(env, process_env.raw())?;
    }
    let mut object = ptr::null_mut();
    // SAFETY: plain N-API calls on values of this call.
    check(unsafe { sys::napi_create_object(env, &mut object) })?;
    let scratch = env_scratch(env);
    for &(name, cb) in MODULE_FUNCTIONS {
        let f = owning_function(env, name, cb, Box::new(ModuleFunction { scratch }))?;
        check(unsafe { sys::napi_set_named_property(env, object, name.as_ptr(), f) })?;
    }
    Ok(Raw(object))
}

/// Adds the scratch and the view of the `configure()` count that `index.js` reads to the exports napi-rs registered,
/// and makes the module instance's state. Named with `__`: `index.js` does not export them.
#[napi(module_exports)]
pub fn install(env: Env, exports: Object) -> Result<()> {
    let (env, exports) = (env.raw(), exports.raw());
    // A plain property, as napi-rs's own exports are.
    // SAFETY: `exports` is the exports object and every name is NUL-terminated.
    let set = |key: &CStr, value| check(unsafe { sys::napi_set_named_property(env, exports, key.as_ptr(), value) });
    // This module instance's scratch, which the functions that write it are given as their data.
    let (scratch, fields, ids) = make_scratch(env)?;
    make_instance(env, exports, scratch)?;
    set(c"__decodeScratch", fields)?;
    set(c"__idScratch", ids)?;
    if let Some(view) = configured_view(env) {
        set(c"__configured", view)?;
    }
    #[cfg(target_os = "wasi")]
    {
        let mut view = ptr::null_mut();
        // SAFETY: `ID_OUT` is a static, 8 bytes at an 8-byte-aligned address of wasm memory, for as long as the
        // instance lives; the memory is shared, so growing it never detaches the view.
        check(unsafe {
            emnapi_create_memory_view(
                env,
                sys::TypedarrayType::bigint64_array,
                ID_OUT.as_ptr().cast(),
                8,
                None,
                ptr::null_mut(),
                &mut view,
            )
        })?;
        set(c"__idOut", view)?;
    }
    if let Some(main) = process_main_thread() {
        let mut value = ptr::null_mut();
        // SAFETY: a plain N-API call with a valid out-pointer.
        check(unsafe { sys::napi_get_boolean(env, main, &mut value) })?;
        set(c"__processMainThread", value)?;
    }
    Ok(())
}

/// Whether the thread loading this module instance is the process's first thread (where the OS says; `None`
/// elsewhere). A worker_thread never is, so `lib/addon.js` reads this rather than load `node:worker_threads` (about
/// 1.4 ms of a start) to know that it runs on Node's main thread.
fn process_main_thread() -> Option<bool> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: neither call takes an argument or fails.
        let (tid, pid) = unsafe { (libc::syscall(libc::SYS_gettid), libc::getpid()) };
        Some(tid == libc::c_long::from(pid))
    }
    #[cfg(any(target_os = "macos", target_os = "freebsd"))]
    {
        // SAFETY: takes no argument and cannot fail.
        Some(unsafe { libc::pthread_main_np() } == 1)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "freebsd")))]
    {
        None
    }
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

/// The default generator's current lead and counters, and its host lease (all 0, and `hostLease` null, before its
/// first id).
#[napi]
pub fn stats() -> SnowidStats {
    default_stats()
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
