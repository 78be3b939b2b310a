//! Core errors thrown as coded JS errors, and N-API statuses as napi-rs results.

use std::ffi::CString;

use napi::{sys, Result, Status};

use crate::core::error::{Class, Code, Error as CoreError};

/// Throws `e` as a JS error of its class with its `code`.
pub(crate) fn throw(env: sys::napi_env, e: &CoreError) {
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
pub(crate) fn raise(env: sys::napi_env, e: &CoreError) -> napi::Error {
    throw(env, e);
    napi::Error::from_status(Status::PendingException)
}

pub(crate) fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_status(Status::from(status)))
    }
}

/// Checks the status of a call that reads a value given by JS (a property, a key list, a prototype). A getter or a
/// Proxy trap that threw leaves its exception pending: it is replaced by a coded `TypeError` about `what`, so that
/// every failure of a snowid call is coded.
pub(crate) fn check_reading(env: sys::napi_env, status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        return Ok(());
    }
    // Node reports a throw inside a read as a generic failure with the exception pending.
    let mut pending = false;
    // SAFETY: `env` is the live env of the current call.
    check(unsafe { sys::napi_is_exception_pending(env, &mut pending) })?;
    if !pending {
        return check(status);
    }
    let mut thrown = std::ptr::null_mut();
    // SAFETY: an exception is pending on `env`, the live env of the current call; clearing it lets a new one be
    // thrown.
    check(unsafe { sys::napi_get_and_clear_last_exception(env, &mut thrown) })?;
    let e = CoreError::type_error(
        Code::InvalidArgument,
        what,
        "a value that can be read",
        "a getter or Proxy trap that threw",
    );
    Err(raise(env, &e))
}

/// Gives a warning through `process.emitWarning(message, { type: 'SnowidWarning', code })`, so that it is printed
/// once to stderr (unless `--no-warnings`) and reaches `process.on('warning')`. A runtime without it gets none; a
/// throw from it is cleared.
pub(crate) fn emit_warning(env: sys::napi_env, message: &str, code: &str) {
    if emit(env, message, code).is_err() {
        let mut thrown = std::ptr::null_mut();
        // SAFETY: `env` is the live env of the current call.
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut thrown) };
    }
}

fn emit(env: sys::napi_env, message: &str, code: &str) -> Result<()> {
    use std::ptr::null_mut;
    let property = |object: sys::napi_value, name: &std::ffi::CStr| -> Result<sys::napi_value> {
        let mut value = null_mut();
        // SAFETY: `object` is a value of the current call and `name` is NUL-terminated.
        check(unsafe { sys::napi_get_named_property(env, object, name.as_ptr(), &mut value) })?;
        Ok(value)
    };
    let string = |text: &str| -> Result<sys::napi_value> {
        let mut value = null_mut();
        // SAFETY: the length is passed explicitly.
        check(unsafe { sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value) })?;
        Ok(value)
    };
    let kind = |value: sys::napi_value| -> Result<sys::napi_valuetype> {
        let mut t = 0;
        // SAFETY: `value` is a value of the current call.
        check(unsafe { sys::napi_typeof(env, value, &mut t) })?;
        Ok(t)
    };
    let mut global = null_mut();
    // SAFETY: `env` is the live env of the current call.
    check(unsafe { sys::napi_get_global(env, &mut global) })?;
    let process = property(global, c"process")?;
    if kind(process)? != sys::ValueType::napi_object {
        return Ok(());
    }
    let emit_warning = property(process, c"emitWarning")?;
    if kind(emit_warning)? != sys::ValueType::napi_function {
        return Ok(());
    }
    let mut options = null_mut();
    // SAFETY: plain N-API calls on values of the current call.
    check(unsafe { sys::napi_create_object(env, &mut options) })?;
    check(unsafe { sys::napi_set_named_property(env, options, c"type".as_ptr(), string("SnowidWarning")?) })?;
    check(unsafe { sys::napi_set_named_property(env, options, c"code".as_ptr(), string(code)?) })?;
    let argv = [string(message)?, options];
    let mut result = null_mut();
    check(unsafe { sys::napi_call_function(env, process, emit_warning, argv.len(), argv.as_ptr(), &mut result) })
}
