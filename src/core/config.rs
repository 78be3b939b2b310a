//! Options and environment variables into one validated configuration that remembers where each value came from.
//!
//! Precedence: an option, then the `SNOWID_` variable, then (for the two ids) the JS article's own variable name,
//! then the default. The worker id goes on to a StatefulSet pod's ordinal (`SNOWID_WORKER_ID_FROM=statefulset`),
//! then to an automatic lease of a free slot on this host (unless leases are off, when it is 0); with no datacenter
//! id configured either, that lease chooses the datacenter id too. PM2's `NODE_APP_INSTANCE` is not read: it is
//! unique per app, not per host. Every value is checked in full; nothing is masked, clamped or truncated into range.

use std::ffi::OsString;
use std::path::PathBuf;

use super::error::{quote, Code, Error, Result};
use super::generator::{ClockBackPolicy, Settings};
use super::layout::{max_value, Layout, Widths, DEFAULT_EPOCH, MAX_FIELD_BITS};
use super::replicas;
use super::statefulset;
use super::time::{format_iso, parse_iso};

pub const DEFAULT_MAX_WAIT_MS: u64 = 1000;
/// `maxWaitMs` blocks the caller's thread, so it is bounded at one minute.
pub const MAX_MAX_WAIT_MS: u64 = 60_000;
/// `maxLeadMs` lets timestamps run ahead of the clock; a minute is the most it may.
pub const MAX_MAX_LEAD_MS: u64 = 60_000;

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
/// temp dir; on Windows, only a name for messages: no lease directory opens there (lease_none.rs).
#[cfg(any(target_os = "android", windows))]
pub fn default_lease_dir() -> PathBuf {
    std::env::temp_dir().join("snowid")
}

/// On macOS (whose `TMPDIR` is per user) and other Unix systems, `/tmp/snowid`. On WASI, whose `temp_dir` panics,
/// only a name for messages: no lease directory opens there (lease_none.rs).
#[cfg(not(any(target_os = "linux", target_os = "android", windows)))]
pub fn default_lease_dir() -> PathBuf {
    PathBuf::from("/tmp/snowid")
}

/// Where a configured value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// What a worker id given as a number does when another live process on this host holds its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// Options given in JS. `None` is an absent (or `undefined`) option.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    pub datacenter_id: Option<OptionValue>,
    pub worker_id: Option<OptionValue>,
    pub clock_back: Option<OptionValue>,
    pub epoch: Option<OptionValue>,
    pub datacenter_bits: Option<OptionValue>,
    pub worker_bits: Option<OptionValue>,
    pub clock_back_bits: Option<OptionValue>,
    pub sequence_bits: Option<OptionValue>,
    pub on_clock_back: Option<OptionValue>,
    pub max_wait_ms: Option<OptionValue>,
    pub max_lead_ms: Option<OptionValue>,
    pub lease: Option<OptionValue>,
    pub lease_dir: Option<OptionValue>,
    pub lease_namespace: Option<OptionValue>,
    pub worker_id_if_taken: Option<OptionValue>,
    pub worker_id_from: Option<OptionValue>,
    pub single_instance: Option<OptionValue>,
}

/// The option names, in camelCase as JS spells them.
pub const OPTION_NAMES: [&str; 17] = [
    "datacenterId",
    "workerId",
    "clockBack",
    "epoch",
    "datacenterBits",
    "workerBits",
    "clockBackBits",
    "sequenceBits",
    "onClockBack",
    "maxWaitMs",
    "maxLeadMs",
    "lease",
    "leaseDir",
    "leaseNamespace",
    "workerIdIfTaken",
    "workerIdFrom",
    "singleInstance",
];

impl Options {
    /// The slot of the option named `name` (camelCase), or `None` for an unknown name.
    pub fn slot(&mut self, name: &str) -> Option<&mut Option<OptionValue>> {
        Some(match name {
            "datacenterId" => &mut self.datacenter_id,
            "workerId" => &mut self.worker_id,
            "clockBack" => &mut self.clock_back,
            "epoch" => &mut self.epoch,
            "datacenterBits" => &mut self.datacenter_bits,
            "workerBits" => &mut self.worker_bits,
            "clockBackBits" => &mut self.clock_back_bits,
            "sequenceBits" => &mut self.sequence_bits,
            "onClockBack" => &mut self.on_clock_back,
            "maxWaitMs" => &mut self.max_wait_ms,
            "maxLeadMs" => &mut self.max_lead_ms,
            "lease" => &mut self.lease,
            "leaseDir" => &mut self.lease_dir,
            "leaseNamespace" => &mut self.lease_namespace,
            "workerIdIfTaken" => &mut self.worker_id_if_taken,
            "workerIdFrom" => &mut self.worker_id_from,
            "singleInstance" => &mut self.single_instance,
            _ => return None,
        })
    }
}

/// Reads one environment variable. Injected so tests need not touch the process environment.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<OsString>;
    /// The names of the variables that start with `SNOWID_`, to refuse one snowid does not read. A source that
    /// cannot list its variables lists none.
    fn snowid_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The process environment, as the OS holds it (what `cluster.fork({ env })` and PM2 set).
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }

    fn snowid_names(&self) -> Vec<String> {
        vars_of_process().into_iter().map(|(k, _)| k).filter(|k| k.starts_with(VAR_PREFIX)).collect()
    }
}

/// The variables without the `SNOWID_` prefix that a configuration reads (a StatefulSet pod's and the short names),
/// which a [`ProcessSnapshot`] takes in the same pass.
const OTHER_NAMES: [&str; 3] = ["datacenterId", "workerId", "HOSTNAME"];

/// Whether a [`ProcessSnapshot`] holds the variable `name` (when it is set).
fn snapshot_holds(name: &str) -> bool {
    name.starts_with(VAR_PREFIX) || OTHER_NAMES.contains(&name) || replicas::NAMES.contains(&name)
}

/// The process environment's `SNOWID_*` variables, [`OTHER_NAMES`] and [`replicas::NAMES`], found in one pass over it: what
/// [`ProcessEnv`] reads, for less. Any other variable is read from the environment when asked for.
pub struct ProcessSnapshot {
    vars: Vec<(String, OsString)>,
}

impl ProcessSnapshot {
    pub fn take() -> ProcessSnapshot {
        ProcessSnapshot { vars: vars_of_process() }
    }
}

impl EnvSource for ProcessSnapshot {
    fn var(&self, name: &str) -> Option<OsString> {
        if !snapshot_holds(name) {
            return std::env::var_os(name);
        }
        self.vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn snowid_names(&self) -> Vec<String> {
        self.vars.iter().map(|(k, _)| k.clone()).filter(|k| k.starts_with(VAR_PREFIX)).collect()
    }
}

/// The process environment's `SNOWID_*` variables and [`OTHER_NAMES`] (a name that is not UTF-8 is left out). On
/// Linux, one pass over `environ` that copies only those (`std::env::vars_os` copies every name and value, which
/// each `new Snowflake()` would pay).
#[cfg(target_os = "linux")]
fn vars_of_process() -> Vec<(String, OsString)> {
    use std::os::unix::ffi::OsStrExt;
    extern "C" {
        static environ: *const *const libc::c_char;
    }
    let mut vars = Vec::new();
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated "NAME=VALUE" strings; it is only read, on the
    // thread that configures generators, as `getenv` would read it.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            // A name that cannot be kept is passed over by its first byte, without measuring the entry.
            let first = (**entry) as u8;
            if ![VAR_PREFIX]
                .iter()
                .chain(&OTHER_NAMES)
                .chain(replicas::NAMES)
                .any(|n| n.as_bytes().first() == Some(&first))
            {
                entry = entry.add(1);
                continue;
            }
            let bytes = std::ffi::CStr::from_ptr(*entry).to_bytes();
            let mut parts = bytes.splitn(2, |&b| b == b'=');
            let (name, value) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            // Names are compared as bytes, and only a kept one is checked as UTF-8.
            let kept = name.starts_with(VAR_PREFIX.as_bytes())
                || OTHER_NAMES.iter().chain(replicas::NAMES).any(|n| n.as_bytes() == name);
            if let Some(Ok(name)) = kept.then(|| std::str::from_utf8(name)) {
                vars.push((name.to_string(), std::ffi::OsStr::from_bytes(value).to_os_string()));
            }
            entry = entry.add(1);
        }
    }
    vars
}

