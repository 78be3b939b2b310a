//! What the binding returns about ids and generators: decoded fields, effective configuration and counters.

use std::path::PathBuf;

use napi_derive::napi;

use crate::core::config::{option_table, Config, IfTaken, Source, WorkerIdFrom};
use crate::core::generator::{ClockBackPolicy, Generator, Snapshot};
use crate::core::replicas::Environment;
use crate::core::time::SystemClock;

/// The fields of an id. Every value is a plain number or string, so the object is safe for `JSON.stringify`.
#[napi(object, object_from_js = false)]
#[allow(dead_code)] // Declares the typings only: `index.js` builds the object from what `decodeFields` writes.
pub struct DecodedId {
    /// The id in decimal.
    pub id: String,
    /// When the id was made, in Unix ms (the layout's epoch plus the timestamp field).
    pub timestamp: f64,
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The clock-back counter: bumped each time the generator's clock moved backwards.
    pub clock_back: u32,
    /// The counter within the ms.
    pub sequence: u32,
}

/// Where a configured value came from: an option, an environment variable, a StatefulSet pod's host name
/// (`SNOWID_WORKER_ID_FROM=statefulset`; worker id only), an automatic lease on this host (the worker id, and the
/// datacenter id when neither is configured), or the default.
#[napi(string_enum = "lowercase")]
pub enum ConfigSource {
    Option,
    Env,
    Lease,
    Statefulset,
    Default,
}

impl From<Source> for ConfigSource {
    fn from(s: Source) -> Self {
        match s {
            Source::Option => ConfigSource::Option,
            Source::Env => ConfigSource::Env,
            Source::Lease => ConfigSource::Lease,
            Source::StatefulSet => ConfigSource::Statefulset,
            Source::Default => ConfigSource::Default,
        }
    }
}

/// What the generator does when the clock reads earlier than the last id's timestamp.
/// `'bits'` adds 1 to clockBack and carries on, and throws once clockBack would come back round to its starting
/// value; `'wait'` blocks until the clock catches up, for at most `maxWaitMs`; `'throw'` throws at once.
#[napi(string_enum = "lowercase")]
pub enum OnClockBack {
    Bits,
    Wait,
    Throw,
}

impl From<ClockBackPolicy> for OnClockBack {
    fn from(p: ClockBackPolicy) -> Self {
        match p {
            ClockBackPolicy::Bits => OnClockBack::Bits,
            ClockBackPolicy::Wait => OnClockBack::Wait,
            ClockBackPolicy::Throw => OnClockBack::Throw,
        }
    }
}

/// An option's value as `config()` reports it: each type of [`Config`]'s fields to what JS sees.
pub trait Report {
    type Js;
    fn report(&self) -> Self::Js;
}

impl Report for u32 {
    type Js = u32;
    fn report(&self) -> u32 {
        *self
    }
}

impl Report for u64 {
    type Js = f64;
    fn report(&self) -> f64 {
        // Every u64 option (an epoch, a number of ms) is below 2^53, so the number is exact.
        *self as f64
    }
}

impl Report for bool {
    type Js = bool;
    fn report(&self) -> bool {
        *self
    }
}

impl Report for String {
    type Js = String;
    fn report(&self) -> String {
        self.clone()
    }
}

impl Report for PathBuf {
    type Js = String;
    fn report(&self) -> String {
        self.to_string_lossy().into_owned()
    }
}

impl Report for ClockBackPolicy {
    type Js = OnClockBack;
    fn report(&self) -> OnClockBack {
        (*self).into()
    }
}

impl Report for IfTaken {
    type Js = String;
    fn report(&self) -> String {
        self.as_str().to_string()
    }
}

impl Report for WorkerIdFrom {
    type Js = String;
    fn report(&self) -> String {
        self.as_str().to_string()
    }
}

impl<T: Report> Report for Option<T> {
    type Js = Option<T::Js>;
    fn report(&self) -> Option<T::Js> {
        self.as_ref().map(Report::report)
    }
}

/// Makes `config()`'s report from the table of options: [`SnowidConfig`] with a member per option, documented
/// as the table says, and [`ConfigSources`].
macro_rules! report {
    ($( $opt:ident $field:ident $name:tt [$($var:expr),+] $ty:ty, layout $layout:tt, max $max:expr,
        option $ts:tt, config $config_ts:tt, doc $doc:tt, env $env:tt, default $default:tt; )+) => {
        /// Where each configured value came from.
        #[napi(object)]
        pub struct ConfigSources {
            $( pub $field: ConfigSource, )+
        }

        /// The effective configuration of a generator: the value of each option (see `SnowflakeOptions`), and what
        /// follows from them.
        #[napi(object, use_nullable = true)]
        pub struct SnowidConfig {
            $(
                #[napi(ts_type = $config_ts)]
                pub $field: <$ty as Report>::Js,
            )+
            /// What is left of 63 bits for the timestamp.
            pub timestamp_bits: u32,
            /// Where this process runs, as far as replicas go: an orchestrator where replicas are the norm and an
            /// identity no one chose is refused (`ERR_SNOWID_IDENTITY_REQUIRED`), `'container'` for a plain Docker or
            /// Podman container (where it is warned of), or `null` for none known. See docs/guarantees.md for how
            /// each is known.
            #[napi(ts_type = "'kubernetes' | 'ecs' | 'cloudrun' | 'nomad' | 'heroku' | 'fly' | 'lambda' | 'containerapps' | \
                           'appservice' | 'azurefunctions' | 'appengine' | 'cloudfunctions' | 'render' | 'railway' | \
                           'vercel' | 'netlify' | 'cloudfoundry' | 'container'")]
            pub environment: Option<String>,
            /// The most ids one generator issues in one ms: 2^sequenceBits.
            pub max_ids_per_ms: u32,
            /// The last Unix ms the layout can encode. Generation throws `ERR_SNOWID_TIME_EXHAUSTED` after it.
            pub expires_at: f64,
            /// Where each value came from.
            pub sources: ConfigSources,
        }

        /// `c` as `config()` reports it, in `environment` (see `replicas::environment`).
        pub(crate) fn report(c: &Config, environment: Option<Environment>) -> SnowidConfig {
            SnowidConfig {
                $( $field: c.$field.value.report(), )+
                timestamp_bits: c.layout.timestamp_bits(),
                environment: environment.map(|e| e.as_str().to_string()),
                max_ids_per_ms: c.max_ids_per_ms() as u32,
                expires_at: c.layout.expires_at() as f64,
                sources: ConfigSources { $( $field: c.$field.source.into(), )+ },
            }
        }
    };
}

