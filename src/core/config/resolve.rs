//! The resolver: options over the environment over the defaults, each value checked, the whole validated against
//! the time now.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::super::env::{EnvSource, Wanted};
use super::super::error::{quote, Code, Error, Result};
use super::super::generator::ClockBackPolicy;
use super::super::layout::{max_value, Layout, Widths, DEFAULT_EPOCH};
use super::super::number::{digits, whole};
use super::super::replicas;
use super::super::statefulset;
use super::super::suggest::nearest;
use super::options::{
    default_lease_dir, known_vars, short_vars, Opt, OptionValue, Options, DEFAULT_MAX_WAIT_MS, MAX_NAMESPACE_CHARS,
};
use super::resolved::{identity_chosen, Config, IfTaken, Source, Sourced, WorkerIdFrom};
use super::values::{check_epoch, describe, env_integer, epoch_text, expected_epoch, is_ms_text, option_integer};

/// Every variable a configuration reads besides the `SNOWID_` ones: the JS article's short names, a StatefulSet
/// pod's host name, and those that say where replicas are the norm. A process snapshot takes them in its one pass.
pub fn wanted() -> Wanted {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES
        .get_or_init(|| short_vars().chain([statefulset::HOST_VAR]).chain(replicas::NAMES.iter().copied()).collect());
    Wanted { names }
}

/// Refuses a `SNOWID_*` variable that snowid does not read, naming the known one nearest to it.
pub fn check_var_names(env: &dyn EnvSource) -> Result<()> {
    let mut unknown: Vec<String> = env.snowid_names().into_iter().filter(|n| !known_vars().any(|k| k == n)).collect();
    unknown.sort();
    let Some(name) = unknown.first() else {
        return Ok(());
    };
    let nearest = nearest(name, known_vars()).unwrap_or("SNOWID_WORKER_ID");
    let shown: String = name.chars().take(60).collect();
    Err(Error::range_error(
        Code::InvalidConfig,
        &shown,
        &format!("a variable snowid reads (did you mean {nearest}?)"),
        "an unknown SNOWID_ variable: rename it or unset it",
    ))
}

/// A raw value and where it was found: an option (by its JS name) or a variable. A name is made into message text
/// only for a refused value, so a good configuration formats nothing.
enum Raw<'a> {
    Opt(&'a OptionValue, &'static str),
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

