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
use super::functions::{call_with_data, data_of, finish, id_call, owning_function, Callback};
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

/// What each of a `Snowflake` core's functions keeps: its generator, and the scratch of the module instance it was
/// made in.
pub(crate) struct InstanceFunction {
    generator: Arc<SnowflakeGenerator>,
    scratch: *const Scratch,
}

/// An instance's `nextId` and `nextIdString`, over its generator (see `id_call`).
#[inline(always)]
unsafe fn instance_id(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    make: unsafe fn(sys::napi_env, u64) -> Result<sys::napi_value>,
) -> sys::napi_value {
    // SAFETY: the data is the `InstanceFunction` `install_instance` gave this function (see `call_with_data`).
    let Some(f) = (unsafe { data_of::<InstanceFunction>(env, info) }) else {
        return unsafe { finish::<Raw>(env, Err(napi::Error::from_status(napi::Status::GenericFailure))) };
    };
    unsafe { id_call(env, f.generator.generator.get(), || f.generator.get(env), make) }
}

unsafe extern "C" fn instance_next_id(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { instance_id(env, info, bigint) }
}

unsafe extern "C" fn instance_next_id_string(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { instance_id(env, info, decimal) }
}

unsafe extern "C" fn instance_next_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { call_with_data::<InstanceFunction>(env, info, |arg, f| next_ids_impl(env, || f.generator.get(env), arg)) }
}

unsafe extern "C" fn instance_joined_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe {
        call_with_data::<InstanceFunction>(env, info, |arg, f| joined_ids_impl(env, || f.generator.get(env), arg))
    }
}

unsafe extern "C" fn instance_timestamp_of(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { call_with_data::<InstanceFunction>(env, info, |arg, f| timestamp_impl(env, Ok(f.generator.layout), arg)) }
}

unsafe extern "C" fn instance_scratch_ids(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let call = |arg, f: &InstanceFunction| {
        let generator = || match f.generator.generator.get() {
            Some(g) => Ok(g),
            None => f.generator.get(env),
        };
        // SAFETY: the scratch is this env's (see `scratch_of`).
        scratch_ids_impl(env, generator, unsafe { scratch_of(f.scratch) }, arg)
    };
    unsafe { call_with_data::<InstanceFunction>(env, info, call) }
}

/// The hot methods `index.js` gives a `Snowflake` as its own, then the batch halves it wraps into the instance's
/// `nextIds` and `nextIdStrings`: a fill of a `BigInt64Array` (or a count), a small batch into the scratch, and the
/// joined decimal forms.
const INSTANCE_FUNCTIONS: [(&CStr, Callback); 6] = [
    (c"nextId", instance_next_id),
    (c"nextIdString", instance_next_id_string),
    (c"timestampOf", instance_timestamp_of),
    (c"nextIds", instance_next_ids),
    (c"scratchIds", instance_scratch_ids),
    (c"joinedIds", instance_joined_ids),
];

/// A `Snowflake` core's hot methods and batch halves, in that order, as one array for `index.js`: functions whose
/// scratch is this call's env's (the one its `index.js` reads).
pub(crate) fn install_instance(env: sys::napi_env, generator: &Arc<SnowflakeGenerator>) -> Result<sys::napi_value> {
    let mut array = ptr::null_mut();
    // SAFETY: plain N-API calls on values of this call.
    check(unsafe { sys::napi_create_array_with_length(env, INSTANCE_FUNCTIONS.len(), &mut array) })?;
    let scratch = env_scratch(env);
    for (i, (name, cb)) in INSTANCE_FUNCTIONS.into_iter().enumerate() {
        let data = InstanceFunction { generator: Arc::clone(generator), scratch };
        let f = owning_function(env, name, cb, Box::new(data))?;
        check(unsafe { sys::napi_set_element(env, array, i as u32, f) })?;
    }
    Ok(array)
}