#[cfg(not(target_os = "linux"))]
fn vars_of_process() -> Vec<(String, OsString)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| snapshot_holds(k))
        .collect()
}

impl<F: Fn(&str) -> Option<OsString>> EnvSource for F {
    fn var(&self, name: &str) -> Option<OsString> {
        self(name)
    }
}

/// What every variable snowid reads starts with.
pub const VAR_PREFIX: &str = "SNOWID_";

/// Every `SNOWID_*` variable snowid reads. Any other is refused, so that a misspelt one (`SNOWID_DATACENTER=1`)
/// is not silently left at its default.
pub const KNOWN_VARS: &[&str] = &[
    "SNOWID_DATACENTER_ID",
    "SNOWID_WORKER_ID",
    "SNOWID_WORKER_ID_FROM",
    "SNOWID_WORKER_ID_IF_TAKEN",
    "SNOWID_CLOCK_BACK",
    "SNOWID_EPOCH",
    "SNOWID_DATACENTER_BITS",
    "SNOWID_WORKER_BITS",
    "SNOWID_CLOCK_BACK_BITS",
    "SNOWID_SEQUENCE_BITS",
    "SNOWID_ON_CLOCK_BACK",
    "SNOWID_MAX_WAIT_MS",
    "SNOWID_MAX_LEAD_MS",
    "SNOWID_LEASE",
    "SNOWID_LEASE_DIR",
    "SNOWID_SINGLE_INSTANCE",
    "SNOWID_LEASE_NAMESPACE",
];

/// Refuses a `SNOWID_*` variable that snowid does not read, naming the known one nearest to it.
pub fn check_var_names(env: &dyn EnvSource) -> Result<()> {
    let mut unknown: Vec<String> =
        env.snowid_names().into_iter().filter(|n| !KNOWN_VARS.contains(&n.as_str())).collect();
    unknown.sort();
    let Some(name) = unknown.first() else {
        return Ok(());
    };
    let nearest = KNOWN_VARS.iter().min_by_key(|k| edit_distance(name, k)).copied().unwrap_or("SNOWID_WORKER_ID");
    let shown: String = name.chars().take(60).collect();
    Err(Error::range_error(
        Code::InvalidConfig,
        &shown,
        &format!("a variable snowid reads (did you mean {nearest}?)"),
        "an unknown SNOWID_ variable: rename it or unset it",
    ))
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row.first().copied().unwrap_or(0);
        let mut next = Vec::with_capacity(row.len());
        next.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev + usize::from(ca != *cb);
            let above = row.get(j + 1).copied().unwrap_or(usize::MAX - 1) + 1;
            let left = next.last().copied().unwrap_or(usize::MAX - 1) + 1;
            prev = row.get(j + 1).copied().unwrap_or(0);
            next.push(substitute.min(above).min(left));
        }
        row = next;
    }
    row.last().copied().unwrap_or(0)
}

/// The effective configuration of a generator.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub datacenter_id: Sourced<u32>,
    pub worker_id: Sourced<u32>,
    pub clock_back: Sourced<u32>,
    pub epoch: Sourced<u64>,
    pub datacenter_bits: Sourced<u32>,
    pub worker_bits: Sourced<u32>,
    pub clock_back_bits: Sourced<u32>,
    pub sequence_bits: Sourced<u32>,
    pub on_clock_back: Sourced<ClockBackPolicy>,
    pub max_wait_ms: Sourced<u64>,
    pub max_lead_ms: Sourced<u64>,
    /// Whether (datacenterId, workerId) slots are leased on this host.
    pub lease: Sourced<bool>,
    pub lease_dir: Sourced<PathBuf>,
    /// `SNOWID_LEASE_NAMESPACE` or `leaseNamespace`: a separate set of the host's slots (none: the host's own).
    pub lease_namespace: Sourced<Option<String>>,
    /// What a worker id given as a number does when another process on this host holds its slot (see
    /// [`IfTaken`]). `snowid/cluster` sets `SNOWID_WORKER_ID_IF_TAKEN=next`, so that a worker two primaries both
    /// chose still starts.
    pub worker_id_if_taken: Sourced<IfTaken>,
    /// `SNOWID_WORKER_ID_FROM=statefulset` or `workerIdFrom: 'statefulset'`: with no worker id given as a number,
    /// the worker id is the ordinal of a StatefulSet pod's host name.
    pub worker_id_from_statefulset: Sourced<bool>,
    /// `SNOWID_SINGLE_INSTANCE=true` or `singleInstance: true`: this is the only instance, so an identity no one chose
    /// is not refused where replicas are the norm (see [`replicas`]).
    pub single_instance: Sourced<bool>,
    /// Where this process runs, as far as replicas go (see [`replicas::detect`]): looked for only when no one chose
    /// the identity and `single_instance` is off, the one case where it matters ([`replicas::check`]); else `None`.
    pub environment: Option<replicas::Detected>,
    pub layout: Layout,
}

/// A raw value and where it was found: an option (by its JS name) or a variable. A name is made into message text
/// only for a refused value, so a good configuration formats nothing.
enum Raw<'a> {
    Opt(&'a OptionValue, &'a str),
    Env(String, &'static str),
}

/// An option's name in messages.
fn option_name(js_name: &str) -> String {
    format!("options.{js_name}")
}

struct Resolver<'a> {
    opts: &'a Options,
    env: &'a dyn EnvSource,
}

impl Resolver<'_> {
    /// The raw value for an option: the option itself, else the first env variable present.
    fn find<'o>(
        &self,
        option: &'o Option<OptionValue>,
        js_name: &'o str,
        env_names: &[&'static str],
    ) -> Result<Option<Raw<'o>>> {
        if let Some(v) = option {
            return Ok(Some(Raw::Opt(v, js_name)));
        }
        for &name in env_names {
            if let Some(os) = self.env.var(name) {
                let text = os.into_string().map_err(|os| {
                    Error::type_error(Code::InvalidConfig, name, "valid UTF-8 text", &quote(&os.to_string_lossy()))
                })?;
                return Ok(Some(Raw::Env(text, name)));
            }
        }
        Ok(None)
    }

    /// An integer setting from 0 to `max`; `hint` (made only for a message) follows the range.
    fn integer(
        &self,
        option: &Option<OptionValue>,
        js_name: &str,
        env_names: &[&'static str],
        max: u64,
        hint: &dyn Fn() -> String,
        default: u64,
    ) -> Result<Sourced<u64>> {
        let expected = || format!("an integer from 0 to {max}{}", hint());
        match self.find(option, js_name, env_names)? {
            None => Ok(Sourced { value: default, source: Source::Default }),
            Some(Raw::Opt(v, js)) => {
                let value = match v {
                    OptionValue::Number(n) => whole(*n).filter(|&n| n <= max),
                    _ => None,
                };
                let value = match value {
                    Some(value) => value,
                    None => option_integer(v, &option_name(js), &expected(), max)?,
                };
                Ok(Sourced { value, source: Source::Option })
            }
            Some(Raw::Env(text, name)) => {
                let value = match plain_integer(&text).filter(|&n| n <= max) {
                    Some(value) => value,
                    None => env_integer(&text, name, &expected(), max)?,
                };
                Ok(Sourced { value, source: Source::Env })
            }
        }
    }

    fn epoch(&self, now: u64) -> Result<Sourced<u64>> {
        let (value, source, name) = match self.find(&self.opts.epoch, "epoch", &["SNOWID_EPOCH"])? {
            None => return Ok(Sourced { value: DEFAULT_EPOCH, source: Source::Default }),
            Some(raw) => self.epoch_value(raw, now)?,
        };
        if value > now {
            return Err(Error::range_error(
                Code::InvalidConfig,
                &name,
                &expected_epoch(now),
                &format!("{value} ({}), which is in the future", format_iso(value)),
            ));
        }
        Ok(Sourced { value, source })
    }

    /// An epoch given as an option or a variable, where it came from, and its name for messages.
    fn epoch_value(&self, raw: Raw<'_>, now: u64) -> Result<(u64, Source, String)> {
        let expected = expected_epoch(now);
        Ok(match raw {
            Raw::Opt(v, js) => {
                let name = option_name(js);
                let ms = match v {
                    OptionValue::Number(_) => option_integer(v, &name, &expected, u64::MAX)?,
                    OptionValue::Date(t) if t.is_nan() => {
                        return Err(Error::range_error(Code::InvalidConfig, &name, &expected, "an invalid Date"));
                    }
                    OptionValue::Date(t) => option_integer(&OptionValue::Number(*t), &name, &expected, u64::MAX)?,
                    OptionValue::Text(text) => epoch_text(text, &name, &expected)?,
                    other @ (OptionValue::Other(_) | OptionValue::Bool(_)) => {
                        return Err(Error::type_error(Code::InvalidConfig, &name, &expected, &describe(other)));
                    }
                };
                (ms, Source::Option, name)
            }
            Raw::Env(text, name) => (epoch_text(&text, name, &expected)?, Source::Env, name.to_string()),
        })
    }

    /// A setting that is one of a few words: a string option, else its variable, else `default`. A value of
    /// another JS type is a `TypeError`, a word `parse` does not know a `RangeError`.
    fn word<T>(
        &self,
        option: &Option<OptionValue>,
        js_name: &str,
        var: &'static str,
        expected: &dyn Fn() -> String,
        parse: impl Fn(&str) -> Option<T>,
        default: T,
    ) -> Result<Sourced<T>> {
        let found = self.find(option, js_name, &[var])?;
        let (text, source) = match &found {
            None => return Ok(Sourced { value: default, source: Source::Default }),
            Some(Raw::Opt(OptionValue::Text(t), _)) => (t.as_str(), Source::Option),
            Some(Raw::Opt(other, js)) => {
                return Err(Error::type_error(Code::InvalidConfig, &option_name(js), &expected(), &describe(other)));
            }
            Some(Raw::Env(t, _)) => (t.as_str(), Source::Env),
        };
        match parse(text) {
            Some(value) => Ok(Sourced { value, source }),
            None => {
                let name = if source == Source::Option { option_name(js_name) } else { var.to_string() };
                Err(Error::range_error(Code::InvalidConfig, &name, &expected(), &quote(text)))
            }
        }
    }

    fn policy(&self) -> Result<Sourced<ClockBackPolicy>> {
        let expected = || "one of 'bits', 'wait' or 'throw'".to_string();
        self.word(
            &self.opts.on_clock_back,
            "onClockBack",
            "SNOWID_ON_CLOCK_BACK",
            &expected,
            ClockBackPolicy::parse,
            ClockBackPolicy::default(),
        )
    }
}

