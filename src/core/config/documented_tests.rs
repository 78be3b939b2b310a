//! The table of options against where it is written for users: the README's configuration table, the typings that
//! `npm run build` makes of it (`SnowflakeOptions` and `LayoutOptions` with their JSDoc, `SnowidConfig`,
//! `ConfigSources`), and the ranges and defaults the resolver gives. Each test fails on drift, and says what the
//! table makes.

use std::path::{Path, PathBuf};

use super::options::{option_table, OptionSpec, OptionValue, Options, MAX_NAMESPACE_CHARS, OPTIONS};
use super::resolved::{Config, IfTaken, Source, WorkerIdFrom};
use crate::core::error::Result;
use crate::core::generator::ClockBackPolicy;
use crate::core::testing::NOW;

fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An option's row of the README's configuration table.
fn readme_row(o: &OptionSpec) -> String {
    let mut vars = String::new();
    for (i, v) in o.vars.iter().enumerate() {
        vars.push_str(&if i == 0 { format!("`{v}`") } else { format!(" (else `{v}`)") });
    }
    format!("| {vars} | `{}` | {} | {} |", o.name, o.doc, o.default)
}

#[test]
fn the_readme_lists_every_option_as_the_table_says() {
    let readme = read("README.md");
    let rows: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "| env var | option | meaning | default |")
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let expected: Vec<String> = OPTIONS.iter().map(readme_row).collect();
    assert_eq!(
        rows,
        expected,
        "README.md's configuration table should be, as src/core/config/options.rs says:\n{}",
        expected.join("\n")
    );
}

/// The members of `export interface {name}` in a generated .d.ts, in order, each with its JSDoc.
fn interface(dts: &str, name: &str) -> Vec<(String, String)> {
    let start = format!("export interface {name} {{");
    let mut lines = dts.lines().skip_while(|l| *l != start).skip(1);
    let (mut members, mut doc) = (Vec::new(), String::new());
    for line in lines.by_ref().take_while(|l| *l != "}") {
        let line = line.trim();
        if line == "/**" || line == "*/" {
            continue;
        }
        if let Some(text) = line.strip_prefix("/**").or(line.strip_prefix('*')) {
            doc.push_str(text.trim_end_matches("*/").trim());
            doc.push('\n');
        } else if let Some((key, _)) = line.split_once(':') {
            members.push((key.trim_end_matches('?').to_string(), std::mem::take(&mut doc)));
        }
    }
    assert!(!members.is_empty(), "no interface {name}");
    members
}

fn names(members: &[(String, String)]) -> Vec<&str> {
    members.iter().map(|(k, _)| k.as_str()).collect()
}

