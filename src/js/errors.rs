//! Core errors thrown as coded JS errors, and N-API statuses as napi-rs results.

use std::ffi::CString;

use napi::{sys, Result, Status};

use crate::core::error::{Class, Error as CoreError};

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

