//! Fast paths: the hot calls as plain N-API callbacks.

use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, Object, ToNapiValue};
use napi::{sys, Env, JsValue, Result, Status};
use napi_derive::napi;

use crate::core::error::{Code, Error as CoreError, Result as CoreResult};
use crate::core::generator::Generator;
use crate::core::layout::Layout;
use crate::core::time::SystemClock;

use super::default::{configured_view, counted_default_layout, default_generator, default_layout};
use super::errors::{check, raise, throw};
use super::snowflake::SnowflakeGenerator;
use super::values::{bigint, decimal, describe, read_id, type_of, Raw};
use crate::core::id::push_joined;

// Fast paths. napi-rs's wrapper around an exported function or method costs more than the generator itself, so the
// hot calls are plain N-API callbacks: the module's read the default generator, and each `Snowflake` instance gets
// its own, whose callback data is its generator (no `this` to unwrap). The `#[napi]` items of `default` and
// `snowflake` still declare the typings and remain as correct, slower fallbacks.

pub(crate) type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// The largest batch `nextIds` and `nextIdStrings` make in one call.
pub const MAX_BATCH: u64 = 1 << 20;

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
) -> Result<(sys::napi_value, *mut std::ffi::c_void)> {
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
pub(crate) unsafe fn instance_generator<'a>(data: *mut std::ffi::c_void) -> &'a SnowflakeGenerator {
    unsafe { &*(data as *const SnowflakeGenerator) }
}

/// What a batch call was asked for: a count, or a caller's `BigInt64Array` to fill.
pub(crate) enum Batch {
    Count(usize),
    Fill { array: sys::napi_value, data: *mut u64, len: usize },
}

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

#[cfg(target_os = "wasi")]
extern "C" {
    /// emnapi's copy between a JS ArrayBuffer (or view) and its wasm-memory copy: `js_to_wasm` false is wasm to JS.
    fn emnapi_sync_memory(
        env: sys::napi_env,
        js_to_wasm: bool,
        arraybuffer_or_view: *mut sys::napi_value,
        byte_offset: usize,
        length: usize,
    ) -> sys::napi_status;
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

/// `nextIdStrings(count)`: an array of `count` decimal ids. The generator is asked for as in `next_ids_impl`.
pub(crate) fn next_id_strings_impl<'g>(
    env: sys::napi_env,
    generator: impl FnOnce() -> CoreResult<&'g Generator<SystemClock>>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let (len, generator) = counted_batch(env, generator, arg)?;
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
    // SAFETY: the data is the scratch `install_fast_paths` gave this function (see `scratch_of`).
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        scratch_ids_impl(env, || default_generator(env), unsafe { scratch_of(data.cast()) }, arg)
    });
    unsafe { finish(env, out.map(Raw)) }
}

/// The data of an instance's `scratchIds`: its generator, and the scratch of the module instance it was made in.
struct ScratchBatch {
    generator: Arc<SnowflakeGenerator>,
    scratch: *const Scratch,
}

unsafe extern "C" fn instance_scratch_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        // SAFETY: the data is the `ScratchBatch` `install_instance` gave this function, freed only once it is
        // collected; its scratch is this env's (see `scratch_of`).
        let batch = unsafe { &*(data as *const ScratchBatch) };
        scratch_ids_impl(env, || batch.generator.get(env), unsafe { scratch_of(batch.scratch) }, arg)
    });
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn module_joined_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| joined_ids_impl(env, || default_generator(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

/// The generator of an instance callback, from its callback data.
#[inline]
pub(crate) unsafe fn callback_generator<'a>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Result<&'a SnowflakeGenerator> {
    let mut data = ptr::null_mut();
    // SAFETY: only the callback data is asked for.
    check(unsafe { sys::napi_get_cb_info(env, info, ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), &mut data) })?;
    Ok(unsafe { instance_generator(data) })
}

unsafe extern "C" fn instance_next_id(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let id = unsafe { callback_generator(env, info) }.map(|l| l.get(env).and_then(|g| g.next_id()));
    unsafe { id_value(env, id, bigint) }
}

unsafe extern "C" fn instance_next_id_string(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let id = unsafe { callback_generator(env, info) }.map(|l| l.get(env).and_then(|g| g.next_id()));
    unsafe { id_value(env, id, decimal) }
}

unsafe extern "C" fn instance_next_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| next_ids_impl(env, || unsafe { instance_generator(data) }.get(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn instance_joined_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| joined_ids_impl(env, || unsafe { instance_generator(data) }.get(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

/// `timestampOf(id)` with `layout`: the id's Unix ms as a JS number.
pub(crate) fn timestamp_impl(
    env: sys::napi_env,
    layout: CoreResult<Layout>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let id = read_id(env, arg, "id")?;
    let layout = layout.map_err(|e| raise(env, &e))?;
    let mut out = ptr::null_mut();
    // SAFETY: `env` is the live env of this call; every Unix ms a layout encodes is below 2^53, so exact as f64.
    check(unsafe { sys::napi_create_double(env, layout.unix_ms_of(id) as f64, &mut out) })?;
    Ok(out)
}

unsafe extern "C" fn module_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, _)| timestamp_impl(env, default_layout(env), arg));
    unsafe { finish(env, out.map(Raw)) }
}

unsafe extern "C" fn instance_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| timestamp_impl(env, Ok(unsafe { instance_generator(data) }.layout), arg));
    unsafe { finish(env, out.map(Raw)) }
}

