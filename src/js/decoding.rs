//! The native halves of `decode` and `timestampOf`.
//!
//! napi-rs builds a returned object one property at a time, which costs many times the id itself, so the native
//! half of a decode writes the id's number fields into a small Float64Array this module made, and returns the id's
//! decimal string; `index.js` then builds the object as one literal, of one stable shape, from the two. It also
//! writes the layout it decoded with, so that `index.js` can split later `bigint` ids itself, with no native call at
//! all, for as long as that layout is current.

use std::ptr;

use napi::{sys, Result};

use crate::core::error::Result as CoreResult;
use crate::core::layout::Layout;

use super::errors::{check, raise};
use super::functions::{call_with_data, owning_function};
use super::module_instance::{env_scratch, scratch_of, sync_scratch, Scratch, DECODE_FIELDS};
use super::values::{decimal, read_id};

/// The native half of a decode: `arg` read as an id and split by `layout`; its number fields written to `scratch`,
/// its decimal form returned.
pub(crate) fn decode_fields(
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

/// The data of an instance's `decodeFields`: its layout, and the scratch of the module instance it was made in.
struct LayoutDecoder {
    layout: Layout,
    scratch: *const Scratch,
}

unsafe extern "C" fn layout_decode_fields(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: the data is the `LayoutDecoder` `layout_decoder` gave this function (see `call_with_data`); its scratch
    // is this env's (see `scratch_of`).
    let decode = |arg, d: &LayoutDecoder| decode_fields(env, Ok((0, d.layout)), unsafe { scratch_of(d.scratch) }, arg);
    unsafe { call_with_data(env, info, decode) }
}

/// The native half of an instance's `decode`: a function of one id that decodes it with `layout`.
pub(crate) fn layout_decoder(env: sys::napi_env, layout: Layout) -> Result<sys::napi_value> {
    let decoder = LayoutDecoder { layout, scratch: env_scratch(env) };
    owning_function(env, c"decodeFields", layout_decode_fields, Box::new(decoder))
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