impl Resolver<'_> {
    /// `SNOWID_WORKER_ID_IF_TAKEN` or `workerIdIfTaken`: `fail` (the default) or `next`.
    fn if_taken(&self) -> Result<Sourced<IfTaken>> {
        let (opt, var) = (&self.opts.worker_id_if_taken, "SNOWID_WORKER_ID_IF_TAKEN");
        self.word(opt, "workerIdIfTaken", var, &|| "'fail' or 'next'".to_string(), IfTaken::parse, IfTaken::Fail)
    }

    /// `SNOWID_WORKER_ID_FROM` or `workerIdFrom`: whether the worker id comes from a StatefulSet pod's ordinal.
    /// Its one value is `statefulset`.
    fn worker_id_from(&self) -> Result<Sourced<bool>> {
        let parse = |text: &str| (text == statefulset::STATEFULSET).then_some(true);
        self.word(
            &self.opts.worker_id_from,
            "workerIdFrom",
            statefulset::FROM_VAR,
            &statefulset::expected_from,
            parse,
            false,
        )
    }

    fn lease(&self) -> Result<Sourced<bool>> {
        let expected = "'on' or 'off' (true or false as an option)";
        match self.find(&self.opts.lease, "lease", &["SNOWID_LEASE"])? {
            None => Ok(Sourced { value: true, source: Source::Default }),
            Some(Raw::Opt(OptionValue::Bool(b), _)) => Ok(Sourced { value: *b, source: Source::Option }),
            Some(Raw::Opt(other, js)) => {
                Err(Error::type_error(Code::InvalidConfig, &option_name(js), expected, &describe(other)))
            }
            Some(Raw::Env(text, name)) => match text.as_str() {
                "on" => Ok(Sourced { value: true, source: Source::Env }),
                "off" => Ok(Sourced { value: false, source: Source::Env }),
                _ => Err(Error::range_error(Code::InvalidConfig, name, expected, &quote(&text))),
            },
        }
    }

    /// `SNOWID_SINGLE_INSTANCE` (`true` or `false`) or `singleInstance` (a boolean).
    fn single_instance(&self) -> Result<Sourced<bool>> {
        let expected = "'true' or 'false' (a boolean as an option)";
        match self.find(&self.opts.single_instance, "singleInstance", &["SNOWID_SINGLE_INSTANCE"])? {
            None => Ok(Sourced { value: false, source: Source::Default }),
            Some(Raw::Opt(OptionValue::Bool(b), _)) => Ok(Sourced { value: *b, source: Source::Option }),
            Some(Raw::Opt(other, js)) => {
                Err(Error::type_error(Code::InvalidConfig, &option_name(js), expected, &describe(other)))
            }
            Some(Raw::Env(text, name)) => match text.as_str() {
                "true" => Ok(Sourced { value: true, source: Source::Env }),
                "false" => Ok(Sourced { value: false, source: Source::Env }),
                _ => Err(Error::range_error(Code::InvalidConfig, name, expected, &quote(&text))),
            },
        }
    }

    fn lease_dir(&self) -> Result<Sourced<PathBuf>> {
        let expected = "a non-empty directory path";
        let (text, source, name) = match self.find(&self.opts.lease_dir, "leaseDir", &["SNOWID_LEASE_DIR"])? {
            None => return Ok(Sourced { value: default_lease_dir(), source: Source::Default }),
            Some(Raw::Opt(OptionValue::Text(t), js)) => (t.clone(), Source::Option, option_name(js)),
            Some(Raw::Opt(other, js)) => {
                return Err(Error::type_error(Code::InvalidConfig, &option_name(js), expected, &describe(other)));
            }
            Some(Raw::Env(t, name)) => (t, Source::Env, name.to_string()),
        };
        if text.is_empty() || text.contains('\0') {
            return Err(Error::type_error(Code::InvalidConfig, &name, expected, &quote(&text)));
        }
        // A relative path would mean a different directory in each process's working directory, and so a
        // different set of leases: two processes could both take worker 0.
        let path = PathBuf::from(&text);
        if !path.is_absolute() {
            let expected = "an absolute directory path (a relative one differs between working directories)";
            return Err(Error::range_error(Code::InvalidConfig, &name, expected, &quote(&text)));
        }
        Ok(Sourced { value: path, source })
    }

    /// `SNOWID_LEASE_NAMESPACE` or `leaseNamespace`: 1 to [`MAX_NAMESPACE_CHARS`] letters, digits, `.`, `_` or `-`.
    fn lease_namespace(&self) -> Result<Sourced<Option<String>>> {
        let expected = format!("1 to {MAX_NAMESPACE_CHARS} characters of A-Z, a-z, 0-9, '.', '_' and '-'");
        let (text, source, name) =
            match self.find(&self.opts.lease_namespace, "leaseNamespace", &["SNOWID_LEASE_NAMESPACE"])? {
                None => return Ok(Sourced { value: None, source: Source::Default }),
                Some(Raw::Opt(OptionValue::Text(t), js)) => (t.clone(), Source::Option, option_name(js)),
                Some(Raw::Opt(other, js)) => {
                    return Err(Error::type_error(Code::InvalidConfig, &option_name(js), &expected, &describe(other)));
                }
                Some(Raw::Env(t, name)) => (t, Source::Env, name.to_string()),
            };
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if text.is_empty() || text.len() > MAX_NAMESPACE_CHARS || !text.chars().all(allowed) {
            return Err(Error::range_error(Code::InvalidConfig, &name, &expected, &quote(&text)));
        }
        Ok(Sourced { value: Some(text), source })
    }
}

/// The longest lease namespace, in characters.
pub const MAX_NAMESPACE_CHARS: usize = 64;

/// What a layout is for: generating ids needs a timestamp field that lasts 10 more years, reading them does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Generate,
    Read,
}

/// The widths and epoch of a configuration, where each came from, and the layout they make.
struct LayoutParts {
    datacenter_bits: Sourced<u32>,
    worker_bits: Sourced<u32>,
    clock_back_bits: Sourced<u32>,
    sequence_bits: Sourced<u32>,
    epoch: Sourced<u64>,
    layout: Layout,
}

