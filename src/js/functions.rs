//! JS functions made from plain N-API callbacks, with no napi-rs wrapper: napi-rs's wrapper around an exported
//! function costs more than the generator itself, so the hot calls are made this way. Each callback finds what it
//! runs on in its callback data (no `this` to unwrap).

use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue};
use napi::{sys, Result};

use crate::core::error::Result as CoreResult;
use crate::core::generator::Generator;
use crate::core::time::SystemClock;

use super::errors::{check, throw};
use super::realm::{self, Realm};
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

/// The data of a function made for a realm (see `realm`): what it runs on, and that realm, if any.
pub(crate) trait InRealm {
    fn realm(&self) -> Option<&Rc<Realm>>;
}

/// Runs a function of one argument made for a realm: `f(arg, its data)`, with its realm as the calling one.
///
/// # Safety
/// The function's data is a `T`, which its finalizer frees only once the function is unreachable, so it is alive
/// while the function runs.
pub(crate) unsafe fn call_in_realm<T: InRealm>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: impl FnOnce(sys::napi_value, &T) -> Result<sys::napi_value>,
) -> sys::napi_value {
    // SAFETY: as above.
    unsafe { call_with_data(env, info, |arg, data: &T| realm::calling(data.realm(), || f(arg, data))) }
}

/// Runs a function of one argument: `f(arg, its data)`, without setting its realm, for a call that sets it only
/// where it needs it (see `batches::scratch_ids_impl`).
///
/// # Safety
/// As for [`call_in_realm`].
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

/// An id function made for a realm: an id of `started` (its generator, once started) on the fast path, which needs
/// nothing of the call; else, with the realm of `data()` as the calling one, `started`'s error thrown, or an id of
/// the generator `start()` starts.
#[inline(always)]
pub(crate) unsafe fn id_call<'g, 'd, T: InRealm + 'd>(
    env: sys::napi_env,
    started: Option<&'g Generator<SystemClock>>,
    data: impl FnOnce() -> Option<&'d T>,
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
    unsafe { id_in_realm(env, data(), id, make) }
}

#[cold]
#[inline(never)]
unsafe fn id_in_realm<T: InRealm>(
    env: sys::napi_env,
    data: Option<&T>,
    id: impl FnOnce() -> CoreResult<u64>,
    make: unsafe fn(sys::napi_env, u64) -> Result<sys::napi_value>,
) -> sys::napi_value {
    realm::calling(data.and_then(|d| d.realm()), || unsafe { id_value(env, Ok(id()), make) })
}

/// The data of the current call, as a `T`, or `None` where there is none.
///
/// # Safety
/// As for [`call_in_realm`].
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

/// The most arguments a function made by [`in_realm`] passes on: more than any function of the binding takes.
const REALM_ARGS: usize = 4;

/// What a function made by [`in_realm`] keeps: its realm, and the function of the binding it calls.
struct RealmCall {
    env: sys::napi_env,
    realm: Rc<Realm>,
    target: sys::napi_ref,
}

impl Drop for RealmCall {
    fn drop(&mut self) {
        // SAFETY: the reference was made in `env` by `in_realm`, and is deleted once, here.
        unsafe { sys::napi_delete_reference(self.env, self.target) };
    }
}

unsafe extern "C" fn realm_call(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let mut argc = REALM_ARGS;
    let mut argv = [ptr::null_mut(); REALM_ARGS];
    let (mut this, mut data, mut target) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: `argv` has room for `argc` values; the data is the `RealmCall` `in_realm` gave this function, freed
    // only once it is collected.
    let out = check(unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), &mut this, &mut data) })
        .and_then(|()| {
            let call = unsafe { &*(data as *const RealmCall) };
            check(unsafe { sys::napi_get_reference_value(env, call.target, &mut target) })?;
            let (argc, argv) = (argc.min(REALM_ARGS), argv.as_ptr());
            let mut result = ptr::null_mut();
            // Not `new`: Deno reports a new target for a plain call, and Bun gives `new` its own object, not the one
            // returned. A class is made through a function that calls `new` (lib/snowflake.js).
            check(realm::calling(Some(&call.realm), || unsafe {
                sys::napi_call_function(env, this, target, argc, argv, &mut result)
            }))?;
            Ok(Raw(result))
        });
    unsafe { finish(env, out) }
}

/// `target`, a function of the binding, as `realm`'s: a function of the same name that calls it with the same `this`
/// and arguments with `realm` as the calling realm (Deno does not pass `this` to a native function: give it as an
/// argument there), so that what it
/// throws is of `realm`'s error classes, and what it reads of the environment is `realm`'s `process.env`.
pub(crate) fn in_realm(env: sys::napi_env, realm: &Rc<Realm>, target: sys::napi_value) -> Result<sys::napi_value> {
    let (mut name, mut reference) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: `target` is a value of this call; the reference keeps it for as long as the function made here lives.
    check(unsafe { sys::napi_get_named_property(env, target, c"name".as_ptr(), &mut name) })?;
    // SAFETY: as above; a name that is not a string is an error.
    let name = CString::new(unsafe { String::from_napi_value(env, name) }?).unwrap_or_default();
    check(unsafe { sys::napi_create_reference(env, target, 1, &mut reference) })?;
    let call = RealmCall { env, realm: Rc::clone(realm), target: reference };
    owning_function(env, &name, realm_call, Box::new(call))
}
