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
    let e = CoreError::type_error(Code::InvalidArgument, what, "a value that can be read", "a getter or Proxy trap that threw");
    Err(raise(env, &e))
}
