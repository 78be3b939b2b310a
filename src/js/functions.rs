//! JS functions made from plain N-API callbacks, with no napi-rs wrapper: napi-rs's wrapper around an exported
//! function costs more than the generator itself, so the hot calls are made this way. Each callback finds what it
//! runs on in its callback data (no `this` to unwrap).

use std::ffi::{c_void, CStr};
use std::ptr;

use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Result};

use crate::core::error::Result as CoreResult;
use crate::core::generator::Generator;
use crate::core::time::SystemClock;

use super::errors::{check, throw};
use super::values::Raw;

/// A plain N-API callback.
pub(crate) type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// The value to return from a raw callback: `v` converted, or null with the exception pending.
pub(crate) unsafe fn finish<T: ToNapiValue>(env: sys::napi_env, v: Result<T>) -> sys::napi_value {
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
pub(crate) unsafe fn call_info(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Result<(sys::napi_value, *mut c_void)> {
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

/// A hot callback's return value: `make(id)` for a generated id, else null with the coded error thrown.
#[inline(always)]
pub(crate) unsafe fn id_value(
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

/// A JS function named `name` that runs `cb` with `data`.
pub(crate) fn make_function(
    env: sys::napi_env,
    name: &CStr,
    cb: Callback,
    data: *mut c_void,
) -> Result<sys::napi_value> {
    let mut f = ptr::null_mut();
    let len = name.to_bytes().len() as isize;
    // SAFETY: `name` is NUL-terminated and `len` long; `cb` is a valid N-API callback.
    check(unsafe { sys::napi_create_function(env, name.as_ptr(), len, Some(cb), data, &mut f) })?;
    Ok(f)
}

/// A function named `name` that runs `cb` with `data`, which `free` frees once the function is collected (or at
/// once, when the function cannot be made).
fn function_freeing(
    env: sys::napi_env,
    name: &CStr,
    cb: Callback,
    data: *mut c_void,
    free: unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void),
) -> Result<sys::napi_value> {
    match make_function(env, name, cb, data) {
        // SAFETY: `f` is the function just made; the finalizer frees `data` when it is collected.
        Ok(f) => {
            check(unsafe { sys::napi_add_finalizer(env, f, data, Some(free), ptr::null_mut(), ptr::null_mut()) })?;
            Ok(f)
        }
        Err(e) => {
            // SAFETY: the function was not made, so nothing else owns `data`.
            unsafe { free(env, data, ptr::null_mut()) };
            Err(e)
        }
    }
}

unsafe extern "C" fn drop_box<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` came from `Box::into_raw` of a `Box<T>` in `owning_function`, and this finalizer runs once.
    drop(unsafe { Box::from_raw(data as *mut T) });
}

/// A function named `name` that runs `cb` with `data`, which it owns until it is collected.
pub(crate) fn owning_function<T>(
    env: sys::napi_env,
    name: &CStr,
    cb: Callback,
    data: Box<T>,
) -> Result<sys::napi_value> {
    function_freeing(env, name, cb, Box::into_raw(data) as *mut c_void, drop_box::<T>)
}

/// Runs a function of one argument: `f(arg, its data)`.
///
/// # Safety
/// The function's data is a `T`, which its finalizer frees only once the function is unreachable, so it is alive
/// while the function runs.
pub(crate) unsafe fn call_with_data<T>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: impl FnOnce(sys::napi_value, &T) -> Result<sys::napi_value>,
) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        // SAFETY: see above.
        f(arg, unsafe { &*(data as *const T) })
    });
    unsafe { finish(env, out.map(Raw)) }
}

/// An id function: an id of `started` (its generator, once started) on the fast path, which needs nothing of the
/// call; else `started`'s error thrown, or an id of the generator `start()` starts.
#[inline(always)]
pub(crate) unsafe fn id_call<'g>(
    env: sys::napi_env,
    started: Option<&'g Generator<SystemClock>>,
    start: impl FnOnce() -> CoreResult<&'g Generator<SystemClock>>,
    make: unsafe fn(sys::napi_env, u64) -> Result<sys::napi_value>,
) -> sys::napi_value {
    // The fast path by itself first: its `Option` stays in registers.
    if let Some(id) = started.and_then(|g| g.next_id_fast()) {
        return unsafe { id_value(env, Ok(Ok(id)), make) };
    }
    let failed = match started.map(|g| g.next_id_closed()) {
        Some(Ok(id)) => return unsafe { id_value(env, Ok(Ok(id)), make) },
        Some(Err(e)) => Some(e),
        None => None,
    };
    let id = || match failed {
        Some(e) => Err(e),
        None => start().and_then(|g| g.next_id()),
    };
    unsafe { id_cold(env, id, make) }
}

#[cold]
#[inline(never)]
unsafe fn id_cold(
    env: sys::napi_env,
    id: impl FnOnce() -> CoreResult<u64>,
    make: unsafe fn(sys::napi_env, u64) -> Result<sys::napi_value>,
) -> sys::napi_value {
    unsafe { id_value(env, Ok(id()), make) }
}

/// The data of the current call, as a `T`, or `None` where there is none.
///
/// # Safety
/// As for [`call_with_data`].
pub(crate) unsafe fn data_of<'a, T>(env: sys::napi_env, info: sys::napi_callback_info) -> Option<&'a T> {
    let mut data = ptr::null_mut();
    // SAFETY: only the callback data is asked for.
    let status =
        unsafe { sys::napi_get_cb_info(env, info, ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), &mut data) };
    if status != sys::Status::napi_ok {
        return None;
    }
    // SAFETY: see above.
    unsafe { (data as *const T).as_ref() }
}