// `decode`, fast. napi-rs builds a returned object one property at a time, which costs many times the id itself, so
// the native half of a decode writes the id's number fields into a small Float64Array this module made, and returns
// the id's decimal string; `index.js` then builds the object as one literal, of one stable shape, from the two. It
// also writes the layout it decoded with, so that `index.js` can split later `bigint` ids itself, with no native
// call at all, for as long as that layout is current.

/// How many numbers a decode writes: timestamp, datacenterId, workerId, clockBack, sequence; then the layout's
/// epoch, datacenter, worker, clock-back and sequence widths, and the two 32-bit halves (low, high) of the
/// `CONFIGURED` count the layout is current for (0 for a layout that is fixed).
pub const DECODE_FIELDS: usize = 12;

/// How many ids a small batch writes into the scratch, for `index.js` to copy out with one `slice`: a small
/// `BigInt64Array` that N-API makes, or whose memory it is given, costs V8 far more than the ids.
pub const SCRATCH_IDS: usize = 64;

/// A module instance's scratch: the data of one ArrayBuffer that [`install_fast_paths`] made for it (the
/// [`DECODE_FIELDS`] numbers of a decode, then [`SCRATCH_IDS`] ids), the two views its `index.js` reads it through,
/// and references that keep them alive for as long as its env lives.
struct Scratch {
    data: *mut u8,
    fields: sys::napi_ref,
    ids: sys::napi_ref,
}

/// What a module instance keeps for its functions, as its env's instance data.
///
/// A thread can run several module instances of this addon, each with its env and its `index.js`: the package
/// loaded again after a purge of `require.cache`, loaded in another `vm` realm, or installed twice. So nothing a
/// module instance's JS reads, or that its functions must match, is kept per thread: the scratch, and the
/// `Snowflake` class whose instances its methods take, are the env's. Each raw callback that writes the scratch is
/// given it as callback data when it is made in that env, so that a call writes exactly the buffer its own
/// `index.js` reads, with no look-up.
struct Instance {
    /// None on WASI, where `index.js` reads no scratch.
    scratch: Option<Scratch>,
    /// This module instance's `Snowflake` class (napi-rs keeps one per thread: the last instance loaded).
    snowflake: sys::napi_ref,
}

unsafe extern "C" fn drop_instance(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // SAFETY: `data` came from `Box::into_raw` in `make_instance`, and the env runs this finalizer once, as it ends.
    drop(unsafe { Box::from_raw(data as *mut Instance) });
}

