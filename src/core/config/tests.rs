//! The configuration's tests: precedence, validation, and what each source gives.

use std::ffi::OsString;
use std::path::PathBuf;

use super::options::MAX_NAMESPACE_CHARS;
use super::*;
use crate::core::env::{EnvSource, ProcessSnapshot, VAR_PREFIX};
use crate::core::error::Class;
use crate::core::error::{quote, Code, Result};
use crate::core::generator::ClockBackPolicy;
use crate::core::layout::DEFAULT_EPOCH;
use crate::core::replicas;
use crate::core::testing::NOW;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name: &str| map.get(name).map(OsString::from)
}

fn resolve_env(pairs: &[(&str, &str)]) -> Result<Config> {
    Config::resolve(&Options::default(), &env(pairs), NOW)
}

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
    let snapshot = ProcessSnapshot::take(wanted());
    for name in ["datacenterId", "workerId", "HOSTNAME"].into_iter().chain(replicas::NAMES.iter().copied()).chain([
        "SNOWID_WORKER_ID",
        "SNOWID_LEASE_DIR",
        "PATH",
        "HOME",
    ]) {
        assert_eq!(snapshot.var(name), std::env::var_os(name), "{name}");
    }
    let mut listed = snapshot.snowid_names();
    let mut expected: Vec<String> =
        std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).filter(|k| k.starts_with(VAR_PREFIX)).collect();
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
        ("SNOWID_LEASE_DIR", ABSOLUTE),
        ("SNOWID_WORKER_ID_IF_TAKEN", "next"),
        ("SNOWID_MAX_LEAD_MS", "5"),
        ("SNOWID_MAX_WAIT_MS", "5"),
        ("SNOWID_ON_CLOCK_BACK", "wait"),
    ];
    assert!(Config::resolve(&Options::default(), &Listed(known), NOW).is_ok());
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
    let host = PathBuf::from(if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm/snowid" } else { "/tmp/snowid" });
    // The machine's ProgramData folder, as the shell knows it (here it agrees with the environment).
    #[cfg(windows)]
    let host = PathBuf::from(std::env::var_os("ProgramData").unwrap()).join("snowid");
    #[cfg(not(any(target_os = "linux", windows)))]
    let host = super::options::default_lease_dir();
    assert_eq!(c.lease_dir, Sourced { value: host, source: Source::Default });
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
    let c =
        resolve_env(&[("SNOWID_DATACENTER_ID", "7"), ("SNOWID_WORKER_ID", "31"), ("SNOWID_CLOCK_BACK", "3")]).unwrap();
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
    let taken =
        |pairs: &[(&str, &str)], opts: &Options| Config::resolve(opts, &env(pairs), NOW).map(|c| c.worker_id_if_taken);
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
    let c =
        Config::resolve(&opts(OptionValue::Text("mine".into())), &env(&[("SNOWID_LEASE_NAMESPACE", "theirs")]), NOW)
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

/// An absolute directory path on this platform.
#[cfg(not(windows))]
const ABSOLUTE: &str = "/var/lib/snowid";
#[cfg(windows)]
const ABSOLUTE: &str = r"C:\ProgramData\app";

#[test]
fn a_relative_lease_dir_is_refused() {
    // On Windows, a path on a drive's working directory (`C:leases`) or on the current drive (`\leases`) is relative
    // too.
    let relative: &[&str] = if cfg!(windows) { &["C:leases", r"\leases"] } else { &[] };
    for dir in ["leases", "./leases", "../x", "~/leases"].iter().chain(relative) {
        let e = resolve_env(&[("SNOWID_LEASE_DIR", dir)]).unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{dir}");
        assert!(e.message().contains("an absolute directory path"), "{e}");
    }
    assert!(resolve_env(&[("SNOWID_LEASE_DIR", ABSOLUTE)]).is_ok());
    // With the lease off the directory is never used, and never checked.
    for dir in ["leases", "", r"C:\leases", "/srv/leases"] {
        let c = resolve_env(&[("SNOWID_LEASE", "off"), ("SNOWID_LEASE_DIR", dir)]).unwrap();
        assert_eq!(c.lease_dir, Sourced { value: PathBuf::from(dir), source: Source::Env });
    }
}

#[test]
fn windows_paths_are_told_apart_for_the_wasi_build_on_windows() {
    use super::resolve::windows_absolute;
    for dir in [r"C:\snowid", "c:/snowid", r"\\server\share\snowid", r"\\?\C:\snowid"] {
        assert!(windows_absolute(dir), "{dir}");
    }
    for dir in ["C:snowid", r"\snowid", "snowid", "/srv/snowid", "1:/x", ""] {
        assert!(!windows_absolute(dir), "{dir}");
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
    let c = resolve_env(&[("SNOWID_LEASE", "off"), ("SNOWID_LEASE_DIR", "/srv/leases"), ("SNOWID_MAX_LEAD_MS", "20")])
        .unwrap();
    assert_eq!((c.lease.value, c.lease_dir.value.clone(), c.max_lead_ms.value), (false, "/srv/leases".into(), 20));
    let opts = Options { lease: Some(OptionValue::Bool(false)), ..Options::default() };
    assert_eq!(Config::resolve(&opts, &env(&[]), NOW).unwrap().lease, Sourced { value: false, source: Source::Option });
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
    let c = resolve_env(&[from, ("HOSTNAME", "web-32"), ("SNOWID_WORKER_BITS", "6"), ("SNOWID_DATACENTER_BITS", "2")]);
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
        resolve_env(&[from, ("HOSTNAME", "web-7")]).unwrap().worker_id_from,
        Sourced { value: Some(WorkerIdFrom::StatefulSet), source: Source::Env }
    );
    assert_eq!(resolve_env(&[]).unwrap().worker_id_from, Sourced { value: None, source: Source::Default });
}

#[test]
fn the_statefulset_ordinal_can_be_asked_for_by_option() {
    let opt = |v: OptionValue| Options { worker_id_from: Some(v), ..Options::default() };
    let c =
        Config::resolve(&opt(OptionValue::Text("statefulset".into())), &env(&[("HOSTNAME", "web-7")]), NOW).unwrap();
    assert_eq!(c.worker_id, Sourced { value: 7, source: Source::StatefulSet });
    assert_eq!(c.worker_id_from, Sourced { value: Some(WorkerIdFrom::StatefulSet), source: Source::Option });
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
fn non_utf8_env_is_refused() {
    // A byte that is not UTF-8 on Unix; an unpaired surrogate on Windows.
    #[cfg(unix)]
    let text = <OsString as std::os::unix::ffi::OsStringExt>::from_vec(vec![0xff, b'1']);
    #[cfg(windows)]
    let text = <OsString as std::os::windows::ffi::OsStringExt>::from_wide(&[0xd800, u16::from(b'1')]);
    let bad = |name: &str| (name == "SNOWID_WORKER_ID").then(|| OsString::from(&text));
    let e = Config::resolve(&Options::default(), &bad, NOW).unwrap_err();
    assert_eq!(e.class(), Class::TypeError);
    assert!(e.message().starts_with("SNOWID_WORKER_ID: expected valid UTF-8"), "{e}");
}

/// An epoch resolved from the option, the variable and a layout's option, each given as `text` (the option also as
/// the number it is, when it is one).
fn epoch_everywhere(text: &str) -> Vec<(String, Result<u64>)> {
    let mut given = vec![("SNOWID_EPOCH".to_string(), Options::default(), vec![("SNOWID_EPOCH", text)])];
    let option = |v: OptionValue| Options { epoch: Some(v), ..Default::default() };
    given.push(("options.epoch as text".into(), option(OptionValue::Text(text.into())), vec![]));
    if let Ok(n) = text.parse::<f64>() {
        given.push(("options.epoch as a number".into(), option(OptionValue::Number(n)), vec![]));
    }
    let mut out = Vec::new();
    for (what, opts, vars) in given {
        let vars: Vec<(&str, &str)> = vars.into_iter().collect();
        let generating = Config::resolve(&opts, &env(&vars), NOW).map(|c| c.epoch.value);
        let reading = Config::resolve_layout(&opts, &env(&vars), NOW).map(|l| l.epoch());
        out.push((what.clone(), generating));
        out.push((format!("{what}, for reading"), reading));
    }
    out
}

#[test]
fn an_epoch_given_as_a_number_is_0_or_from_2000_so_seconds_are_refused() {
    // The Unix epoch (Mastodon's ids), 2000-01-01 (Misskey's), Twitter's, Discord's and snowid's.
    for ms in [0, 946_684_800_000, 1_288_834_974_657, 1_420_070_400_000, DEFAULT_EPOCH] {
        for (what, r) in epoch_everywhere(&ms.to_string()) {
            assert_eq!(r, Ok(ms), "{what}");
        }
    }
    // Seconds given by mistake: 1700000000 would be 1970-01-20 as ms, with ids that run out in 2039.
    for (what, r) in epoch_everywhere("1700000000") {
        let e = r.unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{what}: {e}");
        assert!(
            e.message().contains(
                "found 1700000000 (1970-01-20T16:13:20.000Z), a number of ms before 2000: it looks like seconds; in ms \
                 it is 1700000000000 (2023-11-14T22:13:20.000Z)"
            ),
            "{what}: {e}"
        );
        assert!(e.message().contains("expected Unix ms (0, or from 2000-01-01) or an ISO-8601 date"), "{e}");
    }
    // A number of ms before 2000 that is not seconds of a date since 2000 either: the message gives the date to use.
    for ms in ["1", "946684799999", "5000000"] {
        for (what, r) in epoch_everywhere(ms) {
            let e = r.unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{what}: {e}");
            assert!(e.message().contains("a number of ms before 2000 that is not 0"), "{what}: {e}");
        }
    }
    let e = resolve_env(&[("SNOWID_EPOCH", "946684799999")]).unwrap_err();
    assert!(e.message().ends_with("give the ISO-8601 date '1999-12-31T23:59:59.999Z'"), "{e}");
    // Such a time given as a date is taken as it is.
    for (what, r) in epoch_everywhere("1999-12-31T23:59:59.999Z").into_iter().chain(epoch_everywhere("1970-01-20")) {
        assert!(r.is_ok(), "{what}: {r:?}");
    }
    let date = Options { epoch: Some(OptionValue::Date(1_700_000_000.0)), ..Default::default() };
    assert_eq!(Config::resolve(&date, &env(&[]), NOW).unwrap().epoch.value, 1_700_000_000);
}

#[test]
fn an_epoch_in_microseconds_or_nanoseconds_is_refused_naming_the_unit() {
    for (text, unit, in_ms) in [
        ("1700000000000000", "microseconds", "1700000000000 (2023-11-14T22:13:20.000Z)"),
        ("1288834974657000", "microseconds", "1288834974657 (2010-11-04T01:42:54.657Z)"),
        ("1700000000000000000", "nanoseconds", "1700000000000 (2023-11-14T22:13:20.000Z)"),
    ] {
        for (what, r) in epoch_everywhere(text) {
            let e = r.unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{what}: {e}");
            let found = format!("found {text}, which is in the future: it looks like {unit}; in ms it is {in_ms}");
            assert!(e.message().ends_with(&found), "{what}: {e}");
        }
    }
    // Just past now, in ms: only in the future.
    let soon = (NOW + 60_000).to_string();
    for (what, r) in epoch_everywhere(&soon) {
        let e = r.unwrap_err();
        assert!(e.message().ends_with("Z), which is in the future"), "{what}: {e}");
    }
}