impl<'a> Resolver<'a> {
    /// The raw value for an option: the option itself, else the first of its variables present.
    fn find(&self, opt: Opt) -> Result<Option<Raw<'a>>> {
        let spec = opt.spec();
        if let Some(v) = self.opts.get(opt) {
            return Ok(Some(Raw::Opt(v, spec.name)));
        }
        for &name in spec.vars {
            if let Some(os) = self.env.var(name) {
                let text = os.into_string().map_err(|os| {
                    Error::type_error(Code::InvalidConfig, name, "valid UTF-8 text", &quote(&os.to_string_lossy()))
                })?;
                return Ok(Some(Raw::Env(text, name)));
            }
        }
        Ok(None)
    }

    /// An integer setting from 0 to the largest value the table gives it.
    fn bounded(&self, opt: Opt, default: u64) -> Result<Sourced<u64>> {
        // Every option resolved here has its range in the table (`documented_tests.rs` checks it).
        self.integer(opt, opt.spec().max.unwrap_or(0), &String::new, default)
    }

    /// An integer setting from 0 to `max`; `hint` (made only for a message) follows the range.
    fn integer(&self, opt: Opt, max: u64, hint: &dyn Fn() -> String, default: u64) -> Result<Sourced<u64>> {
        let expected = || format!("an integer from 0 to {max}{}", hint());
        match self.find(opt)? {
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
                let value = match digits(&text).filter(|&n| n <= max) {
                    Some(value) => value,
                    None => env_integer(&text, name, &expected(), max)?,
                };
                Ok(Sourced { value, source: Source::Env })
            }
        }
    }

    fn epoch(&self, now: u64) -> Result<Sourced<u64>> {
        let (value, numeric, source, name) = match self.find(Opt::Epoch)? {
            None => return Ok(Sourced { value: DEFAULT_EPOCH, source: Source::Default }),
            Some(raw) => epoch_value(raw, now)?,
        };
        Ok(Sourced { value: check_epoch(value, numeric, &name, now)?, source })
    }

    /// A setting that is one of a few words: a string option, else its variable, else `default`. A value of
    /// another JS type is a `TypeError`, a word `parse` does not know a `RangeError`.
    fn word<T>(
        &self,
        opt: Opt,
        expected: &dyn Fn() -> String,
        parse: impl Fn(&str) -> Option<T>,
        default: T,
    ) -> Result<Sourced<T>> {
        let (text, source, name) = match self.find(opt)? {
            None => return Ok(Sourced { value: default, source: Source::Default }),
            Some(Raw::Opt(OptionValue::Text(t), js)) => (t.clone(), Source::Option, option_name(js)),
            Some(Raw::Opt(other, js)) => {
                return Err(Error::type_error(Code::InvalidConfig, &option_name(js), &expected(), &describe(other)));
            }
            Some(Raw::Env(t, name)) => (t, Source::Env, name.to_string()),
        };
        match parse(&text) {
            Some(value) => Ok(Sourced { value, source }),
            None => Err(Error::range_error(Code::InvalidConfig, &name, &expected(), &quote(&text))),
        }
    }

    /// A switch: a boolean option, else its variable, one of the two words `on` (true) and `off`.
    fn switch(&self, opt: Opt, words: [&str; 2], expected: &str, default: bool) -> Result<Sourced<bool>> {
        match self.find(opt)? {
            None => Ok(Sourced { value: default, source: Source::Default }),
            Some(Raw::Opt(OptionValue::Bool(b), _)) => Ok(Sourced { value: *b, source: Source::Option }),
            Some(Raw::Opt(other, js)) => {
                Err(Error::type_error(Code::InvalidConfig, &option_name(js), expected, &describe(other)))
            }
            Some(Raw::Env(text, name)) => match text.as_str() {
                t if t == words[0] => Ok(Sourced { value: true, source: Source::Env }),
                t if t == words[1] => Ok(Sourced { value: false, source: Source::Env }),
                _ => Err(Error::range_error(Code::InvalidConfig, name, expected, &quote(&text))),
            },
        }
    }

    /// Text an option gives as a string or a variable gives, and its name for messages; `None` when neither does.
    fn text(&self, opt: Opt, expected: &str) -> Result<Option<(String, Source, String)>> {
        Ok(match self.find(opt)? {
            None => None,
            Some(Raw::Opt(OptionValue::Text(t), js)) => Some((t.clone(), Source::Option, option_name(js))),
            Some(Raw::Opt(other, js)) => {
                return Err(Error::type_error(Code::InvalidConfig, &option_name(js), expected, &describe(other)));
            }
            Some(Raw::Env(t, name)) => Some((t, Source::Env, name.to_string())),
        })
    }

    /// `SNOWID_LEASE_DIR` or `leaseDir`: with the lease on, an absolute directory path; with it off, the directory
    /// is never used, so any text is taken as it is.
    fn lease_dir(&self, lease: bool) -> Result<Sourced<PathBuf>> {
        let expected = "a non-empty directory path";
        let Some((text, source, name)) = self.text(Opt::LeaseDir, expected)? else {
            return Ok(Sourced { value: default_lease_dir(), source: Source::Default });
        };
        if !lease {
            return Ok(Sourced { value: PathBuf::from(text), source });
        }
        if text.is_empty() || text.contains('\0') {
            return Err(Error::type_error(Code::InvalidConfig, &name, expected, &quote(&text)));
        }
        // A relative path would mean a different directory in each process's working directory, and so a
        // different set of leases: two processes could both take worker 0.
        if !is_absolute(&text) {
            let expected = "an absolute directory path (a relative one differs between working directories)";
            return Err(Error::range_error(Code::InvalidConfig, &name, expected, &quote(&text)));
        }
        Ok(Sourced { value: PathBuf::from(text), source })
    }

    /// `SNOWID_LEASE_NAMESPACE` or `leaseNamespace`: 1 to [`MAX_NAMESPACE_CHARS`] letters, digits, `.`, `_` or `-`.
    fn lease_namespace(&self) -> Result<Sourced<Option<String>>> {
        let expected = format!("1 to {MAX_NAMESPACE_CHARS} characters of A-Z, a-z, 0-9, '.', '_' and '-'");
        let Some((text, source, name)) = self.text(Opt::LeaseNamespace, &expected)? else {
            return Ok(Sourced { value: None, source: Source::Default });
        };
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if text.is_empty() || text.len() > MAX_NAMESPACE_CHARS || !text.chars().all(allowed) {
            return Err(Error::range_error(Code::InvalidConfig, &name, &expected, &quote(&text)));
        }
        Ok(Sourced { value: Some(text), source })
    }
}