impl Resolver<'_> {
    /// Resolves the four widths and the epoch, and validates them as a layout for `what`.
    fn layout(&self, now: u64, what: Use) -> Result<LayoutParts> {
        let (r, opts) = (self, self.opts);
        let d = Widths::default();
        // Each field but the timestamp is at most 32 bits: its values are 32-bit numbers everywhere (encode's
        // arguments, decode's results), so a wider field could not be read or written whole.
        let bits = |opt, js, var: &'static str, default: u32| {
            r.integer(opt, js, &[var], u64::from(MAX_FIELD_BITS), &String::new, default.into()).map(to_u32)
        };
        let datacenter_bits = bits(&opts.datacenter_bits, "datacenterBits", "SNOWID_DATACENTER_BITS", d.datacenter)?;
        let worker_bits = bits(&opts.worker_bits, "workerBits", "SNOWID_WORKER_BITS", d.worker)?;
        let clock_back_bits = bits(&opts.clock_back_bits, "clockBackBits", "SNOWID_CLOCK_BACK_BITS", d.clock_back)?;
        let sequence_bits = bits(&opts.sequence_bits, "sequenceBits", "SNOWID_SEQUENCE_BITS", d.sequence)?;
        let epoch = r.epoch(now)?;
        let widths = Widths {
            datacenter: datacenter_bits.value,
            worker: worker_bits.value,
            clock_back: clock_back_bits.value,
            sequence: sequence_bits.value,
        };
        let layout = match what {
            Use::Generate => Layout::new(widths, epoch.value, now),
            Use::Read => Layout::for_reading(widths, epoch.value, now),
        };
        let layout = layout.map_err(|e| {
            let from: Vec<String> = [
                ("datacenterBits", &datacenter_bits, "SNOWID_DATACENTER_BITS"),
                ("workerBits", &worker_bits, "SNOWID_WORKER_BITS"),
                ("clockBackBits", &clock_back_bits, "SNOWID_CLOCK_BACK_BITS"),
                ("sequenceBits", &sequence_bits, "SNOWID_SEQUENCE_BITS"),
            ]
            .iter()
            .filter_map(|(js, s, var)| match s.source {
                Source::Option => Some(format!("options.{js}")),
                Source::Env => Some(var.to_string()),
                Source::Default | Source::Lease | Source::StatefulSet => None,
            })
            .collect();
            if from.is_empty() {
                e
            } else {
                Error::new(e.code(), e.class(), format!("{} (set by {})", e.message(), from.join(", ")))
            }
        })?;
        Ok(LayoutParts { datacenter_bits, worker_bits, clock_back_bits, sequence_bits, epoch, layout })
    }
}

/// Describes a JS option value for a message: numbers as JS prints them, strings quoted.
pub fn describe(v: &OptionValue) -> String {
    match v {
        OptionValue::Number(n) => js_number(*n),
        OptionValue::Text(t) => format!("the string {}", quote(t)),
        OptionValue::Date(_) => "a Date".to_string(),
        OptionValue::Bool(b) => format!("the boolean {b}"),
        OptionValue::Other(what) => what.clone(),
    }
}

/// A JS number as JS prints it.
pub fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n == 0.0 {
        "0".into()
    } else if n.abs() >= 1e21 || n.abs() < 1e-6 {
        // JS's exponent form, which keeps 5e-324 and 1e308 short: Rust writes `1e21`, JS `1e+21`.
        let e = format!("{n:e}");
        match e.split_once('e') {
            Some((m, x)) if !x.starts_with('-') => format!("{m}e+{x}"),
            _ => e,
        }
    } else {
        format!("{n}")
    }
}

/// `n` as a u64 when it is a whole number from 0 to below 2^64, which every such f64 converts to exactly.
fn whole(n: f64) -> Option<u64> {
    (n.is_finite() && n.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&n)).then_some(n as u64)
}

fn option_integer(v: &OptionValue, name: &str, expected: &str, max: u64) -> Result<u64> {
    let n = match v {
        OptionValue::Number(n) => *n,
        other => return Err(Error::type_error(Code::InvalidConfig, name, expected, &describe(other))),
    };
    whole(n).filter(|&v| v <= max).ok_or_else(|| Error::range_error(Code::InvalidConfig, name, expected, &js_number(n)))
}

/// Text of digits only as a u64, if it is one: the good case of [`env_integer`], which makes no message.
fn plain_integer(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse::<u64>().ok()).flatten()
}

/// A plain base-10 integer: digits only, no sign, no spaces, nothing trailing.
fn env_integer(text: &str, name: &str, expected: &str, max: u64) -> Result<u64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::type_error(Code::InvalidConfig, name, expected, &quote(text)));
    }
    match text.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(Error::range_error(Code::InvalidConfig, name, expected, &quote(text))),
    }
}

fn epoch_text(text: &str, name: &str, expected: &str) -> Result<u64> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<u64>().map_err(|_| Error::range_error(Code::InvalidConfig, name, expected, &quote(text)));
    }
    parse_iso(text).ok_or_else(|| Error::type_error(Code::InvalidConfig, name, expected, &quote(text)))
}

/// What an epoch must be, for messages.
fn expected_epoch(now: u64) -> String {
    format!(
        "Unix ms or an ISO-8601 date (YYYY-MM-DD, or a date-time with Z or an offset) from 1970 to now ({now}, {})",
        format_iso(now)
    )
}

/// What a time argument must be, for messages.
pub const EXPECTED_TIME: &str = "a Date, Unix ms, or an ISO-8601 date (YYYY-MM-DD, or a date-time with Z or an offset)";

/// Reads a point in time given to a call (not an option): a `Date`, a whole number of Unix ms, or text written as
/// an epoch may be. The caller checks it against a layout.
pub fn time_arg(v: &OptionValue, what: &str) -> Result<u64> {
    let ms =
        |n: f64| whole(n).ok_or_else(|| Error::range_error(Code::InvalidArgument, what, EXPECTED_TIME, &js_number(n)));
    match v {
        OptionValue::Number(n) => ms(*n),
        OptionValue::Date(t) if t.is_nan() => {
            Err(Error::range_error(Code::InvalidArgument, what, EXPECTED_TIME, "an invalid Date"))
        }
        OptionValue::Date(t) => ms(*t),
        OptionValue::Text(text) => epoch_text(text, what, EXPECTED_TIME)
            .map_err(|e| Error::new(Code::InvalidArgument, e.class(), e.message().to_string())),
        other @ (OptionValue::Bool(_) | OptionValue::Other(_)) => {
            Err(Error::type_error(Code::InvalidArgument, what, EXPECTED_TIME, &describe(other)))
        }
    }
}

fn to_u32(s: Sourced<u64>) -> Sourced<u32> {
    // Every u32 field is range-checked below 2^32 by its caller.
    Sourced { value: s.value as u32, source: s.source }
}

