//! The native halves of `nextIds` and `nextIdStrings`: a `BigInt64Array` filled (made or the caller's), a small
//! batch written to the scratch for `index.js` to copy out, and the decimal forms joined by commas in one string for
//! `index.js` to split. Each asks for its generator only once its argument is known to be good, so that a refused
//! call starts nothing.

use std::ptr;

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Result, Status};

use crate::core::error::{Code, Error as CoreError, Result as CoreResult};
use crate::core::generator::Generator;
use crate::core::id::push_joined;
use crate::core::time::SystemClock;

use super::errors::{check, raise};
#[cfg(target_os = "wasi")]
use super::module_instance::emnapi_sync_memory;
use super::module_instance::{sync_scratch, Scratch, DECODE_FIELDS, SCRATCH_IDS};
use super::values::{describe, type_of};

/// The largest batch `nextIds` and `nextIdStrings` make in one call.
pub const MAX_BATCH: u64 = 1 << 20;

/// What a batch call was asked for: a count, or a caller's `BigInt64Array` to fill.
pub(crate) enum Batch {
    Count(usize),
    Fill { array: sys::napi_value, data: *mut u64, len: usize },
}

/// Reads a batch argument: a count, or (with `allow_array`) a caller's `BigInt64Array`.
pub(crate) fn read_batch(env: sys::napi_env, value: sys::napi_value, allow_array: bool) -> Result<Batch> {
    use sys::ValueType as T;
    // The error text is made only for a refused call: a good one formats and allocates nothing.
    let expected =
        || format!("an integer from 1 to {MAX_BATCH}{}", if allow_array { " or a BigInt64Array" } else { "" });
    let bad_range =
        |found: String| raise(env, &CoreError::range_error(Code::InvalidArgument, "count", &expected(), &found));
    match type_of(env, value)? {
        T::napi_number => {
            // SAFETY: `value` is a number.
            let n = unsafe { f64::from_napi_value(env, value) }?;
            if n.is_finite() && n.fract() == 0.0 && n >= 1.0 && n <= MAX_BATCH as f64 {
                Ok(Batch::Count(n as usize))
            } else {
                Err(bad_range(crate::core::number::js_number(n)))
            }
        }
        T::napi_object if allow_array => {
            let mut is_typed = false;
            check(unsafe { sys::napi_is_typedarray(env, value, &mut is_typed) })?;
            let (mut kind, mut len, mut data, mut buffer, mut offset) =
                (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
            if is_typed {
                // SAFETY: `value` is a typed array; every out-pointer is valid.
                check(unsafe {
                    sys::napi_get_typedarray_info(env, value, &mut kind, &mut len, &mut data, &mut buffer, &mut offset)
                })?;
            }
            if !is_typed || kind != sys::TypedarrayType::bigint64_array {
                let e = CoreError::type_error(
                    Code::InvalidArgument,
                    "count",
                    &expected(),
                    "an object that is not a BigInt64Array",
                );
                return Err(raise(env, &e));
            }
            if len == 0 || len as u64 > MAX_BATCH {
                return Err(bad_range(format!("a BigInt64Array of length {len}")));
            }
            Ok(Batch::Fill { array: value, data: data.cast(), len })
        }
        _ => {
            let e = CoreError::type_error(Code::InvalidArgument, "count", &expected(), &describe(env, value)?);
            Err(raise(env, &e))
        }
    }
}

/// `nextIds(count | array)`: a new `BigInt64Array` of `count` ids, or the caller's array filled.
/// The generator is asked for once the argument is known to be good, so a refused call starts nothing.
pub(crate) fn next_ids_impl<'g>(
    env: sys::napi_env,
    generator: impl FnOnce() -> CoreResult<&'g Generator<SystemClock>>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let batch = read_batch(env, arg, true)?;
    let generator = generator().map_err(|e| raise(env, &e))?;
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
    // On WASI (emnapi) `data` is a copy in wasm memory: copy the ids back into the JS array.
    #[cfg(target_os = "wasi")]
    {
        let mut view = array;
        // SAFETY: `view` is the BigInt64Array the ids were written for; usize::MAX syncs all of it.
        check(unsafe { emnapi_sync_memory(env, false, &mut view, 0, usize::MAX) })?;
    }
    Ok(array)
}

