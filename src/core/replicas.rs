//! Replicas that cannot see each other: where a process runs, and whether its identity was chosen.
//!
//! The host lease keeps apart the processes that share a lease directory and a network namespace. Replicas of one
//! service in containers (a Kubernetes Deployment, an ECS service, Cloud Run, `docker compose --scale`) each have
//! their own: each one's lease is empty, and each takes workerId 0. So with no identity chosen, a generator that
//! finds itself where replicas are the norm does not issue ids:
//!
//! - in an orchestrated environment (Kubernetes, ECS, Cloud Run or Knative, Nomad, Heroku, Fly.io, AWS Lambda), its
//!   first id (and `config()`) is refused with `ERR_SNOWID_IDENTITY_REQUIRED`, whose message names the environment
//!   and every way out;
//! - in a plain Docker or Podman container, which may as well be a CI job or a devcontainer, it is warned of once.
//!
//! The identity is chosen when the worker id is configured (an option, a variable, or a StatefulSet ordinal) or the
//! datacenter id is (an option or a variable), or when `SNOWID_SINGLE_INSTANCE=true` (option `singleInstance: true`)
//! says that this is the only instance. A store lease configures the worker id as an option, so it is chosen.
//!
//! Each environment is known by what its platform sets in every container (documented by the platform):
//!
//! | environment | signal |
//! |---|---|
//! | AWS Lambda | `AWS_LAMBDA_FUNCTION_NAME` |
//! | Amazon ECS (Fargate, EC2, Managed Instances) | `ECS_CONTAINER_METADATA_URI_V4`, `ECS_CONTAINER_METADATA_URI`, or `AWS_EXECUTION_ENV` starting `AWS_ECS` |
//! | Cloud Run or Knative | `K_SERVICE` (services and functions), `CLOUD_RUN_JOB` (jobs) |
//! | Kubernetes | `KUBERNETES_SERVICE_HOST` (set in every container, even with `enableServiceLinks: false`) |
//! | Nomad | `NOMAD_ALLOC_ID` |
//! | Heroku | `DYNO` |
//! | Fly.io | `FLY_ALLOC_ID` or `FLY_APP_NAME` |
//! | a container | the file `/.dockerenv` (Docker), the file `/run/.containerenv` (Podman), or the variable `container` (Podman, systemd-nspawn, LXC) |
//!
//! A variable counts when it is set and not empty. Knative runs on Kubernetes and is named by `K_SERVICE`, which is
//! checked first; so is ECS, whose EC2 tasks may carry Docker's marker.

use std::path::Path;
use std::sync::OnceLock;

use super::config::{Config, EnvSource, Source};
use super::error::{quote, Class, Code, Error, Result};

/// Where a process runs, as far as replicas go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Kubernetes,
    Ecs,
    CloudRun,
    Nomad,
    Heroku,
    Fly,
    Lambda,
    /// A plain Docker or Podman container, with no orchestrator known.
    Container,
}

impl Environment {
    /// Its name in `config().environment`.
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Kubernetes => "kubernetes",
            Environment::Ecs => "ecs",
            Environment::CloudRun => "cloudrun",
            Environment::Nomad => "nomad",
            Environment::Heroku => "heroku",
            Environment::Fly => "fly",
            Environment::Lambda => "lambda",
            Environment::Container => "container",
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Environment::Kubernetes => "Kubernetes",
            Environment::Ecs => "Amazon ECS",
            Environment::CloudRun => "Cloud Run or Knative",
            Environment::Nomad => "Nomad",
            Environment::Heroku => "Heroku",
            Environment::Fly => "Fly.io",
            Environment::Lambda => "AWS Lambda",
            Environment::Container => "a container",
        }
    }

    /// Whether replicas are the norm there, so that an identity no one chose is refused rather than warned of.
    pub fn orchestrated(self) -> bool {
        self != Environment::Container
    }
}

/// An environment, and the signal it was known by (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub environment: Environment,
    pub signal: Signal,
}

/// What an environment was known by. Made with no text but a value that names it, since a `new Snowflake()` with no
/// identity looks for its environment each time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// A variable that is set.
    Set(&'static str),
    /// A variable whose value says it.
    Value(&'static str, String),
    /// A marker file, by its path under the root.
    File(&'static str),
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signal::Set(name) => write!(f, "{name} is set"),
            Signal::Value(name, value) => write!(f, "{name} is {}", quote(value)),
            Signal::File(path) => write!(f, "/{path} exists"),
        }
    }
}

