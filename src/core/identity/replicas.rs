//! Replicas that cannot see each other (see [`replicas`](super::super::replicas)): an identity no one chose is
//! refused where replicas are the norm, and warned of in a plain container.

use std::path::Path;

use super::super::config::{Config, Source};
use super::super::env::EnvSource;
use super::super::error::{Class, Code, Error, Result};
use super::super::replicas::{detect, Detected, Environment, ROOT};

/// Where this process runs, for `config()`: what `config` found, else looked for now in `env` (a configuration
/// looks only when its identity went unchosen).
pub fn environment(config: &Config, env: &dyn EnvSource) -> Option<Environment> {
    match &config.environment {
        Some(d) => Some(d.environment),
        None => detect(env, Path::new(ROOT)).map(|d| d.environment),
    }
}

/// What the first id of `config` (and `config()`) meets: an error where replicas are the norm and no one chose the
/// identity, a warning (its message) in a plain container, else nothing. Runs once per configuration, when its
/// generator starts, never per id.
pub fn check(config: &Config) -> Result<Option<String>> {
    let Some(detected) = &config.environment else {
        return Ok(None);
    };
    if config.single_instance.value || config.identity_chosen() {
        return Ok(None);
    }
    if detected.environment.orchestrated() {
        return Err(refusal(detected, &unchosen(config)));
    }
    // One line of at most 160 characters: the risk, and where the ways out are.
    Ok(Some(format!(
        "no identity chosen in {} ({}): its replicas would make the same ids. Ways out: snowid's {WAYS_OUT}",
        detected.environment.name(),
        detected.signal.source(),
    )))
}

/// The doc section that gives every way to choose an identity, named by the warning.
const WAYS_OUT: &str = "docs/guarantees.md#choosing-an-identity";

/// Where the identity came from, for messages: no one's choice.
fn unchosen(config: &Config) -> String {
    // Neither id configured: with leases on, the lease chooses both; with them off, both are their defaults.
    match config.worker_id.source {
        Source::Lease => "workerId and datacenterId come from this host's lease".to_string(),
        _ => format!(
            "workerId is {} and datacenterId {} with leases off",
            config.worker_id.value, config.datacenter_id.value
        ),
    }
}

