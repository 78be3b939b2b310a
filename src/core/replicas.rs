//! Replicas that cannot see each other: where a process runs, and whether its identity was chosen.
//!
//! The host lease keeps apart the processes that share a lease directory and a network namespace. Replicas of one
//! service in containers (a Kubernetes Deployment, an ECS service, Cloud Run, `docker compose --scale`) each have
//! their own: each one's lease is empty, and each takes workerId 0. So with no identity chosen, a generator that
//! finds itself where replicas are the norm does not issue ids:
//!
//! - in an orchestrated environment (Kubernetes, ECS, Cloud Run or Knative, Nomad, Heroku, Fly.io, AWS Lambda, and
//!   the platforms as a service below), its first id (and `config()`) is refused with `ERR_SNOWID_IDENTITY_REQUIRED`,
//!   whose message names the environment and every way out;
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
//! | Vercel | `VERCEL` |
//! | Netlify | `NETLIFY` of `true` (builds), or `SITE_ID` with `SITE_NAME` (functions) |
//! | Google Cloud Functions | `FUNCTION_TARGET` |
//! | Google App Engine | `GAE_SERVICE` |
//! | Azure Functions | `FUNCTIONS_WORKER_RUNTIME` |
//! | Azure App Service | `WEBSITE_INSTANCE_ID` or `WEBSITE_SITE_NAME` |
//! | Azure Container Apps | `CONTAINER_APP_NAME` (apps) or `CONTAINER_APP_JOB_NAME` (jobs) |
//! | Render | `RENDER` of `true` |
//! | Railway | `RAILWAY_REPLICA_ID` or `RAILWAY_SERVICE_ID` |
//! | Cloud Foundry | `VCAP_APPLICATION` or `CF_INSTANCE_GUID` |
//! | a container | the file `/.dockerenv` (Docker), the file `/run/.containerenv` (Podman), or the variable `container` (Podman, systemd-nspawn, LXC) |
//!
//! A variable counts when it is set and not empty. Knative runs on Kubernetes and is named by `K_SERVICE`, which is
//! checked first; so is ECS, whose EC2 tasks may carry Docker's marker, and so is each platform above that runs on
//! another (see [`VARIABLES`]). DigitalOcean's App Platform documents no variable of its own in its containers, so it is
//! not known by one: there, as anywhere, set the identity.

use std::path::Path;
use std::sync::OnceLock;

use super::env::EnvSource;
use super::error::quote;

/// Where a process runs, as far as replicas go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Environment {
    Kubernetes,
    Ecs,
    CloudRun,
    Nomad,
    Heroku,
    Fly,
    Lambda,
    AzureContainerApps,
    AzureAppService,
    AzureFunctions,
    AppEngine,
    CloudFunctions,
    Render,
    Railway,
    Vercel,
    Netlify,
    CloudFoundry,
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
            Environment::AzureContainerApps => "containerapps",
            Environment::AzureAppService => "appservice",
            Environment::AzureFunctions => "azurefunctions",
            Environment::AppEngine => "appengine",
            Environment::CloudFunctions => "cloudfunctions",
            Environment::Render => "render",
            Environment::Railway => "railway",
            Environment::Vercel => "vercel",
            Environment::Netlify => "netlify",
            Environment::CloudFoundry => "cloudfoundry",
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
            Environment::AzureContainerApps => "Azure Container Apps",
            Environment::AzureAppService => "Azure App Service",
            Environment::AzureFunctions => "Azure Functions",
            Environment::AppEngine => "Google App Engine",
            Environment::CloudFunctions => "Google Cloud Functions",
            Environment::Render => "Render",
            Environment::Railway => "Railway",
            Environment::Vercel => "Vercel",
            Environment::Netlify => "Netlify",
            Environment::CloudFoundry => "Cloud Foundry",
            Environment::Container => "a container",
        }
    }

    /// Whether replicas are the norm there, so that an identity no one chose is refused rather than warned of.
    pub fn orchestrated(self) -> bool {
        self != Environment::Container
    }
}

/// An environment, and the signal it was known by (for messages).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Detected {
    pub environment: Environment,
    pub signal: Signal,
}

