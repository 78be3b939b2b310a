//! What a module instance keeps for its functions: its scratch (the buffer the JS halves of `decode` and `nextIds`
//! read) and its `Snowflake` class, as its env's instance data.
//!
//! A thread can run several module instances of this addon, each with its env and its `index.js`: the package
//! loaded again after a purge of `require.cache`, loaded in another `vm` realm, or installed twice. So nothing a
//! module instance's JS reads, or that its functions must match, is kept per thread. Each raw callback that writes
//! the scratch is given it as callback data when it is made in that env, so that a call writes exactly the buffer
//! its own `index.js` reads, with no look-up.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;

use napi::{sys, Result, Status};

use crate::core::config::Config;
use crate::core::hash::FastHash;

use super::errors::check;

/// How many numbers a decode writes: timestamp, datacenterId, workerId, clockBack, sequence; then the layout's
/// epoch, datacenter, worker, clock-back and sequence widths, and the two 32-bit halves (low, high) of the
/// `CONFIGURED` count the layout is current for (0 for a layout that is fixed).
pub const DECODE_FIELDS: usize = 12;

/// How many ids a small batch writes into the scratch, for `index.js` to copy out with one `slice`: a small
/// `BigInt64Array` that N-API makes, or whose memory it is given, costs V8 far more than the ids.
pub const SCRATCH_IDS: usize = 64;

/// A module instance's scratch: the data of one ArrayBuffer that [`module::install`] made for it (the
/// [`DECODE_FIELDS`] numbers of a decode, then [`SCRATCH_IDS`] ids), the two views its `index.js` reads it through,
/// and references that keep them alive for as long as its env lives.
pub(crate) struct Scratch {
    pub(crate) data: *mut u8,
    pub(crate) fields: sys::napi_ref,
    pub(crate) ids: sys::napi_ref,
}

/// What a module instance keeps for its functions, as its env's instance data (see the module's comment).
struct Instance {
    scratch: Scratch,
    /// This module instance's `Snowflake` class (napi-rs keeps one per thread: the last instance loaded).
    snowflake: sys::napi_ref,
    /// The object exported as `__caller`, whose `env` the JS that calls a function may set for the length of the
    /// call to the `process.env` its configuration reads (see `env::JsEnv::new`).
    caller: sys::napi_ref,
    /// The `Snowflake` cores this module instance made, by resolved configuration, as weak references: a core stays
    /// for as long as a `Snowflake` uses it (see `snowflake::snowflake_core`).
    cores: RefCell<Cores>,
}

/// Weak references to cores, by configuration, and the size at which the next sweep of collected ones comes.
struct Cores {
    by_config: HashMap<Config, sys::napi_ref, FastHash>,
    sweep_at: usize,
}

/// The fewest cores before the first sweep.
const FIRST_SWEEP: usize = 64;