/// The variables that name an orchestrated environment, each with the start its value must have (if any), in the
/// order they are checked. `AWS_EXECUTION_ENV` names other AWS runtimes too (`AWS_Lambda_nodejs20.x`).
const VARIABLES: &[(&str, &str, Environment)] = &[
    ("AWS_LAMBDA_FUNCTION_NAME", "", Environment::Lambda),
    ("ECS_CONTAINER_METADATA_URI_V4", "", Environment::Ecs),
    ("ECS_CONTAINER_METADATA_URI", "", Environment::Ecs),
    ("AWS_EXECUTION_ENV", "AWS_ECS", Environment::Ecs),
    ("K_SERVICE", "", Environment::CloudRun),
    ("CLOUD_RUN_JOB", "", Environment::CloudRun),
    ("KUBERNETES_SERVICE_HOST", "", Environment::Kubernetes),
    ("NOMAD_ALLOC_ID", "", Environment::Nomad),
    ("DYNO", "", Environment::Heroku),
    ("FLY_ALLOC_ID", "", Environment::Fly),
    ("FLY_APP_NAME", "", Environment::Fly),
];

/// Every variable [`detect`] reads (a process snapshot takes them in its one pass over the environment).
pub const NAMES: &[&str] = &[
    "AWS_LAMBDA_FUNCTION_NAME",
    "ECS_CONTAINER_METADATA_URI_V4",
    "ECS_CONTAINER_METADATA_URI",
    "AWS_EXECUTION_ENV",
    "K_SERVICE",
    "CLOUD_RUN_JOB",
    "KUBERNETES_SERVICE_HOST",
    "NOMAD_ALLOC_ID",
    "DYNO",
    "FLY_ALLOC_ID",
    "FLY_APP_NAME",
    "container",
];

/// The files a container runtime puts in a container, relative to its root.
const MARKERS: &[&str] = &[".dockerenv", "run/.containerenv"];

/// The root the marker files are looked for under.
pub const ROOT: &str = "/";

/// A variable's value when it is set and not empty (a value that is not UTF-8 is read lossily).
fn set(env: &dyn EnvSource, name: &str) -> Option<String> {
    let v = env.var(name)?;
    (!v.is_empty()).then(|| v.to_string_lossy().into_owned())
}

/// The environment `env` and the files under `root` say this process runs in, or `None` for none known.
pub fn detect(env: &dyn EnvSource, root: &Path) -> Option<Detected> {
    for &(name, start, environment) in VARIABLES {
        match set(env, name) {
            Some(_) if start.is_empty() => return Some(Detected { environment, signal: Signal::Set(name) }),
            Some(v) if v.starts_with(start) => return Some(Detected { environment, signal: Signal::Value(name, v) }),
            _ => {}
        }
    }
    if let Some(marker) = marker(root) {
        return Some(Detected { environment: Environment::Container, signal: Signal::File(marker) });
    }
    let v = set(env, "container")?;
    Some(Detected { environment: Environment::Container, signal: Signal::Value("container", v) })
}

/// The first marker file found under `root`. Under the real root, looked for once per process: a container's
/// marker files are there from its start and never come or go.
fn marker(root: &Path) -> Option<&'static str> {
    let look = || MARKERS.iter().copied().find(|m| std::fs::metadata(root.join(m)).is_ok());
    if root == Path::new(ROOT) {
        static FOUND: OnceLock<Option<&'static str>> = OnceLock::new();
        return *FOUND.get_or_init(look);
    }
    look()
}

/// Whether someone chose this configuration's identity: its worker id is configured (an option, a variable, a
/// StatefulSet ordinal) or its datacenter id is (an option or a variable). A worker id from the host lease, from
/// PM2's instance number or left at 0, and a datacenter id left at its default (or chosen by the lease), are no one's
/// choice.
pub fn identity_chosen(config: &Config) -> bool {
    chosen(config.worker_id.source, config.datacenter_id.source)
}