/// Makes a scratch, and returns it and its two views: a Float64Array of the decode fields, a BigInt64Array of the
/// ids.
fn make_scratch(env: sys::napi_env) -> Result<(Scratch, sys::napi_value, sys::napi_value)> {
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
/// class, and `scratch`.
fn make_instance(env: sys::napi_env, exports: sys::napi_value, scratch: Option<Scratch>) -> Result<()> {
    let (mut class, mut snowflake) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain N-API calls on values of this call; the reference is never released, so the class lives as long
    // as the env.
    check(unsafe { sys::napi_get_named_property(env, exports, c"Snowflake".as_ptr(), &mut class) })?;
    check(unsafe { sys::napi_create_reference(env, class, 1, &mut snowflake) })?;
    let instance = Box::into_raw(Box::new(Instance { scratch, snowflake }));
    // SAFETY: the env owns `instance` from here, and frees it with `drop_instance` when it ends.
    let set = check(unsafe { sys::napi_set_instance_data(env, instance.cast(), Some(drop_instance), ptr::null_mut()) });
    if let Err(e) = set {
        // SAFETY: the env did not take `instance`, so nothing else owns it.
        unsafe { drop_instance(env, instance.cast(), ptr::null_mut()) };
        return Err(e);
    }
    Ok(())
}

/// The state of the module instance `env` belongs to, or `None` before `install_fast_paths` has made it.
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

/// The scratch of the module instance `env` belongs to, or null where it made none (WASI), for a function made in
/// `env` to keep as its data. Asked for only when a function that writes it is made, never by a call.
fn env_scratch(env: sys::napi_env) -> *const Scratch {
    // SAFETY: the pointer is kept only by functions made in `env` (see `scratch_of`).
    match unsafe { env_instance(env) }.and_then(|i| i.scratch.as_ref()) {
        Some(s) => s,
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

/// The scratch a function was given when it was made, or an error where its module instance made none.
///
/// # Safety
/// `scratch` is null or its env's (`env_scratch`), and the call runs in that env: the env frees its instance data
/// only as it ends, after the last call of any of its functions.
unsafe fn scratch_of<'a>(scratch: *const Scratch) -> Result<&'a Scratch> {
    // SAFETY: see above.
    unsafe { scratch.as_ref() }.ok_or_else(|| {
        napi::Error::new(
            Status::GenericFailure,
            "snowid: this module instance has no scratch (the WASI build makes none)",
        )
    })
}

/// On WASI (emnapi) the scratch's data is a copy in wasm memory: copies it into the JS view `view`.
#[cfg(target_os = "wasi")]
fn sync_scratch(env: sys::napi_env, view: sys::napi_ref) -> Result<()> {
    let mut value = ptr::null_mut();
    // SAFETY: the reference is alive; usize::MAX syncs the whole view.
    check(unsafe { sys::napi_get_reference_value(env, view, &mut value) })?;
    check(unsafe { emnapi_sync_memory(env, false, &mut value, 0, usize::MAX) })
}

#[cfg(not(target_os = "wasi"))]
fn sync_scratch(_env: sys::napi_env, _view: sys::napi_ref) -> Result<()> {
    Ok(())
}

/// The fast half of a small `nextIds(count)`: the next `count` ids written to the scratch's ids, for `index.js` to
/// copy out. `count` is a number from 1 to [`SCRATCH_IDS`]: `index.js` sends anything else to `next_ids_impl`.
fn scratch_ids_impl<'g>(
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
    let mut undefined = ptr::null_mut();
    check(unsafe { sys::napi_get_undefined(env, &mut undefined) })?;
    Ok(undefined)
}

/// The native half of a decode: `arg` read as an id and split by `layout`; its number fields written to `scratch`,
/// its decimal form returned.
fn decode_fields(
    env: sys::napi_env,
    layout: CoreResult<(u64, Layout)>,
    scratch: Result<&Scratch>,
    arg: sys::napi_value,
) -> Result<sys::napi_value> {
    let id = read_id(env, arg, "id")?;
    let (count, layout) = layout.map_err(|e| raise(env, &e))?;
    let f = layout.unpack(id);
    let w = layout.widths();
    let fields: [f64; DECODE_FIELDS] = [
        // Every Unix ms a layout encodes is below 2^53, so exact as f64.
        (layout.epoch() + f.timestamp) as f64,
        f64::from(f.datacenter_id),
        f64::from(f.worker_id),
        f64::from(f.clock_back),
        f64::from(f.sequence),
        // An epoch is a Unix ms, below 2^53.
        layout.epoch() as f64,
        f64::from(w.datacenter),
        f64::from(w.worker),
        f64::from(w.clock_back),
        f64::from(w.sequence),
        f64::from(count as u32),
        f64::from((count >> 32) as u32),
    ];
    let scratch = scratch?;
    // SAFETY: the buffer starts with DECODE_FIELDS f64s, 8-byte aligned, and its reference keeps it alive.
    unsafe { ptr::copy_nonoverlapping(fields.as_ptr(), scratch.data.cast::<f64>(), DECODE_FIELDS) };
    sync_scratch(env, scratch.fields)?;
    // SAFETY: `env` is the live env of this call.
    unsafe { decimal(env, id) }
}

unsafe extern "C" fn module_decode_fields(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: the data is the scratch `install_fast_paths` gave this function (see `scratch_of`).
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        decode_fields(env, counted_default_layout(env), unsafe { scratch_of(data.cast()) }, arg)
    });
    unsafe { finish(env, out.map(Raw)) }
}

