//! The `SnowflakeLayout` class: reads ids of a layout and epoch (snowid's own, or another system's such as Discord's
//! or Instagram's) without a generator, a worker id, a lease or the environment.

use napi::{Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::Config;
use crate::core::layout::Layout;
use crate::core::time::{Clock, SystemClock};

use super::decoding::layout_decoder;
use super::errors::raise;
use super::options::read_layout_options;
use super::values::{read_id, read_time, IdBigInt, Raw};

/// A layout and epoch, as a `SnowflakeLayout` reports them.
#[napi(object)]
pub struct LayoutSpec {
    /// The epoch in Unix ms.
    pub epoch: f64,
    pub datacenter_bits: u32,
    pub worker_bits: u32,
    pub clock_back_bits: u32,
    pub sequence_bits: u32,
    /// What is left of 63 bits for the timestamp.
    pub timestamp_bits: u32,
    /// The last Unix ms the layout encodes.
    pub expires_at: f64,
}

// The native core of a `SnowflakeLayout`; index.d.ts documents the class, and declares its constructor and its
// `decode` (made from `__decoder`).
#[napi]
pub struct SnowflakeLayout {
    layout: Layout,
}

#[napi]
impl SnowflakeLayout {
    // Declared in index.d.ts, with the class.
    #[napi(constructor)]
    pub fn new(env: Env, #[napi(ts_arg_type = "LayoutOptions")] options: Option<Unknown>) -> Result<Self> {
        let raw = env.raw();
        let opts = read_layout_options(raw, options)?;
        let no_env = |_: &str| None;
        let layout = Config::resolve_layout(&opts, &no_env, SystemClock.now_ms()).map_err(|e| raise(raw, &e))?;
        Ok(SnowflakeLayout { layout })
    }

    /// For `index.js`: the native half of this instance's fast `decode` (see `decoding::decode_fields`).
    #[napi(skip_typescript, js_name = "__decoder")]
    pub fn decoder(&self, env: Env) -> Result<Raw> {
        layout_decoder(env.raw(), self.layout).map(Raw)
    }

    /// The Unix ms of an id's timestamp.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for input that is not a valid id.
    #[napi]
    pub fn timestamp_of(&self, env: Env, #[napi(ts_arg_type = "bigint | string | number")] id: Unknown) -> Result<f64> {
        let id = read_id(env.raw(), id.raw(), "id")?;
        Ok(self.layout.unix_ms_of(id) as f64)
    }

    /// The smallest id of this layout in the ms `time`.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as the module's `minIdAt()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn min_id_at(
        &self,
        env: Env,
        #[napi(ts_arg_type = "Date | number | string")] time: Unknown,
    ) -> Result<IdBigInt> {
        let at = read_time(env.raw(), time.raw(), "time")?;
        Ok(IdBigInt(self.layout.min_id_at(at, "time")))
    }

    /// The largest id of this layout in the ms `time`.
    /// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` as the module's `minIdAt()` does.
    #[napi(ts_return_type = "bigint")]
    pub fn max_id_at(
        &self,
        env: Env,
        #[napi(ts_arg_type = "Date | number | string")] time: Unknown,
    ) -> Result<IdBigInt> {
        let at = read_time(env.raw(), time.raw(), "time")?;
        Ok(IdBigInt(self.layout.max_id_at(at, "time")))
    }

    /// The widths, the epoch, and when the layout runs out.
    #[napi]
    pub fn layout(&self) -> LayoutSpec {
        let l = &self.layout;
        let w = l.widths();
        LayoutSpec {
            epoch: l.epoch() as f64,
            datacenter_bits: w.datacenter,
            worker_bits: w.worker,
            clock_back_bits: w.clock_back,
            sequence_bits: w.sequence,
            timestamp_bits: l.timestamp_bits(),
            expires_at: l.expires_at() as f64,
        }
    }
}