/// A batch of decimal ids: its count, read from `arg` (a number only), then the generator, asked for once the count
/// is known to be good, so that a refused call starts nothing.
fn counted_batch<'g>(
    env: sys::napi_env,
    generator: impl FnOnce() -> CoreResult<&'g Generator<SystemClock>>,
    arg: sys::napi_value,
) -> Result<(usize, &'g Generator<SystemClock>)> {
    let Batch::Count(len) = read_batch(env, arg, false)? else {
        return Err(napi::Error::from_status(Status::InvalidArg));
    };
    Ok((len, generator().map_err(|e| raise(env, &e))?))
}

/// How many ids a batch asks the generator for at a time while writing their decimal forms: a stack buffer's worth.
const TEXT_CHUNK: usize = 256;

thread_local! {
    /// The text `joined_ids_impl` writes, kept between calls so that a batch allocates only when it outgrows it.
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The fast half of `nextIdStrings(count)`: the next `count` ids' decimal forms joined by commas in one string,
/// which `index.js` splits (one string made natively, and V8's split, cost a fraction of `count` strings made and
/// stored through N-API). The generator is asked for as in `next_ids_impl`.
pub(crate) fn joined_ids_impl<'g>(
    env: sys::napi_env,
    generator: impl FnOnce() -> CoreResult<&'g Generator<SystemClock>>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let (len, generator) = counted_batch(env, generator, arg)?;
    TEXT.with(|text| {
        // A re-entered call (none is expected: nothing here runs JS) would find the buffer taken: it gets its own.
        let mut own = Vec::new();
        let mut borrowed = text.try_borrow_mut();
        let text = match borrowed.as_deref_mut() {
            Ok(t) => t,
            Err(_) => &mut own,
        };
        text.clear();
        let mut ids = [0u64; TEXT_CHUNK];
        let mut left = len;
        let mut last = None;
        while left > 0 {
            let n = left.min(TEXT_CHUNK);
            let Some(chunk) = ids.get_mut(..n) else { break };
            generator.fill(chunk).map_err(|e| raise(env, &e))?;
            push_joined(text, chunk, &mut last);
            left -= n;
        }
        let mut out = ptr::null_mut();
        // SAFETY: `text` is ASCII (so latin1) and its length is passed explicitly.
        check(unsafe { sys::napi_create_string_latin1(env, text.as_ptr().cast(), text.len() as isize, &mut out) })?;
        // A very large batch does not keep its memory for the life of the thread.
        if text.capacity() > 1 << 16 {
            *text = Vec::new();
        }
        Ok(out)
    })
}

/// The fast half of a small `nextIds(count)`: the next `count` ids written to the scratch's ids, for `index.js` to
/// copy out. `count` is a number from 1 to [`SCRATCH_IDS`]: `index.js` sends anything else to `next_ids_impl`.
pub(crate) fn scratch_ids_impl<'g>(
    env: sys::napi_env,
    generator: impl FnOnce() -> CoreResult<&'g Generator<SystemClock>>,
    scratch: Result<&Scratch>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let mut n = 0f64;
    // SAFETY: `arg` is a value of this call; a non-number gives an error status.
    check(unsafe { sys::napi_get_value_double(env, arg, &mut n) })?;
    if !(n >= 1.0 && n <= SCRATCH_IDS as f64 && n.fract() == 0.0) {
        return Err(napi::Error::new(
            Status::InvalidArg,
            format!("snowid: a scratch batch of 1 to {SCRATCH_IDS} ids, found {n}"),
        ));
    }
    let generator = generator().map_err(|e| raise(env, &e))?;
    let scratch = scratch?;
    // SAFETY: the ids start DECODE_FIELDS * 8 bytes into a buffer of DECODE_FIELDS + SCRATCH_IDS 8-byte elements
    // that its reference keeps alive, 8-byte aligned; `n` is at most SCRATCH_IDS.
    let ids = unsafe { std::slice::from_raw_parts_mut(scratch.data.add(DECODE_FIELDS * 8).cast::<u64>(), n as usize) };
    generator.fill(ids).map_err(|e| raise(env, &e))?;
    sync_scratch(env, scratch.ids)?;
    // A callback that returns no value returns `undefined` to JS.
    Ok(ptr::null_mut())
}