/// The data of an instance's `decodeFields`: its layout, and the scratch of the module instance it was made in.
struct LayoutDecoder {
    layout: Layout,
    scratch: *const Scratch,
}

unsafe extern "C" fn layout_decode_fields(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }.and_then(|(arg, data)| {
        // SAFETY: the data is the `LayoutDecoder` `layout_decoder` gave this function, freed only once it is
        // collected; its scratch is this env's (see `scratch_of`).
        let decoder = unsafe { &*(data as *const LayoutDecoder) };
        decode_fields(env, Ok((0, decoder.layout)), unsafe { scratch_of(decoder.scratch) }, arg)
    });
    unsafe { finish(env, out.map(Raw)) }
}

/// The native half of an instance's `decode`: a function of one id that decodes it with `layout`.
pub(crate) fn layout_decoder(env: sys::napi_env, layout: Layout) -> Result<sys::napi_value> {
    owning_function(
        env,
        c"decodeFields",
        layout_decode_fields,
        Box::new(LayoutDecoder { layout, scratch: env_scratch(env) }),
    )
}

unsafe extern "C" fn drop_box<T>(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // SAFETY: `data` came from `Box::into_raw` of a `Box<T>` in `owning_function`, and this finalizer runs once.
    drop(unsafe { Box::from_raw(data as *mut T) });
}

/// A function named `name` that runs `cb` with `data`, which it owns until it is collected.
fn owning_function<T>(
    env: sys::napi_env,
    name: &std::ffi::CStr,
    cb: Callback,
    data: Box<T>,
) -> Result<sys::napi_value> {
    let data = Box::into_raw(data) as *mut std::ffi::c_void;
    match make_function(env, name, cb, data) {
        // SAFETY: `f` is the function just made; the finalizer frees `data` when it is collected.
        Ok(f) => {
            check(unsafe {
                sys::napi_add_finalizer(env, f, data, Some(drop_box::<T>), ptr::null_mut(), ptr::null_mut())
            })?;
            Ok(f)
        }
        Err(e) => {
            // SAFETY: the function was not made, so nothing else owns `data`.
            unsafe { drop_box::<T>(env, data, ptr::null_mut()) };
            Err(e)
        }
    }
}

unsafe extern "C" fn drop_generator(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // SAFETY: `data` came from `Arc::into_raw` in `install_instance`, and this finalizer runs once.
    drop(unsafe { Arc::from_raw(data as *const SnowflakeGenerator) });
}

/// A JS function named `name` that runs `cb` with `data`.
pub(crate) fn make_function(
    env: sys::napi_env,
    name: &std::ffi::CStr,
    cb: Callback,
    data: *mut std::ffi::c_void,
) -> Result<sys::napi_value> {
    let mut f = ptr::null_mut();
    let len = name.to_bytes().len() as isize;
    // SAFETY: `name` is NUL-terminated and `len` long; `cb` is a valid N-API callback.
    check(unsafe { sys::napi_create_function(env, name.as_ptr(), len, Some(cb), data, &mut f) })?;
    Ok(f)
}

/// The hot methods `index.js` gives a `Snowflake` as its own: the binding's functions, whose data is the generator.
pub(crate) const INSTANCE_METHODS: [(&std::ffi::CStr, Callback); 3] = [
    (c"nextId", instance_next_id),
    (c"nextIdString", instance_next_id_string),
    (c"timestampOf", instance_timestamp_of),
];

/// The batch halves `index.js` wraps into an instance's `nextIds` and `nextIdStrings`: a fill of a `BigInt64Array`
/// (or a count), a small batch into the scratch, and the joined decimal forms. The small batch's data is a
/// `ScratchBatch`, made in `install_instance`; the others', the generator.
pub(crate) const INSTANCE_BATCHES: [(&std::ffi::CStr, Option<Callback>); 3] =
    [(c"nextIds", Some(instance_next_ids)), (c"scratchIds", None), (c"joinedIds", Some(instance_joined_ids))];