/// [`identity_chosen`], from where the worker id and the datacenter id came from.
pub fn chosen(worker_id: Source, datacenter_id: Source) -> bool {
    matches!(worker_id, Source::Option | Source::Env | Source::StatefulSet)
        || matches!(datacenter_id, Source::Option | Source::Env)
}

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
    if config.single_instance.value || identity_chosen(config) {
        return Ok(None);
    }
    let unchosen = unchosen(config);
    if detected.environment.orchestrated() {
        return Err(refusal(detected, &unchosen));
    }
    Ok(Some(format!(
        "no identity chosen in {} ({}): {unchosen}. Replicas of this container (docker compose --scale, several \
         docker run) cannot see each other's host lease, so they would all take workerId 0 and issue the same ids. For \
         replicas, set a SNOWID_WORKER_ID (or SNOWID_DATACENTER_ID) that differs in every one, or take worker ids from \
         a store (snowid/redis, snowid/postgres or snowid/mysql); for the only instance, set \
         SNOWID_SINGLE_INSTANCE=true, which also ends this warning",
        detected.environment.name(),
        detected.signal,
    )))
}

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
    use std::ffi::OsString;

    const NOW: u64 = 1_763_779_200_000;

    fn env<'a>(vars: &'a [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    /// A root with no marker files, removed on drop.
    struct Root(std::path::PathBuf);
    impl Root {
        fn new(markers: &[&str]) -> Root {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("snowid-replicas-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("run")).unwrap();
            for m in markers {
                std::fs::write(dir.join(m), "").unwrap();
            }
            Root(dir)
        }
    }
    impl Drop for Root {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn detected(vars: &[(&'static str, &'static str)], root: &Root) -> Option<(Environment, String)> {
        detect(&env(vars), &root.0).map(|d| (d.environment, d.signal.to_string()))
    }

    #[test]
    fn each_platform_is_known_by_what_it_sets() {
        let root = Root::new(&[]);
        let cases: &[(&str, &str, Environment)] = &[
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1", Environment::Kubernetes),
            ("ECS_CONTAINER_METADATA_URI_V4", "http://169.254.170.2/v4/abc", Environment::Ecs),
            ("ECS_CONTAINER_METADATA_URI", "http://169.254.170.2/v3/abc", Environment::Ecs),
            ("AWS_EXECUTION_ENV", "AWS_ECS_FARGATE", Environment::Ecs),
            ("AWS_EXECUTION_ENV", "AWS_ECS_EC2", Environment::Ecs),
            ("K_SERVICE", "hello", Environment::CloudRun),
            ("CLOUD_RUN_JOB", "nightly", Environment::CloudRun),
            ("NOMAD_ALLOC_ID", "5b2b5c5e-0000-0000-0000-000000000000", Environment::Nomad),
            ("DYNO", "web.1", Environment::Heroku),
            ("FLY_ALLOC_ID", "148e21ea7e0d89", Environment::Fly),
            ("FLY_APP_NAME", "my-app", Environment::Fly),
            ("AWS_LAMBDA_FUNCTION_NAME", "handler", Environment::Lambda),
            ("container", "podman", Environment::Container),
        ];
        for &(name, value, environment) in cases {
            let vars = [(name, value)];
            let (found, signal) = detected(&vars, &root).unwrap_or_else(|| panic!("{name} not detected"));
            assert_eq!(found, environment, "{name}");
            assert!(signal.starts_with(name), "{signal}");
        }
        // Lambda's AWS_EXECUTION_ENV is not ECS's.
        assert_eq!(detected(&[("AWS_EXECUTION_ENV", "AWS_Lambda_nodejs20.x")], &root), None);
        assert_eq!(
            detected(&[("AWS_EXECUTION_ENV", "AWS_Lambda_nodejs20.x"), ("AWS_LAMBDA_FUNCTION_NAME", "f")], &root)
                .unwrap()
                .0,
            Environment::Lambda
        );
        // An empty variable is no signal.
        assert_eq!(detected(&[("KUBERNETES_SERVICE_HOST", ""), ("container", "")], &root), None);
        assert_eq!(detected(&[("HOSTNAME", "web-0"), ("PATH", "/usr/bin")], &root), None);
    }

    #[test]
    fn a_process_snapshot_holds_every_variable_detection_reads() {
        let read: Vec<&str> = VARIABLES.iter().map(|v| v.0).chain(["container"]).collect();
        assert_eq!(read, NAMES);
    }

    #[test]
    fn an_orchestrator_wins_over_a_container_and_knative_over_kubernetes() {
        let root = Root::new(&[".dockerenv"]);
        let k8s = [("KUBERNETES_SERVICE_HOST", "10.96.0.1")];
        assert_eq!(detected(&k8s, &root).unwrap().0, Environment::Kubernetes);
        let knative = [("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("K_SERVICE", "hello")];
        assert_eq!(detected(&knative, &root).unwrap().0, Environment::CloudRun);
        let ecs = [("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("AWS_EXECUTION_ENV", "AWS_ECS_EC2")];
        assert_eq!(detected(&ecs, &root).unwrap().0, Environment::Ecs);
    }

    #[test]
    fn containers_are_known_by_their_marker_files() {
        let docker = Root::new(&[".dockerenv"]);
        let (found, signal) = detected(&[], &docker).unwrap();
        assert_eq!(found, Environment::Container);
        assert!(signal.ends_with(".dockerenv exists"), "{signal}");
        let podman = Root::new(&["run/.containerenv"]);
        let (found, signal) = detected(&[], &podman).unwrap();
        assert_eq!(found, Environment::Container);
        assert!(signal.ends_with("run/.containerenv exists"), "{signal}");
        assert_eq!(detected(&[], &Root::new(&[])), None);
        assert_eq!(detected(&[("container", "docker")], &Root::new(&[])).unwrap().0, Environment::Container);
    }

    /// A configuration resolved from `vars`, in the environment `vars` and `root` say.
    /// As `Config::resolve` makes it, with the marker files of `root` in place of the real root's.
    fn config(opts: &Options, vars: &[(&'static str, &'static str)], root: &Root) -> Config {
        let mut c = Config::resolve(opts, &env(vars), NOW).unwrap();
        if !c.single_instance.value && !identity_chosen(&c) {
            c.environment = detect(&env(vars), &root.0);
        }
        c
    }

    #[test]
    fn an_unchosen_identity_is_refused_where_replicas_are_the_norm_naming_the_environment_and_the_ways_out() {
        let root = Root::new(&[]);
        for (name, value, label) in [
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1", "Kubernetes"),
            ("ECS_CONTAINER_METADATA_URI_V4", "http://x", "Amazon ECS"),
            ("K_SERVICE", "hello", "Cloud Run or Knative"),
            ("CLOUD_RUN_JOB", "j", "Cloud Run or Knative"),
            ("NOMAD_ALLOC_ID", "a", "Nomad"),
            ("DYNO", "web.1", "Heroku"),
            ("FLY_APP_NAME", "app", "Fly.io"),
            ("AWS_LAMBDA_FUNCTION_NAME", "f", "AWS Lambda"),
        ] {
            for lease in ["on", "off"] {
                let c = config(&Options::default(), &[(name, value), ("SNOWID_LEASE", lease)], &root);
                let e = check(&c).unwrap_err();
                assert_eq!((e.code(), e.class()), (Code::IdentityRequired, Class::Error));
                let m = e.message();
                assert!(m.starts_with(&format!("identity: expected a worker id or datacenter id chosen for each replica in {label} ({name} is set)")), "{m}");
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
        let root = Root::new(&[".dockerenv"]);
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
    fn a_plain_container_is_warned_of_and_nowhere_else_is_anything_said() {
        let root = Root::new(&[".dockerenv"]);
        let c = config(&Options::default(), &[], &root);
        let w = check(&c).unwrap().unwrap();
        assert!(w.starts_with("no identity chosen in a container ("), "{w}");
        assert!(
            w.contains(".dockerenv exists")
                && w.contains("SNOWID_SINGLE_INSTANCE=true")
                && w.contains("SNOWID_WORKER_ID"),
            "{w}"
        );
        assert_eq!(check(&config(&Options::default(), &[("SNOWID_SINGLE_INSTANCE", "true")], &root)), Ok(None));
        assert_eq!(check(&config(&Options::default(), &[("SNOWID_WORKER_ID", "1")], &root)), Ok(None));
        // Outside any container or orchestrator, the host lease is the whole story: nothing to say.
        assert_eq!(check(&config(&Options::default(), &[], &Root::new(&[]))), Ok(None));
    }

    #[test]
    fn single_instance_takes_true_or_false_only() {
        let root = Root::new(&[]);
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