/// Whether `path` is absolute on this platform. The WASI build runs on any host, Windows included, and its own paths
/// are Unix-like: there a Windows path from the host's environment is absolute too.
fn is_absolute(path: &str) -> bool {
    std::path::Path::new(path).is_absolute() || cfg!(target_os = "wasi") && windows_absolute(path)
}

/// Whether `path` is an absolute Windows path: `C:\x`, `C:/x`, or `\\server\share` (and `\\?\...`).
pub(super) fn windows_absolute(path: &str) -> bool {
    let drive = matches!(path.as_bytes(), [d, b':', b'\\' | b'/', ..] if d.is_ascii_alphabetic());
    drive || path.starts_with(r"\\")
}

/// An epoch given as an option or a variable: its Unix ms, whether it was given as a number of ms (a JS number, or
/// digits) rather than a date, where it came from, and its name for messages.
fn epoch_value(raw: Raw<'_>, now: u64) -> Result<(u64, bool, Source, String)> {
    let expected = expected_epoch(now);
    Ok(match raw {
        Raw::Opt(v, js) => {
            let name = option_name(js);
            let (ms, numeric) = match v {
                OptionValue::Number(_) => (option_integer(v, &name, &expected, u64::MAX)?, true),
                OptionValue::Date(t) if t.is_nan() => {
                    return Err(Error::range_error(Code::InvalidConfig, &name, &expected, "an invalid Date"));
                }
                OptionValue::Date(t) => (option_integer(&OptionValue::Number(*t), &name, &expected, u64::MAX)?, false),
                OptionValue::Text(text) => (epoch_text(text, &name, &expected)?, is_ms_text(text)),
                other @ (OptionValue::Other(_) | OptionValue::Bool(_)) => {
                    return Err(Error::type_error(Code::InvalidConfig, &name, &expected, &describe(other)));
                }
            };
            (ms, numeric, Source::Option, name)
        }
        Raw::Env(text, name) => (epoch_text(&text, name, &expected)?, is_ms_text(&text), Source::Env, name.to_string()),
    })
}

/// What a layout is for: generating ids needs a timestamp field that lasts 10 more years, reading them does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
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

fn to_u32(s: Sourced<u64>) -> Sourced<u32> {
    // Every u32 field is range-checked below 2^32 by its caller.
    Sourced { value: s.value as u32, source: s.source }
}