impl Config {
    /// Resolves options over the environment over the defaults, and validates the result as a whole against the
    /// time `now` (Unix ms).
    pub fn resolve(opts: &Options, env: &dyn EnvSource, now: u64) -> Result<Config> {
        check_var_names(env)?;
        let r = Resolver { opts, env };
        let LayoutParts { datacenter_bits, worker_bits, clock_back_bits, sequence_bits, epoch, layout } =
            r.layout(now, Use::Generate)?;
        let field = |opt, js, vars: &[&'static str], bits: &Sourced<u32>, bits_name: &str| {
            let hint = || format!(" ({bits_name} is {})", bits.value);
            r.integer(opt, js, vars, max_value(bits.value), &hint, 0).map(to_u32)
        };
        let mut datacenter_id = field(
            &opts.datacenter_id,
            "datacenterId",
            &["SNOWID_DATACENTER_ID", "datacenterId"],
            &datacenter_bits,
            "datacenterBits",
        )?;
        let lease = r.lease()?;
        let worker_vars: &[&'static str] = &["SNOWID_WORKER_ID", "workerId"];
        let mut worker_id = field(&opts.worker_id, "workerId", worker_vars, &worker_bits, "workerBits")?;
        // A worker id given as a number wins over SNOWID_WORKER_ID_FROM. PM2's NODE_APP_INSTANCE is not read: every
        // app's first instance is 0, so two apps on one host would claim one slot.
        let worker_id_from_statefulset = r.worker_id_from()?;
        if worker_id.source == Source::Default && worker_id_from_statefulset.value {
            let hint = format!(" (workerBits is {})", worker_bits.value);
            let value = statefulset::worker_id(env, max_value(worker_bits.value), &hint)? as u32;
            worker_id = Sourced { value, source: Source::StatefulSet };
        }
        if worker_id.source == Source::Default && lease.value {
            // Taken by `start::bind_worker` once the lease is acquired. With no datacenter id configured either, the
            // lease chooses both: datacenterId 0's worker ids first, then 1's, and so on.
            worker_id.source = Source::Lease;
            if datacenter_id.source == Source::Default {
                datacenter_id.source = Source::Lease;
            }
        }
        let clock_back =
            field(&opts.clock_back, "clockBack", &["SNOWID_CLOCK_BACK"], &clock_back_bits, "clockBackBits")?;
        let on_clock_back = r.policy()?;
        let max_wait_ms = r.integer(
            &opts.max_wait_ms,
            "maxWaitMs",
            &["SNOWID_MAX_WAIT_MS"],
            MAX_MAX_WAIT_MS,
            &String::new,
            DEFAULT_MAX_WAIT_MS,
        )?;
        let max_lead_ms =
            r.integer(&opts.max_lead_ms, "maxLeadMs", &["SNOWID_MAX_LEAD_MS"], MAX_MAX_LEAD_MS, &String::new, 0)?;
        let lease_dir = r.lease_dir()?;
        let single_instance = r.single_instance()?;
        let unchosen = !single_instance.value && !replicas::chosen(worker_id.source, datacenter_id.source);
        let environment = if unchosen { replicas::detect(env, std::path::Path::new(replicas::ROOT)) } else { None };
        let lease_namespace = r.lease_namespace()?;
        Ok(Config {
            datacenter_id,
            worker_id,
            clock_back,
            epoch,
            datacenter_bits,
            worker_bits,
            clock_back_bits,
            sequence_bits,
            on_clock_back,
            max_wait_ms,
            max_lead_ms,
            lease,
            lease_dir,
            lease_namespace,
            worker_id_if_taken: r.if_taken()?,
            worker_id_from_statefulset,
            single_instance,
            environment,
            layout,
        })
    }

    /// Resolves only what reading ids needs, the widths and the epoch, into a layout for reading: no worker id,
    /// no lease, and no 10-year rule. A variable it does not need may hold anything.
    pub fn resolve_layout(opts: &Options, env: &dyn EnvSource, now: u64) -> Result<Layout> {
        check_var_names(env)?;
        Resolver { opts, env }.layout(now, Use::Read).map(|p| p.layout)
    }

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
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Listed(Vec<(&'static str, &'static str)>);
    impl EnvSource for Listed {
        fn var(&self, name: &str) -> Option<OsString> {
            self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        }
        fn snowid_names(&self) -> Vec<String> {
            self.0.iter().map(|(k, _)| k.to_string()).filter(|k| k.starts_with(VAR_PREFIX)).collect()
        }
    }

    #[test]
    fn a_process_snapshot_reads_what_the_process_environment_holds() {
        // The test binary's own environment: whatever it holds, the snapshot agrees with the OS for every name a
        // configuration reads, and for one it does not keep.
        let snapshot = ProcessSnapshot::take();
        for name in OTHER_NAMES.iter().chain(replicas::NAMES).copied().chain([
            "SNOWID_WORKER_ID",
            "SNOWID_LEASE_DIR",
            "PATH",
            "HOME",
        ]) {
            assert_eq!(snapshot.var(name), std::env::var_os(name), "{name}");
        }
        let mut listed = snapshot.snowid_names();
        let mut expected: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| k.starts_with(VAR_PREFIX))
            .collect();
        listed.sort();
        expected.sort();
        assert_eq!(listed, expected);
    }

    #[test]
    fn an_unknown_snowid_variable_is_refused_naming_the_nearest_known_one() {
        for (typo, nearest) in [
            ("SNOWID_DATACENTER", "SNOWID_DATACENTER_ID"),
            ("SNOWID_WORKERID", "SNOWID_WORKER_ID"),
            ("SNOWID_LEASEDIR", "SNOWID_LEASE_DIR"),
            ("SNOWID_WORKER_ID_IF_TAKN", "SNOWID_WORKER_ID_IF_TAKEN"),
            ("SNOWID_MAX_LEAD", "SNOWID_MAX_LEAD_MS"),
        ] {
            let env = Listed(vec![(typo, "1"), ("HOME", "/root")]);
            let e = Config::resolve(&Options::default(), &env, NOW).unwrap_err();
            assert_eq!(e.code(), Code::InvalidConfig);
            assert!(
                e.message().starts_with(&format!("{typo}: expected a variable snowid reads (did you mean {nearest}?)")),
                "{e}"
            );
            assert!(Config::resolve_layout(&Options::default(), &env, NOW).is_err());
        }
        let known: Vec<(&'static str, &'static str)> = vec![
            ("SNOWID_LEASE", "off"),
            ("SNOWID_LEASE_DIR", "/srv/x"),
            ("SNOWID_WORKER_ID_IF_TAKEN", "next"),
            ("SNOWID_MAX_LEAD_MS", "5"),
            ("SNOWID_MAX_WAIT_MS", "5"),
            ("SNOWID_ON_CLOCK_BACK", "wait"),
        ];
        assert!(Config::resolve(&Options::default(), &Listed(known), NOW).is_ok());
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
    }
    use crate::core::error::Class;
    use std::collections::HashMap;

