//! A `Snowflake`'s core: its configuration and its generator, started by its first id, and its hot methods, made
//! from plain N-API callbacks whose data is the core's generator.

use std::ffi::CStr;
use std::ptr;
use std::sync::{Arc, OnceLock};

use napi::{sys, Result};
use parking_lot::Mutex;

use crate::core::config::Config;
use crate::core::error::Result as CoreResult;
use crate::core::generator::Generator;
use crate::core::identity;
use crate::core::layout::Layout;
use crate::core::time::SystemClock;

use super::batches::{joined_ids_impl, next_ids_impl, scratch_ids_impl};
use super::decoding::timestamp_impl;
use super::default::warn_once;
use super::errors::check;
use super::functions::{call_info, finish, id_value, owning_function, sharing_function, Callback};
use super::module_instance::{env_scratch, scratch_of, Scratch};
use super::values::{bigint, decimal, Raw};

/// A `Snowflake`'s generator, started by its first id: an object used only to read ids takes no host lease.
pub(crate) struct SnowflakeGenerator {
    /// The layout, known from the start: reading ids needs nothing else.
    pub(crate) layout: Layout,
    /// The configuration as it was resolved, before the generator started: what `snowflake_core` matches.
    pub(crate) resolved: Config,
    /// The configuration; an automatic worker id is filled in when the generator starts.
    pub(crate) config: Mutex<Config>,
    pub(crate) generator: OnceLock<Generator<SystemClock>>,
}

impl SnowflakeGenerator {
    pub(crate) fn new(config: Config) -> SnowflakeGenerator {
        SnowflakeGenerator {
            layout: config.layout,
            resolved: config.clone(),
            config: Mutex::new(config),
            generator: OnceLock::new(),
        }
    }

    /// The generator, started (its host lease taken) on the first call, on the JS thread of `env`.
    #[inline]
    pub(crate) fn get(&self, env: sys::napi_env) -> CoreResult<&Generator<SystemClock>> {
        match self.generator.get() {
            Some(g) => Ok(g),
            None => self.start(env),
        }
    }

    #[cold]
    #[inline(never)]
    fn start(&self, env: sys::napi_env) -> CoreResult<&Generator<SystemClock>> {
        let mut config = self.config.lock();
        if let Some(g) = self.generator.get() {
            return Ok(g);
        }
        let mut started = config.clone();
        let (generator, warning) = identity::generator(&mut started)?;
        *config = started;
        let generator = self.generator.get_or_init(|| generator);
        drop(config);
        warn_once(env, warning);
        Ok(generator)
    }
}

/// The generator behind an instance callback's data.
///
/// # Safety
/// `data` is the pointer `install_instance` gave the function, which its finalizer frees only once the function
/// is unreachable, so it is alive while the function runs.
pub(crate) unsafe fn instance_generator<'a>(data: *mut std::ffi::c_void) -> &'a SnowflakeGenerator {
    unsafe { &*(data as *const SnowflakeGenerator) }
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

unsafe extern "C" fn instance_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let out = unsafe { call_info(env, info) }
        .and_then(|(arg, data)| timestamp_impl(env, Ok(unsafe { instance_generator(data) }.layout), arg));
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

/// The hot methods `index.js` gives a `Snowflake` as its own: the binding's functions, whose data is the generator.
const INSTANCE_METHODS: [(&CStr, Callback); 3] = [
    (c"nextId", instance_next_id),
    (c"nextIdString", instance_next_id_string),
    (c"timestampOf", instance_timestamp_of),
];

/// The batch halves `index.js` wraps into an instance's `nextIds` and `nextIdStrings`: a fill of a `BigInt64Array`
/// (or a count), a small batch into the scratch, and the joined decimal forms. The small batch's data is a
/// `ScratchBatch`, made in `install_instance`; the others', the generator.
const INSTANCE_BATCHES: [(&CStr, Option<Callback>); 3] =
    [(c"nextIds", Some(instance_next_ids)), (c"scratchIds", None), (c"joinedIds", Some(instance_joined_ids))];

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
            Some(cb) => sharing_function(env, name, cb, generator)?,
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
