//! The one table of a generator's options: each one's name in JS, the environment variables it is read from, what
//! values it takes, its default and what it does. The [`Options`] struct, the list of variables snowid reads, the
//! resolver's look-ups, the README's configuration table and the typings' option docs come from it, or are checked
//! against it by a test.

use std::path::PathBuf;

use super::super::env::VAR_PREFIX;
use super::super::layout::MAX_FIELD_BITS;
use super::super::statefulset;

/// An option's value as it came from JS, sorted by JS type.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    Number(f64),
    Text(String),
    /// A `Date`, as its time value (NaN for an invalid date).
    Date(f64),
    Bool(bool),
    /// Any other JS value, described for the error message (for example `boolean true`).
    Other(String),
}

/// One option of a generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// Its name in JS: the option, and its key in `config()` and `config().sources`.
    pub name: &'static str,
    /// The environment variables it is read from when the option is not given, in order.
    pub vars: &'static [&'static str],
    /// What it is, and the values it takes: the README's table and the typings say it.
    pub doc: &'static str,
    /// The typings' line that names its variables (checked against `vars`).
    pub env: &'static str,
    /// Its default, as the README's table and the typings say it.
    pub default: &'static str,
    /// Whether reading ids needs it (an option of a `SnowflakeLayout` too).
    pub layout: bool,
    /// The largest value of an integer option whose range is fixed (`doc` says `0–max`); the resolver takes it.
    pub max: Option<u64>,
}

