//! The table of options against where it is written for users: the README's configuration table, the typings of
//! the options (`SnowflakeOptions`, `LayoutOptions`), of `config()` and of its sources, and the defaults the
//! resolver gives. Each test fails on drift, and says what the table makes.

use std::path::Path;

use super::options::{OptionSpec, Options, OPTIONS};
use super::resolved::Config;
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

#[test]
fn the_typings_take_every_option_with_its_variables_and_default() {
    let dts = read("binding.d.ts");
    let options = interface(&dts, "SnowflakeOptions");
    let table: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
    assert_eq!(names(&options), table, "SnowflakeOptions in binding.d.ts (src/js/options.rs)");
    for ((_, doc), o) in options.iter().zip(OPTIONS) {
        for var in o.vars {
            assert!(doc.contains(&format!("`{var}`")), "{}'s doc names {var}:\n{doc}", o.name);
        }
        let default = doc.lines().find_map(|l| l.strip_prefix("@default "));
        assert!(default.is_some(), "{}'s doc gives its default:\n{doc}", o.name);
        if o.default.parse::<u64>().is_ok() {
            assert!(default.is_some_and(|d| d.starts_with(o.default)), "{}'s @default is {}", o.name, o.default);
        }
    }
    let layout: Vec<&str> = OPTIONS.iter().filter(|o| o.layout).map(|o| o.name).collect();
    assert_eq!(names(&interface(&dts, "LayoutOptions")), layout, "LayoutOptions in binding.d.ts (src/js/layout.rs)");
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
fn the_numbers_the_table_gives_as_defaults_are_the_resolvers() {
    let none = |_: &str| None;
    let c = Config::resolve(&Options::default(), &none, NOW).unwrap();
    let resolved = |name: &str| match name {
        "clockBack" => Some(u64::from(c.clock_back.value)),
        "epoch" => Some(c.epoch.value),
        "datacenterBits" => Some(u64::from(c.datacenter_bits.value)),
        "workerBits" => Some(u64::from(c.worker_bits.value)),
        "clockBackBits" => Some(u64::from(c.clock_back_bits.value)),
        "sequenceBits" => Some(u64::from(c.sequence_bits.value)),
        "maxWaitMs" => Some(c.max_wait_ms.value),
        "maxLeadMs" => Some(c.max_lead_ms.value),
        _ => None,
    };
    for o in OPTIONS {
        if let Ok(n) = o.default.parse::<u64>() {
            assert_eq!(resolved(o.name), Some(n), "{}: the table's default {n}", o.name);
        }
    }
    let words =
        [("onClockBack", c.on_clock_back.value.as_str()), ("workerIdIfTaken", c.worker_id_if_taken.value.as_str())];
    for (name, value) in words {
        let o = OPTIONS.iter().find(|o| o.name == name).unwrap();
        assert_eq!(o.default, format!("`{value}`"), "{name}: the table's default");
    }
}