fn refusal(detected: &Detected, unchosen: &str) -> Error {
    let statefulset = if detected.environment == Environment::Kubernetes {
        "SNOWID_WORKER_ID_FROM=statefulset in a StatefulSet (each pod's ordinal); "
    } else {
        ""
    };
    Error::new(
        Code::IdentityRequired,
        Class::Error,
        format!(
            "identity: expected a worker id or datacenter id chosen for each replica in {} ({}), found none ({unchosen}): \
             replicas there cannot see each other's host lease, so each would take workerId 0 and issue the same ids. \
             Choose one: {statefulset}a lease from a store every replica reaches (snowid/redis, snowid/postgres or \
             snowid/mysql); a SNOWID_WORKER_ID (or SNOWID_DATACENTER_ID) that differs in every replica; or, if this is \
             truly the only instance, SNOWID_SINGLE_INSTANCE=true",
            detected.environment.name(),
            detected.signal,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::{OptionValue, Options, Sourced};
    use crate::core::testing::{marker_root, TempDir};
    use std::ffi::OsString;

    const NOW: u64 = 1_763_779_200_000;
    /// The most characters the warning of a plain container may have.
    const WARNING_MAX: usize = 160;

    fn env<'a>(vars: &'a [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    /// A configuration resolved from `vars`, in the environment `vars` and `root` say.
    /// As `Config::resolve` makes it, with the marker files of `root` in place of the real root's.
    fn config(opts: &Options, vars: &[(&'static str, &'static str)], root: &TempDir) -> Config {
        let mut c = Config::resolve(opts, &env(vars), NOW).unwrap();
        if !c.single_instance.value && !c.identity_chosen() {
            c.environment = detect(&env(vars), &root.0);
        }
        c
    }

    #[test]
    fn an_unchosen_identity_is_refused_where_replicas_are_the_norm_naming_the_environment_and_the_ways_out() {
        let root = marker_root(&[]);
        for (name, value, label) in [
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1", "Kubernetes"),
            ("ECS_CONTAINER_METADATA_URI_V4", "http://x", "Amazon ECS"),
            ("K_SERVICE", "hello", "Cloud Run or Knative"),
            ("CLOUD_RUN_JOB", "j", "Cloud Run or Knative"),
            ("NOMAD_ALLOC_ID", "a", "Nomad"),
            ("DYNO", "web.1", "Heroku"),
            ("FLY_APP_NAME", "app", "Fly.io"),
            ("AWS_LAMBDA_FUNCTION_NAME", "f", "AWS Lambda"),
            ("CONTAINER_APP_NAME", "app", "Azure Container Apps"),
            ("WEBSITE_INSTANCE_ID", "4f1a", "Azure App Service"),
            ("FUNCTIONS_WORKER_RUNTIME", "node", "Azure Functions"),
            ("GAE_SERVICE", "default", "Google App Engine"),
            ("FUNCTION_TARGET", "helloHttp", "Google Cloud Functions"),
            ("RENDER", "true", "Render"),
            ("RAILWAY_REPLICA_ID", "92b9", "Railway"),
            ("VERCEL", "1", "Vercel"),
            ("NETLIFY", "true", "Netlify"),
            ("VCAP_APPLICATION", "{}", "Cloud Foundry"),
        ] {
            for lease in ["on", "off"] {
                let c = config(&Options::default(), &[(name, value), ("SNOWID_LEASE", lease)], &root);
                let e = check(&c).unwrap_err();
                assert_eq!((e.code(), e.class()), (Code::IdentityRequired, Class::Error));
                let m = e.message();
                assert!(m.starts_with(&format!("identity: expected a worker id or datacenter id chosen for each replica in {label} ({name} is ")), "{m}");
                for way in [
                    "snowid/redis",
                    "snowid/postgres",
                    "snowid/mysql",
                    "SNOWID_WORKER_ID",
                    "SNOWID_DATACENTER_ID",
                    "SNOWID_SINGLE_INSTANCE=true",
                ] {
                    assert!(m.contains(way), "{way} not in {m}");
                }
                assert_eq!(m.contains("SNOWID_WORKER_ID_FROM=statefulset"), label == "Kubernetes", "{m}");
                let from = if lease == "on" {
                    "workerId and datacenterId come from this host's lease"
                } else {
                    "workerId is 0 and datacenterId 0 with leases off"
                };
                assert!(m.contains(from), "{m}");
            }
        }
    }

    #[test]
    fn a_chosen_identity_or_a_single_instance_is_never_refused() {
        let root = marker_root(&[".dockerenv"]);
        let k8s = ("KUBERNETES_SERVICE_HOST", "10.96.0.1");
        let ok = |opts: &Options, vars: &[(&'static str, &'static str)]| {
            let c = config(opts, vars, &root);
            assert_eq!(check(&c), Ok(None), "{vars:?} {opts:?}");
            // Not looked for, as it does not matter; config() looks for it.
            assert_eq!(c.environment, None);
            assert_eq!(environment(&c, &env(vars)), Some(Environment::Kubernetes));
        };
        ok(&Options::default(), &[k8s, ("SNOWID_WORKER_ID", "3")]);
        ok(&Options::default(), &[k8s, ("workerId", "3")]);
        ok(&Options::default(), &[k8s, ("SNOWID_DATACENTER_ID", "2")]);
        ok(&Options::default(), &[k8s, ("SNOWID_WORKER_ID_FROM", "statefulset"), ("HOSTNAME", "web-4")]);
        ok(&Options::default(), &[k8s, ("SNOWID_SINGLE_INSTANCE", "true")]);
        ok(&Options { worker_id: Some(OptionValue::Number(0.0)), ..Options::default() }, &[k8s]);
        ok(&Options { datacenter_id: Some(OptionValue::Number(1.0)), ..Options::default() }, &[k8s]);
        ok(&Options { single_instance: Some(OptionValue::Bool(true)), ..Options::default() }, &[k8s]);
        // The option wins over the variable, both ways.
        let c = config(
            &Options { single_instance: Some(OptionValue::Bool(false)), ..Options::default() },
            &[k8s, ("SNOWID_SINGLE_INSTANCE", "true")],
            &root,
        );
        assert_eq!(c.single_instance, Sourced { value: false, source: Source::Option });
        assert_eq!(check(&c).unwrap_err().code(), Code::IdentityRequired);
        // PM2's instance number is not read, so it chooses no identity.
        let c = config(&Options::default(), &[k8s, ("NODE_APP_INSTANCE", "0")], &root);
        assert_eq!(c.worker_id.source, Source::Lease);
        assert_eq!(check(&c).unwrap_err().code(), Code::IdentityRequired);
    }

    #[test]
    fn a_plain_container_is_warned_of_in_one_short_line_and_nowhere_else_is_anything_said() {
        for (markers, vars, source) in [
            (&[".dockerenv"][..], &[][..], "/.dockerenv"),
            (&["run/.containerenv"][..], &[][..], "/run/.containerenv"),
            (
                &[][..],
                &[("container", "a-container-runtime-with-a-very-long-name-that-says-nothing-more-at-all")][..],
                "$container",
            ),
        ] {
            let root = marker_root(markers);
            for lease in ["on", "off"] {
                let mut all = vars.to_vec();
                all.push(("SNOWID_LEASE", lease));
                let w = check(&config(&Options::default(), &all, &root)).unwrap().unwrap();
                assert_eq!(
                    w,
                    format!(
                        "no identity chosen in a container ({source}): its replicas would make the same ids. Ways out: \
                         snowid's docs/guarantees.md#choosing-an-identity"
                    )
                );
                assert!(w.chars().count() <= WARNING_MAX && !w.contains('\n'), "{} characters: {w}", w.len());
            }
        }
        let root = marker_root(&[".dockerenv"]);
        assert_eq!(check(&config(&Options::default(), &[("SNOWID_SINGLE_INSTANCE", "true")], &root)), Ok(None));
        assert_eq!(check(&config(&Options::default(), &[("SNOWID_WORKER_ID", "1")], &root)), Ok(None));
        // Outside any container or orchestrator, the host lease is the whole story: nothing to say.
        assert_eq!(check(&config(&Options::default(), &[], &marker_root(&[]))), Ok(None));
    }

    #[test]
    fn the_warning_points_to_a_section_of_the_docs_that_exists() {
        let (file, anchor) = WAYS_OUT.split_once('#').unwrap();
        let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        let heading = format!("### {}", anchor.replace('-', " "));
        assert!(text.lines().any(|l| l.eq_ignore_ascii_case(&heading)), "no heading {heading:?} in {file}");
    }

    #[test]
    fn single_instance_takes_true_or_false_only() {
        let root = marker_root(&[]);
        assert_eq!(
            config(&Options::default(), &[], &root).single_instance,
            Sourced { value: false, source: Source::Default }
        );
        let c = config(&Options::default(), &[("SNOWID_SINGLE_INSTANCE", "false")], &root);
        assert_eq!(c.single_instance, Sourced { value: false, source: Source::Env });
        for bad in ["1", "yes", "TRUE", "", " true"] {
            let e = Config::resolve(&Options::default(), &env(&[("SNOWID_SINGLE_INSTANCE", bad)]), NOW).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{bad:?}");
            assert!(e.message().starts_with("SNOWID_SINGLE_INSTANCE: expected 'true' or 'false'"), "{e}");
        }
        let opts = Options { single_instance: Some(OptionValue::Text("true".into())), ..Options::default() };
        let e = Config::resolve(&opts, &env(&[]), NOW).unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::TypeError));
        assert!(e.message().starts_with("options.singleInstance: expected"), "{e}");
    }
}