impl Resolver<'_> {
    /// Resolves the four widths and the epoch, and validates them as a layout for `what`.
    fn layout(&self, now: u64, what: Use) -> Result<LayoutParts> {
        let d = Widths::default();
        // Each field but the timestamp is at most 32 bits: its values are 32-bit numbers everywhere (encode's
        // arguments, decode's results), so a wider field could not be read or written whole.
        let bits = |opt, default: u32| self.bounded(opt, default.into());
        let datacenter_bits = bits(Opt::DatacenterBits, d.datacenter).map(to_u32)?;
        let worker_bits = bits(Opt::WorkerBits, d.worker).map(to_u32)?;
        let clock_back_bits = bits(Opt::ClockBackBits, d.clock_back).map(to_u32)?;
        let sequence_bits = bits(Opt::SequenceBits, d.sequence).map(to_u32)?;
        let epoch = self.epoch(now)?;
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
                (Opt::DatacenterBits, &datacenter_bits),
                (Opt::WorkerBits, &worker_bits),
                (Opt::ClockBackBits, &clock_back_bits),
                (Opt::SequenceBits, &sequence_bits),
            ]
            .iter()
            .filter_map(|(opt, s)| match s.source {
                Source::Option => Some(option_name(opt.spec().name)),
                Source::Env => opt.spec().vars.first().map(|v| v.to_string()),
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

impl Config {
    /// Resolves options over the environment over the defaults, and validates the result as a whole against the
    /// time `now` (Unix ms).
    pub fn resolve(opts: &Options, env: &dyn EnvSource, now: u64) -> Result<Config> {
        check_var_names(env)?;
        let r = Resolver { opts, env };
        let LayoutParts { datacenter_bits, worker_bits, clock_back_bits, sequence_bits, epoch, layout } =
            r.layout(now, Use::Generate)?;
        let field = |opt, bits: &Sourced<u32>, bits_name: &str| {
            let hint = || format!(" ({bits_name} is {})", bits.value);
            r.integer(opt, max_value(bits.value), &hint, 0).map(to_u32)
        };
        let mut datacenter_id = field(Opt::DatacenterId, &datacenter_bits, "datacenterBits")?;
        let lease = r.switch(Opt::Lease, ["on", "off"], "'on' or 'off' (true or false as an option)", true)?;
        let mut worker_id = field(Opt::WorkerId, &worker_bits, "workerBits")?;
        // A worker id given as a number wins over SNOWID_WORKER_ID_FROM. PM2's NODE_APP_INSTANCE is not read: every
        // app's first instance is 0, so two apps on one host would claim one slot.
        let from = |text: &str| WorkerIdFrom::parse(text).map(Some);
        let worker_id_from = r.word(Opt::WorkerIdFrom, &statefulset::expected_from, from, None)?;
        if worker_id.source == Source::Default && worker_id_from.value == Some(WorkerIdFrom::StatefulSet) {
            let hint = format!(" (workerBits is {})", worker_bits.value);
            let value = statefulset::worker_id(env, max_value(worker_bits.value), &hint)? as u32;
            worker_id = Sourced { value, source: Source::StatefulSet };
        }
        if worker_id.source == Source::Default && lease.value {
            // Taken by `identity::bind_worker` once the lease is acquired. With no datacenter id configured either,
            // the lease chooses both: datacenterId 0's worker ids first, then 1's, and so on.
            worker_id.source = Source::Lease;
            if datacenter_id.source == Source::Default {
                datacenter_id.source = Source::Lease;
            }
        }
        let clock_back = field(Opt::ClockBack, &clock_back_bits, "clockBackBits")?;
        let policy = || "one of 'bits', 'wait' or 'throw'".to_string();
        let on_clock_back = r.word(Opt::OnClockBack, &policy, ClockBackPolicy::parse, ClockBackPolicy::default())?;
        let max_wait_ms = r.bounded(Opt::MaxWaitMs, DEFAULT_MAX_WAIT_MS)?;
        let max_lead_ms = r.bounded(Opt::MaxLeadMs, 0)?;
        let lease_dir = r.lease_dir(lease.value)?;
        let single_instance =
            r.switch(Opt::SingleInstance, ["true", "false"], "'true' or 'false' (a boolean as an option)", false)?;
        let unchosen = !single_instance.value && !identity_chosen(worker_id.source, datacenter_id.source);
        let environment = if unchosen { replicas::detect(env, std::path::Path::new(replicas::ROOT)) } else { None };
        let lease_namespace = r.lease_namespace()?;
        let if_taken = || "'fail' or 'next'".to_string();
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
            worker_id_if_taken: r.word(Opt::WorkerIdIfTaken, &if_taken, IfTaken::parse, IfTaken::Fail)?,
            worker_id_from,
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
}