/// A function named `name` running `cb` with a reference to `generator`, which it holds until it is collected.
fn generator_function(
    env: sys::napi_env,
    name: &std::ffi::CStr,
    cb: Callback,
    generator: &Arc<SnowflakeGenerator>,
) -> Result<sys::napi_value> {
    let data = Arc::into_raw(Arc::clone(generator)) as *mut std::ffi::c_void;
    match make_function(env, name, cb, data) {
        // SAFETY: `f` is the function just made; the finalizer frees `data` when it is collected.
        Ok(f) => {
            check(unsafe {
                sys::napi_add_finalizer(env, f, data, Some(drop_generator), ptr::null_mut(), ptr::null_mut())
            })?;
            Ok(f)
        }
        Err(e) => {
            // SAFETY: the function was not made, so nothing else owns `data`.
            unsafe { drop_generator(env, data, ptr::null_mut()) };
            Err(e)
        }
    }
}

/// A `Snowflake` core's hot methods and batch halves, in that order, as one array for `index.js`.
pub(crate) fn install_instance(env: sys::napi_env, generator: &Arc<SnowflakeGenerator>) -> Result<sys::napi_value> {
    let mut array = ptr::null_mut();
    // SAFETY: plain N-API calls on values of this call.
    check(unsafe {
        sys::napi_create_array_with_length(env, INSTANCE_METHODS.len() + INSTANCE_BATCHES.len(), &mut array)
    })?;
    let methods = INSTANCE_METHODS.into_iter().map(|(name, cb)| (name, Some(cb)));
    for (i, (name, cb)) in methods.chain(INSTANCE_BATCHES).enumerate() {
        let f = match cb {
            Some(cb) => generator_function(env, name, cb, generator)?,
            // The scratch is the one of the module instance whose `index.js` reads it: this call's env's.
            None => {
                let batch = ScratchBatch { generator: Arc::clone(generator), scratch: env_scratch(env) };
                owning_function(env, name, instance_scratch_ids, Box::new(batch))?
            }
        };
        check(unsafe { sys::napi_set_element(env, array, i as u32, f) })?;
    }
    Ok(array)
}

/// Replaces the module's hot exports with their raw callbacks once napi-rs has registered everything.
#[napi(module_exports)]
pub fn install_fast_paths(env: Env, exports: Object) -> Result<()> {
    let (env, value) = (env.raw(), exports.raw());
    let module: [(&std::ffi::CStr, Callback); 4] = [
        (c"nextId", module_next_id),
        (c"nextIdString", module_next_id_string),
        (c"nextIds", module_next_ids),
        (c"timestampOf", module_timestamp_of),
    ];
    for (name, cb) in module {
        let f = make_function(env, name, cb, ptr::null_mut())?;
        // A plain property, as napi-rs's own exports are.
        // SAFETY: `value` is the exports object and `name` is NUL-terminated.
        check(unsafe { sys::napi_set_named_property(env, value, name.as_ptr(), f) })?;
    }
    // The halves of `decode`, `nextIds` and `nextIdStrings`, and the scratch, for `index.js`, which does not export them.
    let f = make_function(env, c"joinedIds", module_joined_ids, ptr::null_mut())?;
    check(unsafe { sys::napi_set_named_property(env, value, c"__joinedIds".as_ptr(), f) })?;
    // On WASI (emnapi) each read of the scratch would need a copy out of wasm memory that costs more than building
    // the object natively: there `index.js` finds no scratch and uses the napi-rs `decode` and `nextIds`.
    if cfg!(target_os = "wasi") {
        make_instance(env, value, None)?;
        return Ok(());
    }
    // This module instance's scratch, which its functions that write it are given as their data.
    let (scratch, fields, ids) = make_scratch(env)?;
    make_instance(env, value, Some(scratch))?;
    let data = env_scratch(env).cast_mut().cast();
    let f = make_function(env, c"decodeFields", module_decode_fields, data)?;
    check(unsafe { sys::napi_set_named_property(env, value, c"__decodeFields".as_ptr(), f) })?;
    let f = make_function(env, c"scratchIds", module_scratch_ids, data)?;
    check(unsafe { sys::napi_set_named_property(env, value, c"__scratchIds".as_ptr(), f) })?;
    check(unsafe { sys::napi_set_named_property(env, value, c"__decodeScratch".as_ptr(), fields) })?;
    check(unsafe { sys::napi_set_named_property(env, value, c"__idScratch".as_ptr(), ids) })?;
    if let Some(view) = configured_view(env) {
        check(unsafe { sys::napi_set_named_property(env, value, c"__configured".as_ptr(), view) })?;
    }
    Ok(())
}