unsafe extern "C" fn drop_instance(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` came from `Box::into_raw` in `make_instance`, and the env runs this finalizer once, as it ends.
    drop(unsafe { Box::from_raw(data as *mut Instance) });
}

/// Makes a scratch, and returns it and its two views: a Float64Array of the decode fields, a BigInt64Array of the
/// ids.
pub(crate) fn make_scratch(env: sys::napi_env) -> Result<(Scratch, sys::napi_value, sys::napi_value)> {
    let (mut data, mut buffer) = (ptr::null_mut(), ptr::null_mut());
    let (mut fields, mut ids, mut fields_ref, mut ids_ref) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain N-API calls on values of this call; the buffer is 8-byte aligned, and has room for both views,
    // each made of 8-byte elements at an offset that is a multiple of 8.
    check(unsafe { sys::napi_create_arraybuffer(env, (DECODE_FIELDS + SCRATCH_IDS) * 8, &mut data, &mut buffer) })?;
    check(unsafe {
        sys::napi_create_typedarray(env, sys::TypedarrayType::float64_array, DECODE_FIELDS, buffer, 0, &mut fields)
    })?;
    check(unsafe {
        sys::napi_create_typedarray(
            env,
            sys::TypedarrayType::bigint64_array,
            SCRATCH_IDS,
            buffer,
            DECODE_FIELDS * 8,
            &mut ids,
        )
    })?;
    // References that are never released: the buffer lives as long as the env, so `data` stays valid.
    check(unsafe { sys::napi_create_reference(env, fields, 1, &mut fields_ref) })?;
    check(unsafe { sys::napi_create_reference(env, ids, 1, &mut ids_ref) })?;
    Ok((Scratch { data: data.cast(), fields: fields_ref, ids: ids_ref }, fields, ids))
}

/// Makes the state of the module instance whose exports are `exports`, as its env's instance data: its `Snowflake`
/// class, `scratch`, and the object it exports as `__caller`.
pub(crate) fn make_instance(env: sys::napi_env, exports: sys::napi_value, scratch: Scratch) -> Result<()> {
    let (mut class, mut snowflake, mut holder, mut caller) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain N-API calls on values of this call; the references are never released, so the class and the
    // holder live as long as the env.
    check(unsafe { sys::napi_get_named_property(env, exports, c"Snowflake".as_ptr(), &mut class) })?;
    check(unsafe { sys::napi_create_reference(env, class, 1, &mut snowflake) })?;
    check(unsafe { sys::napi_create_object(env, &mut holder) })?;
    check(unsafe { sys::napi_create_reference(env, holder, 1, &mut caller) })?;
    check(unsafe { sys::napi_set_named_property(env, exports, c"__caller".as_ptr(), holder) })?;
    let cores = RefCell::new(Cores { by_config: HashMap::default(), sweep_at: FIRST_SWEEP });
    let instance = Box::into_raw(Box::new(Instance { scratch, snowflake, caller, cores }));
    // SAFETY: the env owns `instance` from here, and frees it with `drop_instance` when it ends.
    let set = check(unsafe { sys::napi_set_instance_data(env, instance.cast(), Some(drop_instance), ptr::null_mut()) });
    if let Err(e) = set {
        // SAFETY: the env did not take `instance`, so nothing else owns it.
        unsafe { drop_instance(env, instance.cast(), ptr::null_mut()) };
        return Err(e);
    }
    Ok(())
}

/// The state of the module instance `env` belongs to, or `None` before `module::install` has made it.
///
/// # Safety
/// The reference lives until the env ends, after the last call of any of its functions: it is used only in a call
/// in `env`, or kept by a function made in `env`.
unsafe fn env_instance<'a>(env: sys::napi_env) -> Option<&'a Instance> {
    let mut data = ptr::null_mut();
    // SAFETY: a plain N-API call; only `make_instance` sets this env's instance data.
    if unsafe { sys::napi_get_instance_data(env, &mut data) } != sys::Status::napi_ok {
        return None;
    }
    // SAFETY: see above.
    unsafe { (data as *const Instance).as_ref() }
}

/// The `process.env` that the JS calling now gave for this call (`__caller.env`, see [`Instance::caller`]), when it
/// is an object.
pub(crate) fn caller_env(env: sys::napi_env) -> Option<sys::napi_value> {
    // SAFETY: the instance is read only in a call in `env`.
    let instance = unsafe { env_instance(env) }?;
    let (mut holder, mut key, mut own, mut value, mut kind) =
        (ptr::null_mut(), ptr::null_mut(), false, ptr::null_mut(), 0);
    // SAFETY: the holder's reference lives as long as the env; its `env` is an own data property that the package's
    // JS sets (a property of `Object.prototype` is not read), so reading it runs no JS.
    let read = unsafe { sys::napi_get_reference_value(env, instance.caller, &mut holder) } == sys::Status::napi_ok
        && !holder.is_null()
        && unsafe { sys::napi_create_string_utf8(env, c"env".as_ptr(), 3, &mut key) } == sys::Status::napi_ok
        && unsafe { sys::napi_has_own_property(env, holder, key, &mut own) } == sys::Status::napi_ok
        && own
        && unsafe { sys::napi_get_property(env, holder, key, &mut value) } == sys::Status::napi_ok
        && unsafe { sys::napi_typeof(env, value, &mut kind) } == sys::Status::napi_ok;
    (read && kind == sys::ValueType::napi_object).then_some(value)
}

/// The scratch of the module instance `env` belongs to, or null before `module::install` made it, for a function
/// made in `env` to keep as its data. Asked for only when a function that writes it is made, never by a call.
pub(crate) fn env_scratch(env: sys::napi_env) -> *const Scratch {
    // SAFETY: the pointer is kept only by functions made in `env` (see `scratch_of`).
    match unsafe { env_instance(env) } {
        Some(i) => &i.scratch,
        None => ptr::null(),
    }
}

/// The `Snowflake` class of the module instance `env` belongs to, for `snowflake_core` to make a new core of.
pub(crate) fn snowflake_class(env: sys::napi_env) -> Result<sys::napi_ref> {
    // SAFETY: the reference is used in this call, in `env`.
    unsafe { env_instance(env) }.map(|i| i.snowflake).ok_or_else(|| {
        napi::Error::new(Status::GenericFailure, "snowid: this module instance has no Snowflake class yet")
    })
}

/// The value of a weak reference: `None` once it was collected.
fn weak_value(env: sys::napi_env, reference: sys::napi_ref) -> Result<Option<sys::napi_value>> {
    let mut value = ptr::null_mut();
    // SAFETY: `reference` is a live reference of `env`; a collected value reads as null.
    check(unsafe { sys::napi_get_reference_value(env, reference, &mut value) })?;
    Ok((!value.is_null()).then_some(value))
}

/// This module instance's core of a `Snowflake` of `config`, when it made one that is still in use.
pub(crate) fn cached_core(env: sys::napi_env, config: &Config) -> Result<Option<sys::napi_value>> {
    // SAFETY: used in this call, in `env`.
    let Some(instance) = (unsafe { env_instance(env) }) else {
        return Ok(None);
    };
    match instance.cores.borrow().by_config.get(config) {
        Some(&reference) => weak_value(env, reference),
        None => Ok(None),
    }
}

/// Keeps `core` (of `config`) for later `Snowflake`s of `config`, by a weak reference. When the references reach
/// twice as many as the last sweep left, those whose cores were collected are let go.
pub(crate) fn cache_core(env: sys::napi_env, config: Config, core: sys::napi_value) -> Result<()> {
    // SAFETY: used in this call, in `env`.
    let Some(instance) = (unsafe { env_instance(env) }) else {
        return Ok(());
    };
    let mut cores = instance.cores.borrow_mut();
    let mut reference = ptr::null_mut();
    // SAFETY: `core` is an object of this call; a reference of count 0 does not keep it alive.
    check(unsafe { sys::napi_create_reference(env, core, 0, &mut reference) })?;
    if let Some(old) = cores.by_config.insert(config, reference) {
        // SAFETY: `old` was made here, and is forgotten by the map.
        check(unsafe { sys::napi_delete_reference(env, old) })?;
    }
    if cores.by_config.len() >= cores.sweep_at {
        let mut gone = Vec::new();
        for (config, &reference) in &cores.by_config {
            if weak_value(env, reference)?.is_none() {
                gone.push(config.clone());
            }
        }
        for config in gone {
            if let Some(reference) = cores.by_config.remove(&config) {
                // SAFETY: as above.
                check(unsafe { sys::napi_delete_reference(env, reference) })?;
            }
        }
        cores.sweep_at = (2 * cores.by_config.len()).max(FIRST_SWEEP);
    }
    Ok(())
}

/// The scratch a function was given when it was made, or an error where its module instance had made none.
///
/// # Safety
/// `scratch` is null or its env's (`env_scratch`), and the call runs in that env: the env frees its instance data
/// only as it ends, after the last call of any of its functions.
pub(crate) unsafe fn scratch_of<'a>(scratch: *const Scratch) -> Result<&'a Scratch> {
    // SAFETY: see above.
    unsafe { scratch.as_ref() }.ok_or_else(|| {
        napi::Error::new(
            Status::GenericFailure,
            "snowid: this module instance had no scratch when the function was made",
        )
    })
}

#[cfg(target_os = "wasi")]
extern "C" {
    /// emnapi's copy between a JS ArrayBuffer (or view) and its wasm-memory copy: `js_to_wasm` false is wasm to JS.
    pub(crate) fn emnapi_sync_memory(
        env: sys::napi_env,
        js_to_wasm: bool,
        arraybuffer_or_view: *mut sys::napi_value,
        byte_offset: usize,
        length: usize,
    ) -> sys::napi_status;
}

/// On WASI (emnapi) the scratch's data is a copy in wasm memory: copies it into the JS view `view`.
#[cfg(target_os = "wasi")]
pub(crate) fn sync_scratch(env: sys::napi_env, view: sys::napi_ref) -> Result<()> {
    let mut value = ptr::null_mut();
    // SAFETY: the reference is alive; usize::MAX syncs the whole view.
    check(unsafe { sys::napi_get_reference_value(env, view, &mut value) })?;
    check(unsafe { emnapi_sync_memory(env, false, &mut value, 0, usize::MAX) })
}

#[cfg(not(target_os = "wasi"))]
pub(crate) fn sync_scratch(_env: sys::napi_env, _view: sys::napi_ref) -> Result<()> {
    Ok(())
}