/// The table of options: one row per option, in the order the docs list them. A row gives the option's name in
/// Rust and in JS, its variables, its type in [`Config`](super::Config), whether a layout takes it, the largest
/// value of a fixed integer range, its TypeScript types as an option and in `config()`, and its docs.
///
/// The table calls back `$then!` with its rows, so each place that carries options makes its part from them: the
/// [`Options`] given in JS and [`OPTIONS`] here, the [`Config`](super::Config) in `resolved.rs`, and in `src/js`
/// the typings of the options (`SnowflakeOptions`, `LayoutOptions`) and the `config()` report (`SnowidConfig`,
/// `ConfigSources`). `documented_tests.rs` checks the README's table, the generated typings, the ranges and the
/// defaults against it.
macro_rules! option_table {
    ($then:ident) => {
        $then! {
            DatacenterId datacenter_id "datacenterId" ["SNOWID_DATACENTER_ID", "datacenterId"] u32,
                layout false, max None, option "number", config "number",
                doc "datacenter number, 0 to 2^datacenterBits − 1",
                env "Env `SNOWID_DATACENTER_ID`, else `datacenterId`.",
                default "the lease's, when it chooses the worker id too; else 0";
            WorkerId worker_id "workerId" ["SNOWID_WORKER_ID", "workerId"] u32,
                layout false, max None, option "number", config "number",
                doc "worker number, 0 to 2^workerBits − 1: one per process",
                env "Env `SNOWID_WORKER_ID`, else `workerId`.",
                default "the lease's slot (see [Worker ids on one host](docs/one-host.md#worker-ids-on-one-host))";
            ClockBack clock_back "clockBack" ["SNOWID_CLOCK_BACK"] u32,
                layout false, max None, option "number", config "number",
                doc "starting clock-back value",
                env "Env `SNOWID_CLOCK_BACK`.",
                default "0";
            Epoch epoch "epoch" ["SNOWID_EPOCH"] u64,
                layout true, max None, option "number | string | Date", config "number",
                doc "Unix ms, 0 or from 2000-01-01 (a number before that is refused as likely seconds), or an ISO-8601 date from 1970 (`2020-02-01`, or a date-time with `Z` or an offset), or a `Date` as an option; not in the future",
                env "Env `SNOWID_EPOCH`.",
                default "1580486400000";
            DatacenterBits datacenter_bits "datacenterBits" ["SNOWID_DATACENTER_BITS"] u32,
                layout true, max Some(MAX_FIELD_BITS as u64), option "number", config "number",
                doc "width of datacenterId, 0–32 bits",
                env "Env `SNOWID_DATACENTER_BITS`.",
                default "3";
            WorkerBits worker_bits "workerBits" ["SNOWID_WORKER_BITS"] u32,
                layout true, max Some(MAX_FIELD_BITS as u64), option "number", config "number",
                doc "width of workerId, 0–32 bits",
                env "Env `SNOWID_WORKER_BITS`.",
                default "5";
            ClockBackBits clock_back_bits "clockBackBits" ["SNOWID_CLOCK_BACK_BITS"] u32,
                layout true, max Some(MAX_FIELD_BITS as u64), option "number", config "number",
                doc "width of clockBack, 0–32 bits",
                env "Env `SNOWID_CLOCK_BACK_BITS`.",
                default "2";
            SequenceBits sequence_bits "sequenceBits" ["SNOWID_SEQUENCE_BITS"] u32,
                layout true, max Some(MAX_FIELD_BITS as u64), option "number", config "number",
                doc "width of sequence, 0–32 bits",
                env "Env `SNOWID_SEQUENCE_BITS`.",
                default "12";
            OnClockBack on_clock_back "onClockBack" ["SNOWID_ON_CLOCK_BACK"] ClockBackPolicy,
                layout false, max None, option "OnClockBack", config "OnClockBack",
                doc "`bits`, `wait` or `throw`: what to do when the clock moves backwards (see [Guarantees](docs/guarantees.md#guarantees))",
                env "Env `SNOWID_ON_CLOCK_BACK`.",
                default "`bits`";
            MaxWaitMs max_wait_ms "maxWaitMs" ["SNOWID_MAX_WAIT_MS"] u64,
                layout false, max Some(60_000), option "number", config "number",
                doc "the longest a call blocks for the clock (`wait`) or for an earlier holder's mark, 0–60000 ms",
                env "Env `SNOWID_MAX_WAIT_MS`.",
                default "1000";
            MaxLeadMs max_lead_ms "maxLeadMs" ["SNOWID_MAX_LEAD_MS"] u64,
                layout false, max Some(60_000), option "number", config "number",
                doc "how far ahead of the clock a full ms may move on, 0–60000 ms (see [Bounded borrowing](docs/one-host.md#bounded-borrowing-maxleadms))",
                env "Env `SNOWID_MAX_LEAD_MS`.",
                default "0";
            Lease lease "lease" ["SNOWID_LEASE"] bool,
                layout false, max None, option "boolean", config "boolean",
                doc "`on` or `off` (`true` or `false` as an option): lease the worker id slot on this host, so that no two live processes use it",
                env "Env `SNOWID_LEASE`.",
                default "`on` (`true`)";
            LeaseDir lease_dir "leaseDir" ["SNOWID_LEASE_DIR"] PathBuf,
                layout false, max None, option "string", config "string",
                doc "the lease directory, where slots keep their marks",
                env "Env `SNOWID_LEASE_DIR`.",
                default "`/dev/shm/snowid` on Linux, `/tmp/snowid` on macOS, `%ProgramData%\\snowid` on Windows (see [the default directory](docs/one-host.md#the-default-lease-directory))";
            LeaseNamespace lease_namespace "leaseNamespace" ["SNOWID_LEASE_NAMESPACE"] Option<String>,
                layout false, max None, option "string", config "string | null",
                doc "a separate set of this host's worker id slots, for tests: 1–64 characters of `A-Z a-z 0-9 . _ -`; processes of another namespace, or of none, see these slots taken only through a lease directory both use",
                env "Env `SNOWID_LEASE_NAMESPACE`.",
                default "unset (`null` in `config()`): the host's";
            WorkerIdIfTaken worker_id_if_taken "workerIdIfTaken" ["SNOWID_WORKER_ID_IF_TAKEN"] IfTaken,
                layout false, max None, option "'fail' | 'next'", config "'fail' | 'next'",
                doc "`fail` or `next`: with `next`, a worker id that another process on this host holds gives way to the automatic lease from that slot on, instead of `ERR_SNOWID_WORKER_ID_IN_USE` (`snowid/cluster` sets it). The variable covers a worker id from the environment; the option covers a `workerId` option too",
                env "Env `SNOWID_WORKER_ID_IF_TAKEN`.",
                default "`fail`";
            WorkerIdFrom worker_id_from "workerIdFrom" [statefulset::FROM_VAR] Option<WorkerIdFrom>,
                layout false, max None, option "'statefulset'", config "'statefulset' | null",
                doc "`statefulset`: with no worker id given as a number, the worker id is the ordinal at the end of the host name (`web-3` is 3; see [Kubernetes StatefulSets](docs/one-host.md#kubernetes-statefulsets))",
                env "Env `SNOWID_WORKER_ID_FROM`.",
                default "unset (`null` in `config()`)";
            SingleInstance single_instance "singleInstance" ["SNOWID_SINGLE_INSTANCE"] bool,
                layout false, max None, option "boolean", config "boolean",
                doc "`true` or `false` (a boolean as an option): `true` says this is the only instance, so that where replicas are the norm (Kubernetes, ECS, Cloud Run, ...) an identity no one chose is not refused (see [Replicas](docs/guarantees.md#replicas-that-cannot-see-each-other))",
                env "Env `SNOWID_SINGLE_INSTANCE`.",
                default "`false`";
        }
    };
}
pub(crate) use option_table;