/// What an environment was known by. Made with no text but a value that names it, since a `new Snowflake()` with no
/// identity looks for its environment each time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Signal {
    /// A variable that is set.
    Set(&'static str),
    /// A variable whose value says it.
    Value(&'static str, String),
    /// A marker file, by its path under the root.
    File(&'static str),
}

impl Signal {
    /// What the signal is, without a value: the marker file's path, or `$` and the variable's name.
    pub fn source(&self) -> String {
        match self {
            Signal::Set(name) | Signal::Value(name, _) => format!("${name}"),
            Signal::File(path) => format!("/{path}"),
        }
    }
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

/// The variables that name an orchestrated environment, each with the start its value must have (if any) and another
/// variable that must be set with it (if any), in the order they are checked. `AWS_EXECUTION_ENV` names other AWS
/// runtimes too (`AWS_Lambda_nodejs20.x`). Vercel's and Netlify's functions run on AWS Lambda, Cloud Functions on Cloud
/// Run, Azure Functions on App Service, and several platforms on Kubernetes: each is named by its own variable, checked
/// before theirs. Netlify's functions are told only `SITE_ID`, `SITE_NAME` and `URL`: the first two together name it.
const VARIABLES: &[(&str, &str, &str, Environment)] = &[
    ("VERCEL", "", "", Environment::Vercel),
    ("NETLIFY", "true", "", Environment::Netlify),
    ("SITE_ID", "", "SITE_NAME", Environment::Netlify),
    ("AWS_LAMBDA_FUNCTION_NAME", "", "", Environment::Lambda),
    ("ECS_CONTAINER_METADATA_URI_V4", "", "", Environment::Ecs),
    ("ECS_CONTAINER_METADATA_URI", "", "", Environment::Ecs),
    ("AWS_EXECUTION_ENV", "AWS_ECS", "", Environment::Ecs),
    ("FUNCTION_TARGET", "", "", Environment::CloudFunctions),
    ("K_SERVICE", "", "", Environment::CloudRun),
    ("CLOUD_RUN_JOB", "", "", Environment::CloudRun),
    ("GAE_SERVICE", "", "", Environment::AppEngine),
    ("FUNCTIONS_WORKER_RUNTIME", "", "", Environment::AzureFunctions),
    ("WEBSITE_INSTANCE_ID", "", "", Environment::AzureAppService),
    ("WEBSITE_SITE_NAME", "", "", Environment::AzureAppService),
    ("CONTAINER_APP_NAME", "", "", Environment::AzureContainerApps),
    ("CONTAINER_APP_JOB_NAME", "", "", Environment::AzureContainerApps),
    ("RENDER", "true", "", Environment::Render),
    ("RAILWAY_REPLICA_ID", "", "", Environment::Railway),
    ("RAILWAY_SERVICE_ID", "", "", Environment::Railway),
    ("VCAP_APPLICATION", "", "", Environment::CloudFoundry),
    ("CF_INSTANCE_GUID", "", "", Environment::CloudFoundry),
    ("KUBERNETES_SERVICE_HOST", "", "", Environment::Kubernetes),
    ("NOMAD_ALLOC_ID", "", "", Environment::Nomad),
    ("DYNO", "", "", Environment::Heroku),
    ("FLY_ALLOC_ID", "", "", Environment::Fly),
    ("FLY_APP_NAME", "", "", Environment::Fly),
];

/// Every variable [`detect`] reads (a process snapshot takes them in its one pass over the environment).
pub const NAMES: &[&str] = &[
    "VERCEL",
    "NETLIFY",
    "SITE_ID",
    "SITE_NAME",
    "AWS_LAMBDA_FUNCTION_NAME",
    "ECS_CONTAINER_METADATA_URI_V4",
    "ECS_CONTAINER_METADATA_URI",
    "AWS_EXECUTION_ENV",
    "FUNCTION_TARGET",
    "K_SERVICE",
    "CLOUD_RUN_JOB",
    "GAE_SERVICE",
    "FUNCTIONS_WORKER_RUNTIME",
    "WEBSITE_INSTANCE_ID",
    "WEBSITE_SITE_NAME",
    "CONTAINER_APP_NAME",
    "CONTAINER_APP_JOB_NAME",
    "RENDER",
    "RAILWAY_REPLICA_ID",
    "RAILWAY_SERVICE_ID",
    "VCAP_APPLICATION",
    "CF_INSTANCE_GUID",
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
    for &(name, start, also, environment) in VARIABLES {
        if !also.is_empty() && set(env, also).is_none() {
            continue;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::{marker_root, TempDir};
    use std::ffi::OsString;

    fn env<'a>(vars: &'a [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    fn detected(vars: &[(&'static str, &'static str)], root: &TempDir) -> Option<(Environment, String)> {
        detect(&env(vars), &root.0).map(|d| (d.environment, d.signal.to_string()))
    }

    #[test]
    fn each_platform_is_known_by_what_it_sets() {
        let root = marker_root(&[]);
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
            ("VERCEL", "1", Environment::Vercel),
            ("NETLIFY", "true", Environment::Netlify),
            ("FUNCTION_TARGET", "helloHttp", Environment::CloudFunctions),
            ("GAE_SERVICE", "default", Environment::AppEngine),
            ("FUNCTIONS_WORKER_RUNTIME", "node", Environment::AzureFunctions),
            ("WEBSITE_INSTANCE_ID", "4f1a8c0e", Environment::AzureAppService),
            ("WEBSITE_SITE_NAME", "my-app", Environment::AzureAppService),
            ("CONTAINER_APP_NAME", "my-containerapp", Environment::AzureContainerApps),
            ("CONTAINER_APP_JOB_NAME", "my-job", Environment::AzureContainerApps),
            ("RENDER", "true", Environment::Render),
            ("RAILWAY_REPLICA_ID", "92b9e1c2", Environment::Railway),
            ("RAILWAY_SERVICE_ID", "1d4c", Environment::Railway),
            ("VCAP_APPLICATION", "{\"application_name\":\"app\"}", Environment::CloudFoundry),
            ("CF_INSTANCE_GUID", "41653aa4", Environment::CloudFoundry),
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
        // Netlify's functions: SITE_ID with SITE_NAME; either alone, or a NETLIFY or RENDER that is not `true`, is none.
        let netlify = detected(&[("SITE_ID", "1d01c0c0"), ("SITE_NAME", "petsof")], &root).unwrap();
        assert_eq!(netlify, (Environment::Netlify, "SITE_ID is set".to_string()));
        for vars in [[("SITE_ID", "1d01c0c0")], [("SITE_NAME", "petsof")], [("NETLIFY", "1")], [("RENDER", "yes")]] {
            assert_eq!(detected(&vars, &root), None, "{vars:?}");
        }
        // An empty variable is no signal.
        assert_eq!(detected(&[("KUBERNETES_SERVICE_HOST", ""), ("container", "")], &root), None);
        assert_eq!(detected(&[("HOSTNAME", "web-0"), ("PATH", "/usr/bin")], &root), None);
    }

    #[test]
    fn a_process_snapshot_holds_every_variable_detection_reads() {
        let mut read: Vec<&str> = Vec::new();
        for name in VARIABLES.iter().flat_map(|v| [v.0, v.2]).chain(["container"]) {
            if !name.is_empty() && !read.contains(&name) {
                read.push(name);
            }
        }
        assert_eq!(read, NAMES);
    }

    #[test]
    fn an_orchestrator_wins_over_a_container_and_knative_over_kubernetes() {
        let root = marker_root(&[".dockerenv"]);
        let k8s = [("KUBERNETES_SERVICE_HOST", "10.96.0.1")];
        assert_eq!(detected(&k8s, &root).unwrap().0, Environment::Kubernetes);
        let knative = [("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("K_SERVICE", "hello")];
        assert_eq!(detected(&knative, &root).unwrap().0, Environment::CloudRun);
        let ecs = [("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("AWS_EXECUTION_ENV", "AWS_ECS_EC2")];
        assert_eq!(detected(&ecs, &root).unwrap().0, Environment::Ecs);
        // A platform is named by its own variable before the one it runs on.
        let on = |vars: &[(&'static str, &'static str)]| detected(vars, &root).unwrap().0;
        assert_eq!(on(&[("AWS_LAMBDA_FUNCTION_NAME", "f"), ("VERCEL", "1")]), Environment::Vercel);
        assert_eq!(
            on(&[("AWS_LAMBDA_FUNCTION_NAME", "f"), ("SITE_ID", "1"), ("SITE_NAME", "s")]),
            Environment::Netlify
        );
        assert_eq!(on(&[("K_SERVICE", "f"), ("FUNCTION_TARGET", "f")]), Environment::CloudFunctions);
        let functions =
            [("WEBSITE_SITE_NAME", "f"), ("WEBSITE_INSTANCE_ID", "i"), ("FUNCTIONS_WORKER_RUNTIME", "node")];
        assert_eq!(on(&functions), Environment::AzureFunctions);
        assert_eq!(
            on(&[("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("CONTAINER_APP_NAME", "a")]),
            Environment::AzureContainerApps
        );
    }

    #[test]
    fn containers_are_known_by_their_marker_files() {
        let docker = marker_root(&[".dockerenv"]);
        let (found, signal) = detected(&[], &docker).unwrap();
        assert_eq!(found, Environment::Container);
        assert!(signal.ends_with(".dockerenv exists"), "{signal}");
        let podman = marker_root(&["run/.containerenv"]);
        let (found, signal) = detected(&[], &podman).unwrap();
        assert_eq!(found, Environment::Container);
        assert!(signal.ends_with("run/.containerenv exists"), "{signal}");
        assert_eq!(detected(&[], &marker_root(&[])), None);
        assert_eq!(detected(&[("container", "docker")], &marker_root(&[])).unwrap().0, Environment::Container);
    }
}