option_table!(report);

/// Counters and the current lead of a generator's state, and the host lease that guards it.
#[napi(object, use_nullable = true)]
pub struct SnowidStats {
    /// How far the last id's timestamp is ahead of the clock, in ms (borrowed time; 0 when none).
    pub lead_ms: f64,
    /// The clockBack value in use now.
    pub clock_back: u32,
    /// Steps back of the clock that moved clockBack to a new value.
    pub clock_back_events: f64,
    /// Calls refused with `ERR_SNOWID_CLOCK_BACKWARDS` for a step back of the clock: `onClockBack: 'throw'`, a
    /// `'wait'` longer than `maxWaitMs`, or every clockBack value used.
    pub clock_back_refusals: f64,
    /// Calls that had to wait, for any reason: `sequenceWaits + markWaits + clockWaits`.
    pub waits: f64,
    /// Calls that waited for the next ms because the sequence of the current one was used up at the edge of the lead.
    pub sequence_waits: f64,
    /// Calls that waited for the clock to pass the mark an earlier holder of the slot left.
    pub mark_waits: f64,
    /// Calls that waited for the clock to catch up after it stepped back (`onClockBack: 'wait'`).
    pub clock_waits: f64,
    /// Ms the sequence waits took in all, by the generator's clock (whole ms: a wait within one ms counts 0).
    pub sequence_wait_ms: f64,
    /// Ms the mark waits took in all, by the generator's clock.
    pub mark_wait_ms: f64,
    /// Ms the clock waits took in all, by the generator's clock.
    pub clock_wait_ms: f64,
    /// High-water marks written to the lease file.
    pub mark_writes: f64,
    /// The host lease that guards this generator's ids, once its first id has started it on one; `null` with none
    /// (`lease: false`, a store lease's generator, or before the first id).
    pub host_lease: Option<HostLeaseStats>,
}

/// The host lease of a generator's slot (`stats().hostLease`).
#[napi(object, use_nullable = true)]
pub struct HostLeaseStats {
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The configured worker id, when another live process held it and `workerIdIfTaken: 'next'` (or
    /// `SNOWID_WORKER_ID_IF_TAKEN=next`) moved on to `workerId`; `null` otherwise.
    pub requested_worker_id: Option<u32>,
    /// The message of the `ERR_SNOWID_LEASE_LOST` the lease found, once it lost the slot (for good); `null` while it
    /// holds it.
    pub lost: Option<String>,
}

/// The host lease of `generator`, started from `resolved` as `started` (with its automatic worker id filled in):
/// `None` when no lease guards it.
pub(crate) fn host_lease(
    generator: &Generator<SystemClock>,
    resolved: &Config,
    started: &Config,
) -> Option<HostLeaseStats> {
    let lost = generator.fence_lost()?;
    let moved = resolved.worker_id.source != Source::Lease && started.worker_id.source == Source::Lease;
    Some(HostLeaseStats {
        datacenter_id: started.datacenter_id.value,
        worker_id: started.worker_id.value,
        requested_worker_id: moved.then_some(resolved.worker_id.value),
        lost: lost.map(|e| e.message().to_string()),
    })
}

/// `stats()` of a generator whose state is as `s`, guarded by the host lease `host_lease`.
pub(crate) fn stats_of(s: Snapshot, host_lease: Option<HostLeaseStats>) -> SnowidStats {
    SnowidStats {
        lead_ms: s.lead_ms as f64,
        clock_back: s.clock_back,
        clock_back_events: s.stats.clock_back_events as f64,
        clock_back_refusals: s.stats.clock_back_refusals as f64,
        waits: s.stats.waits as f64,
        sequence_waits: s.stats.sequence_waits as f64,
        mark_waits: s.stats.mark_waits as f64,
        clock_waits: s.stats.clock_waits as f64,
        sequence_wait_ms: s.stats.sequence_wait_ms as f64,
        mark_wait_ms: s.stats.mark_wait_ms as f64,
        clock_wait_ms: s.stats.clock_wait_ms as f64,
        mark_writes: s.stats.mark_writes as f64,
        host_lease,
    }
}