/// Makes [`Options`], [`Opt`] and [`OPTIONS`] from the table.
macro_rules! options {
    ($( $opt:ident $field:ident $name:tt [$($var:expr),+] $ty:ty, layout $layout:tt, max $max:expr,
        option $ts:tt, config $config_ts:tt, doc $doc:tt, env $env:tt, default $default:tt; )+) => {
        /// Options given in JS, one field per option of [`OPTIONS`]. `None` is an absent (or `undefined`) option.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Options {
            $( pub $field: Option<OptionValue>, )+
        }

        /// An option of [`OPTIONS`], by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Opt {
            $( $opt, )+
        }

        /// Every option, in the order the docs list them.
        pub const OPTIONS: &[OptionSpec] = &[
            $( Opt::$opt.spec_const(), )+
        ];

        impl Opt {
            const fn spec_const(self) -> OptionSpec {
                match self {
                    $( Opt::$opt => OptionSpec {
                        name: $name, vars: &[$($var),+], doc: $doc, env: $env, default: $default, layout: $layout,
                        max: $max,
                    }, )+
                }
            }

            /// The option's row of [`OPTIONS`].
            pub fn spec(self) -> &'static OptionSpec {
                &OPTIONS[self as usize]
            }
        }

        impl Options {
            /// The value given for `opt`.
            pub fn get(&self, opt: Opt) -> Option<&OptionValue> {
                match opt {
                    $( Opt::$opt => self.$field.as_ref(), )+
                }
            }

            /// The slot of the option named `name` (as JS spells it), or `None` for an unknown name.
            pub fn slot(&mut self, name: &str) -> Option<&mut Option<OptionValue>> {
                match name {
                    $( $name => Some(&mut self.$field), )+
                    _ => None,
                }
            }
        }
    };
}

option_table!(options);

/// Every `SNOWID_*` variable snowid reads. Any other is refused, so that a misspelt one (`SNOWID_DATACENTER=1`) is
/// not silently left at its default.
pub fn known_vars() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().flat_map(|o| o.vars.iter().copied()).filter(|v| v.starts_with(VAR_PREFIX))
}

/// The variables without the `SNOWID_` prefix that options are read from: the JS article's own names.
pub fn short_vars() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().flat_map(|o| o.vars.iter().copied()).filter(|v| !v.starts_with(VAR_PREFIX))
}

pub const DEFAULT_MAX_WAIT_MS: u64 = 1000;
/// The longest lease namespace, in characters.
pub const MAX_NAMESPACE_CHARS: usize = 64;

/// The default lease directory: one path for every process of the host, whatever its `TMPDIR` (which differs
/// between users, services and `sudo`). On Linux `/dev/shm/snowid`, since `/dev/shm` is a writable tmpfs even under
/// a read-only root, and systemd's `PrivateTmp` does not make it private; `/tmp/snowid` where there is no `/dev/shm`.
/// Read once per process, so every generator of the process agrees.
#[cfg(target_os = "linux")]
pub fn default_lease_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let shm = || std::path::Path::new("/dev/shm").is_dir();
    DIR.get_or_init(|| PathBuf::from(if shm() { "/dev/shm/snowid" } else { "/tmp/snowid" })).clone()
}

/// On Android, whose `/tmp` is not there and whose apps each have their own temp dir, a `snowid` folder in the OS
/// temp dir.
#[cfg(target_os = "android")]
pub fn default_lease_dir() -> PathBuf {
    std::env::temp_dir().join("snowid")
}

/// On Windows, `%ProgramData%\snowid` (usually `C:\ProgramData\snowid`): ProgramData is one folder for the whole
/// machine, where every user may make files, whereas the temp dir (`%TEMP%`) is one per user. The folder is asked of
/// the shell, not read from the environment, which a service, a scheduled task and a console may each set apart.
/// Read once per process, so every generator of the process agrees.
#[cfg(windows)]
pub fn default_lease_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| super::super::lease::program_data().join("snowid")).clone()
}

/// On macOS (whose `TMPDIR` is per user) and other Unix systems, `/tmp/snowid`. On WASI, whose `temp_dir` panics,
/// only a name for messages: no lease directory opens there.
#[cfg(not(any(target_os = "linux", target_os = "android", windows)))]
pub fn default_lease_dir() -> PathBuf {
    PathBuf::from("/tmp/snowid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_option_once_and_every_variable_once() {
        let mut names: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPTIONS.len());
        let mut vars: Vec<&str> = OPTIONS.iter().flat_map(|o| o.vars.iter().copied()).collect();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), OPTIONS.iter().map(|o| o.vars.len()).sum::<usize>());
        let mut opts = Options::default();
        for o in OPTIONS {
            assert!(opts.slot(o.name).is_some(), "{}", o.name);
        }
        assert!(opts.slot("workerID").is_none());
        assert_eq!(short_vars().collect::<Vec<_>>(), ["datacenterId", "workerId"]);
        let layout: Vec<&str> = OPTIONS.iter().filter(|o| o.layout).map(|o| o.name).collect();
        assert_eq!(layout, ["epoch", "datacenterBits", "workerBits", "clockBackBits", "sequenceBits"]);
        assert_eq!(Opt::MaxLeadMs.spec(), &OPTIONS[10]);
    }
}
