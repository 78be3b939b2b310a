//! The `Snowflake` class as napi-rs makes it: the core of a `Snowflake` (see `snowflake_core`), whose class
//! semantics `index.js` adds. Its hot methods are the core's plain callbacks (`__install`, `__decoder`); the rest
//! are its napi-rs methods.

use std::sync::Arc;

use napi::bindgen_prelude::new_instance;
use napi::{Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::{time_arg, OptionValue};
use crate::core::generator::Snapshot;
use crate::core::identity;

use super::decoding::layout_decoder;
use super::default::{resolve, warn_once};
use super::env::JsEnv;
use super::errors::raise;
use super::module_instance::{cache_core, cached_core, snowflake_class};
use super::options::read_options;
use super::report::{host_lease, report, stats_of, SnowidConfig, SnowidStats};
use super::snowflake_core::{install_instance, SnowflakeGenerator};
use super::values::{read_time, IdBigInt, Raw};

// The native core of a `Snowflake`, made by `snowflake_core`; index.d.ts documents the class, and declares its
// constructor and its methods made from plain callbacks.
#[napi]
pub struct Snowflake {
    core: Arc<SnowflakeGenerator>,
}

#[napi]
impl Snowflake {
    /// For `index.js`, on the first method access of a `Snowflake` on this core: its hot methods
    /// and batch halves (see `snowflake_core::install_instance`), in that order, as one array.
    #[napi(skip_typescript, js_name = "__install")]
    pub fn install(&self, env: Env) -> Result<Raw> {
        install_instance(env.raw(), &self.core).map(Raw)
    }

    /// For `index.js`: the native half of this instance's fast `decode` (see `decoding::decode_fields`).
    #[napi(skip_typescript, js_name = "__decoder")]
    pub fn decoder(&self, env: Env) -> Result<Raw> {
        layout_decoder(env.raw(), self.core.layout).map(Raw)
    }

    /// The smallest id any generator with this layout and epoch can make in the ms `time`.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as the module's `minIdAt()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn min_id_at(
        &self,
        env: Env,
        #[napi(ts_arg_type = "Date | number | string")] time: Unknown,
    ) -> Result<IdBigInt> {
        let at = read_time(env.raw(), time.raw(), "time")?;
        Ok(IdBigInt(self.core.layout.min_id_at(at, "time")))
    }

    /// The largest id any generator with this layout and epoch can make in the ms `time`.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as the module's `minIdAt()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn max_id_at(
        &self,
        env: Env,
        #[napi(ts_arg_type = "Date | number | string")] time: Unknown,
    ) -> Result<IdBigInt> {
        let at = read_time(env.raw(), time.raw(), "time")?;
        Ok(IdBigInt(self.core.layout.max_id_at(at, "time")))
    }

    /// This generator's effective configuration and where each value came from. When the worker id comes from the
    /// host lease (or may move on from a taken slot), it starts the generator (taking the slot) to report it.
    /// @throws {Error} `ERR_SNOWID_IDENTITY_REQUIRED` as the first `nextId()` does; and as it does, when it starts
    /// the generator.
    #[napi]
    pub fn config(&self, env: Env) -> Result<SnowidConfig> {
        let warning = identity::check(&self.core.resolved).map_err(|e| raise(env.raw(), &e))?;
        warn_once(env.raw(), warning);
        let needs_slot = self.core.config.lock().worker_id_needs_lease();
        if needs_slot {
            self.core.get(env.raw()).map_err(|e| raise(env.raw(), &e))?;
        }
        let environment = identity::environment(&self.core.resolved, &JsEnv::new(env.raw()));
        Ok(report(&self.core.config.lock(), environment))
    }

    /// The current lead and counters of this generator's state (shared with every generator of its identity), and
    /// the host lease that guards it; all 0, and `hostLease` null, before its first id.
    #[napi]
    pub fn stats(&self) -> SnowidStats {
        match self.core.generator.get() {
            Some(g) => stats_of(g.snapshot(), host_lease(g, &self.core.resolved, &self.core.config.lock())),
            None => stats_of(Snapshot { lead_ms: 0, clock_back: 0, stats: Default::default() }, None),
        }
    }
}

/// For `index.js`: the native core of a new `Snowflake`, the object its methods run on. `options` are read and
/// resolved over the environment as the constructor does (so a bad value throws the same coded error each time).
/// A core of the same resolved configuration that this module instance made and that a `Snowflake` still uses is
/// returned as it is; else a new one is made. So `Snowflake`s made again and again, of any number of
/// configurations, cost no native memory and no finalizer of their own. Sharing a core changes nothing a
/// `Snowflake` does: generators of one identity share one state anyway (`core::registry`), and a core holds only
/// that configuration and its started generator.
#[napi(skip_typescript, js_name = "__snowflakeCore")]
pub fn snowflake_core(env: Env, options: Option<Unknown>) -> Result<Raw> {
    let raw = env.raw();
    let opts = read_options(raw, options)?;
    let config = resolve(&opts, &JsEnv::new(raw)).map_err(|e| raise(raw, &e))?;
    if let Some(core) = cached_core(raw, &config)? {
        return Ok(Raw(core));
    }
    // Made with this module instance's own class: napi-rs's `into_instance` would take the class of the module
    // instance loaded last on this thread, whose methods refuse it here ("Illegal invocation").
    let class = snowflake_class(raw)?;
    let wrapped = Box::into_raw(Box::new(Snowflake { core: Arc::new(SnowflakeGenerator::new(config.clone())) }));
    // SAFETY: `wrapped` is a new `Snowflake`, which `new_instance` wraps in an instance of `class` (or frees).
    let core = unsafe { new_instance::<Snowflake>(raw, wrapped.cast(), class) }?;
    cache_core(raw, config, core)?;
    Ok(Raw(core))
}

/// For the store leases (`snowid/redis`, `snowid/postgres`): sets `target`'s lease deadline (Unix ms; no id from
/// then on, 0 stops at once) and takes in the mark an earlier holder left (Unix ms; ids at or before it are never
/// issued). Returns the Unix ms of the latest id issued under any clockBack value, the lowest mark a release may
/// leave.
///
/// A function of the binding, not a method: `index.js` does not export it, so user code cannot reach it
/// through `snowid` or a `Snowflake`.
#[napi(skip_typescript)]
pub fn fence_snowflake(env: Env, target: &Snowflake, deadline: f64, mark: Option<f64>) -> Result<f64> {
    let ms = |n: f64, what: &str| time_arg(&OptionValue::Number(n), what).map_err(|e| raise(env.raw(), &e));
    let deadline = ms(deadline, "deadline")?;
    let generator = target.core.get(env.raw()).map_err(|e| raise(env.raw(), &e))?;
    if let Some(mark) = mark {
        generator.absorb_mark(ms(mark, "mark")?);
    }
    generator.set_deadline(deadline);
    Ok(generator.highest_ms() as f64)
}