/// The JSDoc lines the table makes for an option of `SnowflakeOptions` (with `env`) or of `LayoutOptions`.
fn jsdoc(o: &OptionSpec, env: bool) -> String {
    let lines = if env { vec![o.doc, o.env, "@default", o.default] } else { vec![o.doc, "@default", o.default] };
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn the_typings_line_on_variables_names_the_tables() {
    for o in OPTIONS {
        let vars: Vec<String> = o.vars.iter().map(|v| format!("`{v}`")).collect();
        assert_eq!(
            o.env,
            format!("Env {}.", vars.join(", else ")),
            "{}'s env line in src/core/config/options.rs",
            o.name
        );
    }
}

#[test]
fn the_typings_document_every_option_as_the_table_says() {
    // binding.d.ts is what `npm run build` makes of the table: this fails when it is stale.
    let dts = read("binding.d.ts");
    let options = interface(&dts, "SnowflakeOptions");
    let table: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
    assert_eq!(names(&options), table, "SnowflakeOptions in binding.d.ts (run `npm run build`)");
    for ((_, doc), o) in options.iter().zip(OPTIONS) {
        assert_eq!(doc, &jsdoc(o, true), "{}'s JSDoc in binding.d.ts (run `npm run build`)", o.name);
    }
    let layout: Vec<&OptionSpec> = OPTIONS.iter().filter(|o| o.layout).collect();
    let members = interface(&dts, "LayoutOptions");
    assert_eq!(names(&members), layout.iter().map(|o| o.name).collect::<Vec<_>>(), "LayoutOptions in binding.d.ts");
    for ((_, doc), o) in members.iter().zip(layout) {
        assert_eq!(doc, &jsdoc(o, false), "{}'s JSDoc in LayoutOptions (run `npm run build`)", o.name);
    }
}

#[test]
fn config_reports_every_option_and_its_source() {
    let dts = read("binding.d.ts");
    let table: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
    assert_eq!(names(&interface(&dts, "ConfigSources")), table, "ConfigSources in binding.d.ts (src/js/report.rs)");
    let config = interface(&dts, "SnowidConfig");
    for name in &table {
        assert!(names(&config).contains(name), "SnowidConfig in binding.d.ts (src/js/report.rs) lacks {name}");
    }
}

#[test]
fn the_ranges_the_table_gives_are_the_resolvers_and_its_docs() {
    let fixed: Vec<&OptionSpec> = OPTIONS.iter().filter(|o| o.max.is_some()).collect();
    let names: Vec<&str> = fixed.iter().map(|o| o.name).collect();
    for name in ["datacenterBits", "workerBits", "clockBackBits", "sequenceBits", "maxWaitMs", "maxLeadMs"] {
        assert!(names.contains(&name), "{name} has its range in the table");
    }
    for o in fixed {
        let max = o.max.unwrap();
        assert!(o.doc.contains(&format!("0–{max}")), "{}'s doc gives its range 0–{max}: {}", o.name, o.doc);
        let opts = |n: u64| {
            let mut opts = Options::default();
            *opts.slot(o.name).unwrap() = Some(OptionValue::Number(n as f64));
            opts
        };
        let none = |_: &str| None;
        // The widths are taken one at a time; the widest each may be leaves the rest at 0.
        let zero_widths = |name: &str| {
            let width =
                ["SNOWID_DATACENTER_BITS", "SNOWID_WORKER_BITS", "SNOWID_CLOCK_BACK_BITS", "SNOWID_SEQUENCE_BITS"];
            width.contains(&name).then(|| "0".into())
        };
        let env = |v: String| {
            let var = o.vars[0];
            let layout = o.layout;
            move |name: &str| if name == var { Some(v.clone().into()) } else { zero_widths(name).filter(|_| layout) }
        };
        let ok = |c: Result<()>| c.map_err(|e| e.message().to_string());
        if o.layout {
            // The widest a width may be, with the others at 0, makes a layout for reading ids.
            let mut max_opts = opts(max);
            for w in ["datacenterBits", "workerBits", "clockBackBits", "sequenceBits"] {
                if w != o.name {
                    *max_opts.slot(w).unwrap() = Some(OptionValue::Number(0.0));
                }
            }
            assert_eq!(ok(Config::resolve_layout(&max_opts, &none, NOW).map(drop)), Ok(()), "{} = {max}", o.name);
            let by_env = Config::resolve_layout(&Options::default(), &env(max.to_string()), NOW);
            assert_eq!(ok(by_env.map(drop)), Ok(()), "{} = {max}", o.name);
        } else {
            assert_eq!(ok(Config::resolve(&opts(max), &none, NOW).map(drop)), Ok(()), "{} = {max}", o.name);
            let by_env = Config::resolve(&Options::default(), &env(max.to_string()), NOW);
            assert_eq!(ok(by_env.map(drop)), Ok(()), "{} = {max}", o.name);
        }
        let e = Config::resolve(&opts(max + 1), &none, NOW).unwrap_err();
        assert!(e.message().contains(&format!("an integer from 0 to {max}")), "{}: {e}", o.name);
        let e = Config::resolve(&Options::default(), &env((max + 1).to_string()), NOW).unwrap_err();
        assert!(e.message().contains(&format!("an integer from 0 to {max}")), "{}: {e}", o.name);
    }
}

#[test]
fn the_lease_namespace_length_is_the_resolvers() {
    let o = OPTIONS.iter().find(|o| o.name == "leaseNamespace").unwrap();
    assert!(o.doc.contains(&format!("1–{MAX_NAMESPACE_CHARS} characters")), "{}", o.doc);
}

#[test]
fn the_defaults_the_table_gives_are_the_resolvers() {
    let none = |_: &str| None;
    let c = Config::resolve(&Options::default(), &none, NOW).unwrap();
    let shown = c.shown();
    assert_eq!(
        shown.iter().map(|(n, _, _)| *n).collect::<Vec<_>>(),
        OPTIONS.iter().map(|o| o.name).collect::<Vec<_>>()
    );
    for ((name, value, source), o) in shown.iter().zip(OPTIONS) {
        match source {
            // The lease chooses the ids: the docs say so rather than give a number.
            Source::Lease => assert!(o.default.starts_with("the lease's"), "{name}: the table's default"),
            Source::Default if value.starts_with('`') => {
                assert!(o.default.contains(value.as_str()), "{name}: the table's default says {value}: {}", o.default)
            }
            Source::Default => {
                let first = o.default.split_whitespace().next();
                assert_eq!(first, Some(value.as_str()), "{name}: the table's default is {value}: {}", o.default)
            }
            other => panic!("{name} comes from {other:?} with nothing set"),
        }
    }
}

/// Makes [`Config::shown`] from the table of options.
macro_rules! shown {
    ($( $opt:ident $field:ident $name:tt [$($var:expr),+] $ty:ty, layout $layout:tt, max $max:expr,
        option $ts:tt, config $config_ts:tt, doc $doc:tt, env $env:tt, default $default:tt; )+) => {
        impl Config {
            /// Each option's name, its value as the docs write a default, and where it came from.
            fn shown(&self) -> Vec<(&'static str, String, Source)> {
                vec![ $( ($name, self.$field.value.shown(), self.$field.source), )+ ]
            }
        }
    };
}

option_table!(shown);

/// A value as the docs write a default: a number in digits, a word or path in backticks, and none as `unset`.
trait Shown {
    fn shown(&self) -> String;
}

impl Shown for u32 {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for u64 {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for bool {
    fn shown(&self) -> String {
        format!("`{self}`")
    }
}

impl Shown for String {
    fn shown(&self) -> String {
        format!("`{self}`")
    }
}

impl Shown for PathBuf {
    fn shown(&self) -> String {
        // Windows' default is the machine's ProgramData folder, which the docs write as `%ProgramData%`.
        #[cfg(windows)]
        if let Some(rest) = std::env::var_os("ProgramData").and_then(|data| self.strip_prefix(data).ok()) {
            return format!("`%ProgramData%\\{}`", rest.display());
        }
        format!("`{}`", self.display())
    }
}

impl Shown for ClockBackPolicy {
    fn shown(&self) -> String {
        format!("`{}`", self.as_str())
    }
}

impl Shown for IfTaken {
    fn shown(&self) -> String {
        format!("`{}`", self.as_str())
    }
}

impl Shown for WorkerIdFrom {
    fn shown(&self) -> String {
        format!("`{}`", self.as_str())
    }
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        self.as_ref().map_or_else(|| "unset".to_string(), Shown::shown)
    }
}
