//! What the binding returns about ids and generators: decoded fields, effective configuration and counters.

use napi_derive::napi;

use crate::core::config::{Config, Source};
use crate::core::generator::{ClockBackPolicy, Snapshot};
use crate::core::replicas::Environment;
use crate::core::statefulset::STATEFULSET;

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

/// Where each configured value came from.
#[napi(object)]
pub struct ConfigSources {
    pub datacenter_id: ConfigSource,
    pub worker_id: ConfigSource,
    pub clock_back: ConfigSource,
    pub epoch: ConfigSource,
    pub datacenter_bits: ConfigSource,
    pub worker_bits: ConfigSource,
    pub clock_back_bits: ConfigSource,
    pub sequence_bits: ConfigSource,
    pub on_clock_back: ConfigSource,
    pub max_wait_ms: ConfigSource,
    pub max_lead_ms: ConfigSource,
    pub lease: ConfigSource,
    pub lease_dir: ConfigSource,
    pub lease_namespace: ConfigSource,
    pub worker_id_if_taken: ConfigSource,
    pub worker_id_from: ConfigSource,
    pub single_instance: ConfigSource,
}

/// The effective configuration of a generator.
#[napi(object, use_nullable = true)]
pub struct SnowidConfig {
    pub datacenter_id: u32,
    pub worker_id: u32,
    /// The starting clock-back value.
    pub clock_back: u32,
    /// The epoch in Unix ms.
    pub epoch: f64,
    pub datacenter_bits: u32,
    pub worker_bits: u32,
    pub clock_back_bits: u32,
    pub sequence_bits: u32,
    /// What is left of 63 bits for the timestamp.
    pub timestamp_bits: u32,
    pub on_clock_back: OnClockBack,
    pub max_wait_ms: u32,
    pub max_lead_ms: u32,
    /// Whether the (datacenterId, workerId) slot is leased on this host.
    pub lease: bool,
    pub lease_dir: String,
    /// The lease namespace (`SNOWID_LEASE_NAMESPACE`), or `null` for the host's slots.
    pub lease_namespace: Option<String>,
    /// What a worker id given as a number does when another process on this host holds its slot: `'fail'`
    /// (`ERR_SNOWID_WORKER_ID_IN_USE`) or `'next'` (the automatic lease from that slot on).
    #[napi(ts_type = "'fail' | 'next'")]
    pub worker_id_if_taken: String,
    /// `'statefulset'` when, with no worker id given as a number, the worker id is the ordinal of a StatefulSet
    /// pod's host name; else `null`.
    #[napi(ts_type = "'statefulset'")]
    pub worker_id_from: Option<String>,
    /// Whether this is declared the only instance (`SNOWID_SINGLE_INSTANCE=true`), so that an identity no one chose
    /// is not refused where replicas are the norm.
    pub single_instance: bool,
    /// Where this process runs, as far as replicas go: an orchestrator where replicas are the norm and an identity
    /// no one chose is refused (`ERR_SNOWID_IDENTITY_REQUIRED`), `'container'` for a plain Docker or Podman container
    /// (where it is warned of), or `null` for none known. See docs/guarantees.md for how each is known.
    #[napi(ts_type = "'kubernetes' | 'ecs' | 'cloudrun' | 'nomad' | 'heroku' | 'fly' | 'lambda' | 'containerapps' | \
                   'appservice' | 'azurefunctions' | 'appengine' | 'cloudfunctions' | 'render' | 'railway' | 'vercel' | \
                   'netlify' | 'cloudfoundry' | 'container'")]
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
        datacenter_id: c.datacenter_id.value,
        worker_id: c.worker_id.value,
        clock_back: c.clock_back.value,
        epoch: c.epoch.value as f64,
        datacenter_bits: c.datacenter_bits.value,
        worker_bits: c.worker_bits.value,
        clock_back_bits: c.clock_back_bits.value,
        sequence_bits: c.sequence_bits.value,
        timestamp_bits: c.layout.timestamp_bits(),
        on_clock_back: c.on_clock_back.value.into(),
        max_wait_ms: c.max_wait_ms.value as u32,
        max_lead_ms: c.max_lead_ms.value as u32,
        lease: c.lease.value,
        lease_dir: c.lease_dir.value.to_string_lossy().into_owned(),
        lease_namespace: c.lease_namespace.value.clone(),
        worker_id_if_taken: c.worker_id_if_taken.value.as_str().to_string(),
        worker_id_from: c.worker_id_from_statefulset.value.then(|| STATEFULSET.to_string()),
        single_instance: c.single_instance.value,
        environment: environment.map(|e| e.as_str().to_string()),
        max_ids_per_ms: c.max_ids_per_ms() as u32,
        expires_at: c.layout.expires_at() as f64,
        sources: ConfigSources {
            datacenter_id: c.datacenter_id.source.into(),
            worker_id: c.worker_id.source.into(),
            clock_back: c.clock_back.source.into(),
            epoch: c.epoch.source.into(),
            datacenter_bits: c.datacenter_bits.source.into(),
            worker_bits: c.worker_bits.source.into(),
            clock_back_bits: c.clock_back_bits.source.into(),
            sequence_bits: c.sequence_bits.source.into(),
            on_clock_back: c.on_clock_back.source.into(),
            max_wait_ms: c.max_wait_ms.source.into(),
            max_lead_ms: c.max_lead_ms.source.into(),
            lease: c.lease.source.into(),
            lease_dir: c.lease_dir.source.into(),
            lease_namespace: c.lease_namespace.source.into(),
            worker_id_if_taken: c.worker_id_if_taken.source.into(),
            worker_id_from: c.worker_id_from_statefulset.source.into(),
            single_instance: c.single_instance.source.into(),
        },
    }
}

/// Counters and the current lead of a generator's state.
#[napi(object)]
pub struct SnowidStats {
    /// How far the last id's timestamp is ahead of the clock, in ms (borrowed time; 0 when none).
    pub lead_ms: f64,
    /// The clockBack value in use now.
    pub clock_back: u32,
    /// Steps back of the clock that moved clockBack to a new value.
    pub clock_back_events: f64,
    /// Calls that had to wait: for the next ms, for the clock to catch up, or for an earlier holder's mark.
    pub waits: f64,
    /// High-water marks written to the lease file.
    pub mark_writes: f64,
}

pub(crate) fn stats_of(s: Snapshot) -> SnowidStats {
    SnowidStats {
        lead_ms: s.lead_ms as f64,
        clock_back: s.clock_back,
        clock_back_events: s.stats.clock_back_events as f64,
        waits: s.stats.waits as f64,
        mark_writes: s.stats.mark_writes as f64,
    }
}