    const NOW: u64 = 1_795_000_000_000;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name: &str| map.get(name).map(OsString::from)
    }

    fn resolve_env(pairs: &[(&str, &str)]) -> Result<Config> {
        Config::resolve(&Options::default(), &env(pairs), NOW)
    }

    #[test]
    fn defaults_are_the_articles() {
        let c = resolve_env(&[]).unwrap();
        let d = Sourced { value: 0, source: Source::Default };
        assert_eq!(c.clock_back, d);
        assert_eq!(c.worker_id.source, Source::Lease, "with no worker id configured, the lease picks one");
        assert_eq!(c.datacenter_id.source, Source::Lease, "and with no datacenter id either, the datacenter id too");
        assert_eq!(c.lease, Sourced { value: true, source: Source::Default });
        // One directory for the whole host, whatever TMPDIR says.
        #[cfg(target_os = "linux")]
        let host = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm/snowid" } else { "/tmp/snowid" };
        #[cfg(not(target_os = "linux"))]
        let host = default_lease_dir();
        assert_eq!(c.lease_dir, Sourced { value: PathBuf::from(host), source: Source::Default });
        assert_eq!(c.lease_namespace, Sourced { value: None, source: Source::Default });
        assert_eq!(c.max_lead_ms, Sourced { value: 0, source: Source::Default });
        let off = resolve_env(&[("SNOWID_LEASE", "off")]).unwrap();
        assert_eq!((off.datacenter_id, off.worker_id), (d, d));
        assert_eq!(c.epoch, Sourced { value: DEFAULT_EPOCH, source: Source::Default });
        assert_eq!(
            [c.datacenter_bits.value, c.worker_bits.value, c.clock_back_bits.value, c.sequence_bits.value],
            [3, 5, 2, 12]
        );
        assert_eq!(c.on_clock_back.value, ClockBackPolicy::Bits);
        assert_eq!(c.max_wait_ms.value, 1000);
        assert_eq!(c.layout.timestamp_bits(), 41);
        assert_eq!(c.max_ids_per_ms(), 4096);
    }

    #[test]
    fn env_values_and_the_articles_fallback_names() {
        let c = resolve_env(&[("SNOWID_DATACENTER_ID", "7"), ("SNOWID_WORKER_ID", "31"), ("SNOWID_CLOCK_BACK", "3")])
            .unwrap();
        assert_eq!((c.datacenter_id.value, c.worker_id.value, c.clock_back.value), (7, 31, 3));
        assert_eq!(c.worker_id.source, Source::Env);
        // The article's names apply only when the SNOWID_ name is absent.
        let c = resolve_env(&[("datacenterId", "2"), ("workerId", "5")]).unwrap();
        assert_eq!((c.datacenter_id.value, c.worker_id.value), (2, 5));
        let c = resolve_env(&[("SNOWID_WORKER_ID", "4"), ("workerId", "5")]).unwrap();
        assert_eq!(c.worker_id.value, 4);
        // And each id reads its own variable (the article read `workerId` for both).
        let c = resolve_env(&[("workerId", "5")]).unwrap();
        assert_eq!(c.datacenter_id.value, 0);
        let c = resolve_env(&[
            ("SNOWID_EPOCH", "2024-01-01"),
            ("SNOWID_SEQUENCE_BITS", "10"),
            ("SNOWID_WORKER_BITS", "7"),
            ("SNOWID_ON_CLOCK_BACK", "wait"),
            ("SNOWID_MAX_WAIT_MS", "250"),
            ("SNOWID_WORKER_ID", "127"),
        ])
        .unwrap();
        assert_eq!(c.epoch.value, 1_704_067_200_000);
        assert_eq!(c.layout.timestamp_bits(), 41);
        assert_eq!((c.worker_id.value, c.on_clock_back.value, c.max_wait_ms.value), (127, ClockBackPolicy::Wait, 250));
        assert_eq!(resolve_env(&[("SNOWID_EPOCH", "1600000000000")]).unwrap().epoch.value, 1_600_000_000_000);
    }

    #[test]
    fn a_taken_worker_id_may_give_way() {
        let taken = |pairs: &[(&str, &str)], opts: &Options| {
            Config::resolve(opts, &env(pairs), NOW).map(|c| c.worker_id_if_taken)
        };
        let none = Options::default();
        assert_eq!(taken(&[], &none), Ok(Sourced { value: IfTaken::Fail, source: Source::Default }));
        assert_eq!(
            taken(&[("SNOWID_WORKER_ID_IF_TAKEN", "next")], &none),
            Ok(Sourced { value: IfTaken::Next, source: Source::Env })
        );
        assert_eq!(
            taken(&[("SNOWID_WORKER_ID_IF_TAKEN", "fail")], &none),
            Ok(Sourced { value: IfTaken::Fail, source: Source::Env })
        );
        let e = taken(&[("SNOWID_WORKER_ID_IF_TAKEN", "skip")], &none).unwrap_err();
        assert!(e.message().starts_with("SNOWID_WORKER_ID_IF_TAKEN: expected 'fail' or 'next'"), "{e}");
        // The option wins over the variable, and is checked as the variable is.
        let next = Options { worker_id_if_taken: Some(OptionValue::Text("next".into())), ..Options::default() };
        assert_eq!(
            taken(&[("SNOWID_WORKER_ID_IF_TAKEN", "fail")], &next),
            Ok(Sourced { value: IfTaken::Next, source: Source::Option })
        );
        for (v, class, found) in [
            (OptionValue::Text("Next".into()), Class::RangeError, "found \"Next\""),
            (OptionValue::Bool(true), Class::TypeError, "found the boolean true"),
        ] {
            let e = taken(&[], &Options { worker_id_if_taken: Some(v), ..Options::default() }).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, class), "{e}");
            assert!(e.message().starts_with("options.workerIdIfTaken: expected 'fail' or 'next'"), "{e}");
            assert!(e.message().ends_with(found), "{e}");
        }
    }

    #[test]
    fn which_worker_ids_move_on_from_a_taken_slot() {
        let s = |value, source| Sourced { value, source };
        // A setting in the environment covers a worker id from the environment only.
        assert!(IfTaken::moves_on(s(IfTaken::Next, Source::Env), Source::Env));
        assert!(!IfTaken::moves_on(s(IfTaken::Next, Source::Env), Source::Option));
        // One given as an option covers both.
        assert!(IfTaken::moves_on(s(IfTaken::Next, Source::Option), Source::Env));
        assert!(IfTaken::moves_on(s(IfTaken::Next, Source::Option), Source::Option));
        for worker in [Source::StatefulSet, Source::Lease, Source::Default] {
            assert!(!IfTaken::moves_on(s(IfTaken::Next, Source::Option), worker), "{worker:?}");
        }
        for source in [Source::Env, Source::Option, Source::Default] {
            assert!(!IfTaken::moves_on(s(IfTaken::Fail, source), Source::Env));
        }
    }

    #[test]
    fn a_lease_namespace_is_a_short_plain_name() {
        let c = resolve_env(&[("SNOWID_LEASE_NAMESPACE", "test-3.a_b")]).unwrap();
        assert_eq!(c.lease_namespace, Sourced { value: Some("test-3.a_b".to_string()), source: Source::Env });
        let longest = "n".repeat(MAX_NAMESPACE_CHARS);
        assert_eq!(
            resolve_env(&[("SNOWID_LEASE_NAMESPACE", &longest)]).unwrap().lease_namespace.value,
            Some(longest.clone())
        );
        let expected = "expected 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'";
        for bad in ["", "a b", "a/b", "ünï", "a\n", &format!("{longest}n")] {
            let e = resolve_env(&[("SNOWID_LEASE_NAMESPACE", bad)]).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{e}");
            assert_eq!(e.message(), format!("SNOWID_LEASE_NAMESPACE: {expected}, found {}", quote(bad)));
        }
        // The option wins over the variable, and is checked as the variable is.
        let opts = |v| Options { lease_namespace: Some(v), ..Options::default() };
        let c = Config::resolve(
            &opts(OptionValue::Text("mine".into())),
            &env(&[("SNOWID_LEASE_NAMESPACE", "theirs")]),
            NOW,
        )
        .unwrap();
        assert_eq!(c.lease_namespace, Sourced { value: Some("mine".to_string()), source: Source::Option });
        let e = Config::resolve(&opts(OptionValue::Text("x y".into())), &env(&[]), NOW).unwrap_err();
        assert_eq!(e.message(), format!("options.leaseNamespace: {expected}, found \"x y\""));
        let e = Config::resolve(&opts(OptionValue::Number(3.0)), &env(&[]), NOW).unwrap_err();
        assert_eq!(
            (e.class(), e.message()),
            (Class::TypeError, format!("options.leaseNamespace: {expected}, found 3").as_str())
        );
    }

    #[test]
    fn a_relative_lease_dir_is_refused() {
        for dir in ["leases", "./leases", "../x", "~/leases"] {
            let e = resolve_env(&[("SNOWID_LEASE_DIR", dir)]).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{dir}");
            assert!(e.message().contains("an absolute directory path"), "{e}");
        }
        assert!(resolve_env(&[("SNOWID_LEASE_DIR", "/var/lib/snowid")]).is_ok());
    }

    #[test]
    fn numbers_print_as_js_prints_them() {
        for (n, js) in [
            (5e-324, "5e-324"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (-2e-7, "-2e-7"),
            (1.5, "1.5"),
            (1e20, "100000000000000000000"),
        ] {
            assert_eq!(js_number(n), js);
        }
    }

    #[test]
    fn reading_ids_needs_only_the_layout_and_epoch() {
        // Common words are the article's fallback names: an unrelated `workerId` must not stop reading ids.
        let e = env(&[("workerId", "web-1"), ("SNOWID_LEASE", "maybe"), ("SNOWID_SEQUENCE_BITS", "10")]);
        assert!(Config::resolve(&Options::default(), &e, NOW).is_err());
        let layout = Config::resolve_layout(&Options::default(), &e, NOW).unwrap();
        assert_eq!(layout.widths().sequence, 10);
        // A layout too short to generate with is still one to read with.
        let e = env(&[("SNOWID_DATACENTER_BITS", "20"), ("SNOWID_SEQUENCE_BITS", "20")]);
        assert!(Config::resolve(&Options::default(), &e, NOW).unwrap_err().message().contains("10 years"));
        assert_eq!(Config::resolve_layout(&Options::default(), &e, NOW).unwrap().timestamp_bits(), 16);
        // A bad layout variable is still refused.
        let e = env(&[("SNOWID_EPOCH", "soon")]);
        assert!(Config::resolve_layout(&Options::default(), &e, NOW).is_err());
    }

    #[test]
    fn worker_id_lookup_order() {
        // PM2's instance number is not a worker id (every app's first instance is 0): the lease chooses both ids.
        let c = resolve_env(&[("NODE_APP_INSTANCE", "6")]).unwrap();
        assert_eq!((c.datacenter_id.source, c.worker_id.source), (Source::Lease, Source::Lease));
        let c = resolve_env(&[("NODE_APP_INSTANCE", "6"), ("workerId", "2")]).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 2, source: Source::Env });
        let c = resolve_env(&[("NODE_APP_INSTANCE", "6"), ("SNOWID_WORKER_ID", "3"), ("workerId", "2")]).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 3, source: Source::Env });
        let opts = Options { worker_id: Some(OptionValue::Number(1.0)), ..Options::default() };
        let c = Config::resolve(&opts, &env(&[("SNOWID_WORKER_ID", "3")]), NOW).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 1, source: Source::Option });
        let c =
            resolve_env(&[("SNOWID_LEASE", "off"), ("SNOWID_LEASE_DIR", "/srv/leases"), ("SNOWID_MAX_LEAD_MS", "20")])
                .unwrap();
        assert_eq!((c.lease.value, c.lease_dir.value.clone(), c.max_lead_ms.value), (false, "/srv/leases".into(), 20));
        let opts = Options { lease: Some(OptionValue::Bool(false)), ..Options::default() };
        assert_eq!(
            Config::resolve(&opts, &env(&[]), NOW).unwrap().lease,
            Sourced { value: false, source: Source::Option }
        );
        let opts = Options { lease: Some(OptionValue::Text("off".into())), ..Options::default() };
        assert_eq!(Config::resolve(&opts, &env(&[]), NOW).unwrap_err().class(), Class::TypeError);
    }

    #[test]
    fn the_lease_chooses_the_datacenter_id_only_when_neither_id_is_configured() {
        let sources = |c: Config| (c.datacenter_id.source, c.worker_id.source);
        assert_eq!(sources(resolve_env(&[]).unwrap()), (Source::Lease, Source::Lease));
        // A configured datacenter id stays put: the lease chooses only the worker id, within it.
        let c = resolve_env(&[("SNOWID_DATACENTER_ID", "3")]).unwrap();
        assert_eq!((c.datacenter_id, c.worker_id.source), (Sourced { value: 3, source: Source::Env }, Source::Lease));
        assert_eq!(sources(resolve_env(&[("datacenterId", "0")]).unwrap()), (Source::Env, Source::Lease));
        let opts = Options { datacenter_id: Some(OptionValue::Number(2.0)), ..Options::default() };
        assert_eq!(sources(Config::resolve(&opts, &env(&[]), NOW).unwrap()), (Source::Option, Source::Lease));
        // A configured worker id (a number, or a StatefulSet ordinal) leaves the datacenter id at its default.
        assert_eq!(sources(resolve_env(&[("SNOWID_WORKER_ID", "4")]).unwrap()), (Source::Default, Source::Env));
        let ordinal = [("SNOWID_WORKER_ID_FROM", "statefulset"), ("HOSTNAME", "web-2")];
        assert_eq!(sources(resolve_env(&ordinal).unwrap()), (Source::Default, Source::StatefulSet));
        // With leases off, nothing is chosen.
        assert_eq!(sources(resolve_env(&[("SNOWID_LEASE", "off")]).unwrap()), (Source::Default, Source::Default));
    }

    #[test]
    fn options_win_over_env() {
        let opts = Options {
            worker_id: Some(OptionValue::Number(9.0)),
            epoch: Some(OptionValue::Date(1_600_000_000_000.0)),
            on_clock_back: Some(OptionValue::Text("throw".into())),
            ..Options::default()
        };
        let c = Config::resolve(&opts, &env(&[("SNOWID_WORKER_ID", "4"), ("SNOWID_DATACENTER_ID", "1")]), NOW).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 9, source: Source::Option });
        assert_eq!(c.datacenter_id, Sourced { value: 1, source: Source::Env });
        assert_eq!(c.epoch, Sourced { value: 1_600_000_000_000, source: Source::Option });
        assert_eq!(c.on_clock_back.value, ClockBackPolicy::Throw);
    }

    #[test]
    fn bad_env_values_are_refused_with_the_variable_value_and_range() {
        let cases: &[(&str, &str, Class)] = &[
            ("SNOWID_WORKER_ID", "32", Class::RangeError),
            ("SNOWID_WORKER_ID", "-1", Class::RangeError),
            ("SNOWID_WORKER_ID", "1.5", Class::TypeError),
            ("SNOWID_WORKER_ID", "abc", Class::TypeError),
            ("SNOWID_WORKER_ID", "", Class::TypeError),
            ("SNOWID_WORKER_ID", " 3", Class::TypeError),
            ("SNOWID_WORKER_ID", "3 ", Class::TypeError),
            ("SNOWID_WORKER_ID", "0x10", Class::TypeError),
            ("SNOWID_WORKER_ID", "3abc", Class::TypeError),
            ("SNOWID_WORKER_ID", "+3", Class::TypeError),
            ("SNOWID_WORKER_ID", "99999999999999999999999", Class::RangeError),
            ("workerId", "32", Class::RangeError),
            ("SNOWID_DATACENTER_ID", "8", Class::RangeError),
            ("datacenterId", "x", Class::TypeError),
            ("SNOWID_CLOCK_BACK", "4", Class::RangeError),
            ("SNOWID_SEQUENCE_BITS", "64", Class::RangeError),
            ("SNOWID_WORKER_BITS", "-5", Class::RangeError),
            ("SNOWID_EPOCH", "2999-01-01", Class::RangeError),
            ("SNOWID_EPOCH", "yesterday", Class::TypeError),
            ("SNOWID_EPOCH", "2020-02-01T00:00:00", Class::TypeError),
            ("SNOWID_EPOCH", "-5", Class::TypeError),
            ("SNOWID_ON_CLOCK_BACK", "ignore", Class::RangeError),
            ("SNOWID_MAX_WAIT_MS", "60001", Class::RangeError),
            ("SNOWID_MAX_LEAD_MS", "60001", Class::RangeError),
            ("SNOWID_MAX_LEAD_MS", "5ms", Class::TypeError),
            ("SNOWID_LEASE", "no", Class::RangeError),
            ("SNOWID_LEASE_DIR", "", Class::TypeError),
        ];
        for &(name, value, class) in cases {
            let e = resolve_env(&[(name, value)]).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, class), "{name}={value:?}: {e}");
            assert!(e.message().starts_with(&format!("{name}: expected ")), "{e}");
            assert!(e.message().contains(&quote(value)) || name == "SNOWID_EPOCH", "{e}");
        }
        // A variable snowid does not read is not checked: PM2's NODE_APP_INSTANCE counts instances of any number.
        assert!(resolve_env(&[("NODE_APP_INSTANCE", "32")]).is_ok());
        let e = resolve_env(&[("SNOWID_WORKER_ID", "32")]).unwrap_err();
        assert_eq!(e.message(), "SNOWID_WORKER_ID: expected an integer from 0 to 31 (workerBits is 5), found \"32\"");
        // The range follows the configured width.
        assert!(resolve_env(&[("SNOWID_WORKER_BITS", "6"), ("SNOWID_WORKER_ID", "32")]).is_ok());
        let e = resolve_env(&[("SNOWID_WORKER_BITS", "0"), ("SNOWID_WORKER_ID", "1")]).unwrap_err();
        assert!(e.message().contains("0 to 0"), "{e}");
    }

    #[test]
    fn the_worker_id_can_come_from_a_statefulset_ordinal() {
        let from = ("SNOWID_WORKER_ID_FROM", "statefulset");
        let c = resolve_env(&[from, ("HOSTNAME", "web-7")]).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 7, source: Source::StatefulSet });
        assert_eq!(c.worker_id.source.as_str(), "statefulset");
        // A number given for the worker id wins; PM2's instance number is not read.
        let c = resolve_env(&[from, ("HOSTNAME", "web-7"), ("SNOWID_WORKER_ID", "2")]).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 2, source: Source::Env });
        let c = resolve_env(&[from, ("HOSTNAME", "web-7"), ("workerId", "4")]).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 4, source: Source::Env });
        let c = resolve_env(&[from, ("HOSTNAME", "web-7"), ("NODE_APP_INSTANCE", "1")]).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 7, source: Source::StatefulSet });
        let opts = Options { worker_id: Some(OptionValue::Number(1.0)), ..Options::default() };
        let c = Config::resolve(&opts, &env(&[from, ("HOSTNAME", "web-7")]), NOW).unwrap();
        assert_eq!(c.worker_id, Sourced { value: 1, source: Source::Option });
        // The range follows workerBits.
        let e = resolve_env(&[from, ("HOSTNAME", "web-32")]).unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError));
        assert!(e.message().contains("0 to 31 (workerBits is 5)"), "{e}");
        let c =
            resolve_env(&[from, ("HOSTNAME", "web-32"), ("SNOWID_WORKER_BITS", "6"), ("SNOWID_DATACENTER_BITS", "2")]);
        assert_eq!(c.unwrap().worker_id.value, 32);
        let e = resolve_env(&[from, ("HOSTNAME", "web")]).unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::TypeError));
        // A bad SNOWID_WORKER_ID_FROM is refused even when a worker id is given.
        let e = resolve_env(&[("SNOWID_WORKER_ID_FROM", "pod"), ("SNOWID_WORKER_ID", "2")]).unwrap_err();
        assert!(e.message().starts_with("SNOWID_WORKER_ID_FROM: expected"), "{e}");
        for bad in ["StatefulSet", "", "hostname", "statefulset "] {
            let e = resolve_env(&[("SNOWID_WORKER_ID_FROM", bad)]).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{e}");
            assert!(e.message().starts_with("SNOWID_WORKER_ID_FROM: expected \"statefulset\""), "{e}");
        }
        assert_eq!(
            resolve_env(&[from, ("HOSTNAME", "web-7")]).unwrap().worker_id_from_statefulset,
            Sourced { value: true, source: Source::Env }
        );
        assert_eq!(
            resolve_env(&[]).unwrap().worker_id_from_statefulset,
            Sourced { value: false, source: Source::Default }
        );
    }

    #[test]
    fn the_statefulset_ordinal_can_be_asked_for_by_option() {
        let opt = |v: OptionValue| Options { worker_id_from: Some(v), ..Options::default() };
        let c = Config::resolve(&opt(OptionValue::Text("statefulset".into())), &env(&[("HOSTNAME", "web-7")]), NOW)
            .unwrap();
        assert_eq!(c.worker_id, Sourced { value: 7, source: Source::StatefulSet });
        assert_eq!(c.worker_id_from_statefulset, Sourced { value: true, source: Source::Option });
        for (v, class) in
            [(OptionValue::Text("pod".into()), Class::RangeError), (OptionValue::Bool(true), Class::TypeError)]
        {
            let e = Config::resolve(&opt(v), &env(&[("HOSTNAME", "web-7")]), NOW).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, class), "{e}");
            assert!(e.message().starts_with("options.workerIdFrom: expected \"statefulset\""), "{e}");
        }
    }

    #[test]
    fn widths_are_validated_as_a_whole() {
        let e = resolve_env(&[("SNOWID_SEQUENCE_BITS", "16")]).unwrap_err();
        assert_eq!(e.class(), Class::RangeError);
        assert!(e.message().starts_with("layout: expected a timestamp field that lasts at least 10 years"), "{e}");
        assert!(e.message().ends_with("(set by SNOWID_SEQUENCE_BITS)"), "{e}");
        let e = resolve_env(&[("SNOWID_SEQUENCE_BITS", "32"), ("SNOWID_WORKER_BITS", "31")]).unwrap_err();
        assert!(e.message().contains("at most 62 bits"), "{e}");
        // A field is at most 32 bits wide, even where the sum leaves the timestamp room.
        let e = resolve_env(&[("SNOWID_SEQUENCE_BITS", "33")]).unwrap_err();
        assert_eq!(e.class(), Class::RangeError);
        assert_eq!(e.message(), "SNOWID_SEQUENCE_BITS: expected an integer from 0 to 32, found \"33\"");
        let e = Config::resolve(
            &Options {
                datacenter_bits: Some(OptionValue::Number(0.0)),
                worker_bits: Some(OptionValue::Number(0.0)),
                clock_back_bits: Some(OptionValue::Number(0.0)),
                sequence_bits: Some(OptionValue::Number(0.0)),
                ..Options::default()
            },
            &env(&[]),
            NOW,
        )
        .unwrap_err();
        assert!(e.message().contains("at most 52 timestamp bits"), "{e}");
        // A younger epoch leaves room for a wider sequence.
        assert!(resolve_env(&[("SNOWID_SEQUENCE_BITS", "14"), ("SNOWID_EPOCH", "2026-01-01")]).is_ok());
    }

    #[test]
    fn bad_option_values_are_refused() {
        let num = |n: f64| Some(OptionValue::Number(n));
        let cases: Vec<(Options, &str, Class)> = vec![
            (
                Options { worker_id: num(32.0), ..Default::default() },
                "options.workerId: expected an integer from 0 to 31 (workerBits is 5), found 32",
                Class::RangeError,
            ),
            (Options { worker_id: num(-1.0), ..Default::default() }, "found -1", Class::RangeError),
            (Options { worker_id: num(0.6), ..Default::default() }, "found 0.6", Class::RangeError),
            (Options { worker_id: num(f64::NAN), ..Default::default() }, "found NaN", Class::RangeError),
            (Options { worker_id: num(f64::INFINITY), ..Default::default() }, "found Infinity", Class::RangeError),
            (Options { worker_id: num(4294967301.0), ..Default::default() }, "found 4294967301", Class::RangeError),
            (
                Options { worker_id: Some(OptionValue::Text("3".into())), ..Default::default() },
                "found the string \"3\"",
                Class::TypeError,
            ),
            (
                Options { datacenter_id: Some(OptionValue::Other("boolean true".into())), ..Default::default() },
                "options.datacenterId: expected",
                Class::TypeError,
            ),
            (
                Options { epoch: Some(OptionValue::Date(f64::NAN)), ..Default::default() },
                "found an invalid Date",
                Class::RangeError,
            ),
            (Options { epoch: num(-1.0), ..Default::default() }, "found -1", Class::RangeError),
            (Options { epoch: num(NOW as f64 + 1e9), ..Default::default() }, "in the future", Class::RangeError),
            (
                Options { epoch: Some(OptionValue::Text("2020-02-30".into())), ..Default::default() },
                "options.epoch",
                Class::TypeError,
            ),
            (
                Options { on_clock_back: Some(OptionValue::Number(1.0)), ..Default::default() },
                "options.onClockBack: expected one of",
                Class::TypeError,
            ),
            (
                Options { on_clock_back: Some(OptionValue::Text("Bits".into())), ..Default::default() },
                "found \"Bits\"",
                Class::RangeError,
            ),
            (Options { max_wait_ms: num(-5.0), ..Default::default() }, "options.maxWaitMs", Class::RangeError),
        ];
        for (opts, needle, class) in cases {
            let e = Config::resolve(&opts, &env(&[]), NOW).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, class), "{e}");
            assert!(e.message().contains(needle), "{needle:?} not in {e}");
        }
    }

    #[test]
    fn time_arguments() {
        let ok = |v: OptionValue| time_arg(&v, "time").unwrap();
        assert_eq!(ok(OptionValue::Number(1_600_000_000_000.0)), 1_600_000_000_000);
        assert_eq!(ok(OptionValue::Date(0.0)), 0);
        assert_eq!(ok(OptionValue::Text("1600000000000".into())), 1_600_000_000_000);
        assert_eq!(ok(OptionValue::Text("2024-01-01".into())), 1_704_067_200_000);
        assert_eq!(ok(OptionValue::Text("2024-01-01T08:00:00.001+08:00".into())), 1_704_067_200_001);
        for (v, class) in [
            (OptionValue::Number(-1.0), Class::RangeError),
            (OptionValue::Number(0.5), Class::RangeError),
            (OptionValue::Number(f64::NAN), Class::RangeError),
            (OptionValue::Date(f64::NAN), Class::RangeError),
            (OptionValue::Text("2024-01-01T00:00:00".into()), Class::TypeError),
            (OptionValue::Text("".into()), Class::TypeError),
            (OptionValue::Text("99999999999999999999999".into()), Class::RangeError),
            (OptionValue::Bool(true), Class::TypeError),
            (OptionValue::Other("null".into()), Class::TypeError),
        ] {
            let e = time_arg(&v, "time").unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidArgument, class), "{v:?}: {e}");
            assert!(e.message().starts_with("time: expected a Date, Unix ms"), "{e}");
        }
    }

    #[test]
    fn non_utf8_env_is_refused() {
        use std::os::unix::ffi::OsStringExt;
        let bad = |name: &str| (name == "SNOWID_WORKER_ID").then(|| OsString::from_vec(vec![0xff, b'1']));
        let e = Config::resolve(&Options::default(), &bad, NOW).unwrap_err();
        assert_eq!(e.class(), Class::TypeError);
        assert!(e.message().starts_with("SNOWID_WORKER_ID: expected valid UTF-8"), "{e}");
    }
}
