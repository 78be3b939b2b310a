//! A resolved configuration: each value and where it came from.

use std::path::PathBuf;

use super::super::generator::{ClockBackPolicy, Settings};
use super::super::layout::Layout;
use super::super::replicas;
use super::super::statefulset;
use super::options::option_table;

/// Where a configured value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Option,
    Env,
    /// An automatic lease of a free slot on this host: the worker id, and the datacenter id when neither is
    /// configured.
    Lease,
    /// The ordinal of a StatefulSet pod's host name, by `SNOWID_WORKER_ID_FROM=statefulset` (worker id only).
    StatefulSet,
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Option => "option",
            Source::Env => "env",
            Source::Lease => "lease",
            Source::StatefulSet => "statefulset",
            Source::Default => "default",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// What a worker id given as a number does when another live process on this host holds its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IfTaken {
    /// Fail with `ERR_SNOWID_WORKER_ID_IN_USE`.
    #[default]
    Fail,
    /// Give way to the automatic lease, from that slot on.
    Next,
}

impl IfTaken {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "fail" => Some(IfTaken::Fail),
            "next" => Some(IfTaken::Next),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IfTaken::Fail => "fail",
            IfTaken::Next => "next",
        }
    }

    /// Whether a worker id from `worker_id`'s source moves on from a taken slot under this setting, from
    /// `self_source`. A setting in the environment covers a worker id from the environment only: `snowid/cluster`
    /// sets both variables for its workers, and a `workerId` option given in such a worker keeps failing on a
    /// taken slot unless `workerIdIfTaken: 'next'` is given with it. A setting given as an option covers both.
    pub fn moves_on(setting: Sourced<IfTaken>, worker_id: Source) -> bool {
        setting.value == IfTaken::Next
            && match worker_id {
                Source::Env => true,
                Source::Option => setting.source == Source::Option,
                Source::Lease | Source::StatefulSet | Source::Default => false,
            }
    }
}

/// Where the worker id is read from when it is not given as a number (`workerIdFrom`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkerIdFrom {
    /// The ordinal of a StatefulSet pod's host name.
    StatefulSet,
}

impl WorkerIdFrom {
    pub fn parse(text: &str) -> Option<Self> {
        (text == statefulset::STATEFULSET).then_some(WorkerIdFrom::StatefulSet)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerIdFrom::StatefulSet => statefulset::STATEFULSET,
        }
    }
}

/// Makes [`Config`] from the table of options: one field per option, named and typed as the table says.
macro_rules! config {
    ($( $opt:ident $field:ident $name:tt [$($var:expr),+] $ty:ty, layout $layout:tt, max $max:expr,
        option $ts:tt, config $config_ts:tt, doc $doc:tt, env $env:tt, default $default:tt; )+) => {
        /// The effective configuration of a generator: each option's value and where it came from.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct Config {
            $( #[doc = $doc] pub $field: Sourced<$ty>, )+
            /// Where this process runs, as far as replicas go (see [`replicas::detect`]): looked for only when no
            /// one chose the identity and `single_instance` is off, the one case where it matters
            /// (`identity::replicas`); else `None`.
            pub environment: Option<replicas::Detected>,
            pub layout: Layout,
        }
    };
}

option_table!(config);

impl Config {
    /// What the generator of this configuration is given.
    pub fn settings(&self) -> Settings {
        Settings {
            layout: self.layout,
            datacenter_id: self.datacenter_id.value,
            worker_id: self.worker_id.value,
            policy: self.on_clock_back.value,
            max_wait_ms: self.max_wait_ms.value,
            max_lead_ms: self.max_lead_ms.value,
        }
    }

    /// Whether the worker id is known only once the host lease is taken: it comes from the automatic lease, or a
    /// taken slot would move on (`workerIdIfTaken`). `config()` takes the lease first to report it.
    pub fn worker_id_needs_lease(&self) -> bool {
        self.lease.value
            && (self.worker_id.source == Source::Lease
                || IfTaken::moves_on(self.worker_id_if_taken, self.worker_id.source))
    }

    /// The most ids one generator issues in one ms.
    pub fn max_ids_per_ms(&self) -> u64 {
        1 << self.sequence_bits.value
    }

    /// Whether someone chose this configuration's identity (see [`identity_chosen`]).
    pub fn identity_chosen(&self) -> bool {
        identity_chosen(self.worker_id.source, self.datacenter_id.source)
    }
}

/// Whether someone chose an identity whose worker id and datacenter id came from these sources: its worker id is
/// configured (an option, a variable, a StatefulSet ordinal) or its datacenter id is (an option or a variable). A
/// worker id from the host lease or left at 0, and a datacenter id left at its default (or chosen by the lease), are
/// no one's choice.
pub fn identity_chosen(worker_id: Source, datacenter_id: Source) -> bool {
    matches!(worker_id, Source::Option | Source::Env | Source::StatefulSet)
        || matches!(datacenter_id, Source::Option | Source::Env)
}
