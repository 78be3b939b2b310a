//! Environment sources: where a configuration reads its variables. Injected, so that tests need not touch the
//! process environment, and so that the binding can read the calling thread's `process.env`.

use std::ffi::OsString;

/// Reads one environment variable.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<OsString>;
    /// The names of the variables that start with `SNOWID_`, to refuse one snowid does not read. A source that
    /// cannot list its variables lists none.
    fn snowid_names(&self) -> Vec<String> {
        Vec::new()
    }
}

impl<F: Fn(&str) -> Option<OsString>> EnvSource for F {
    fn var(&self, name: &str) -> Option<OsString> {
        self(name)
    }
}

/// What every variable snowid reads starts with.
pub const VAR_PREFIX: &str = "SNOWID_";

/// Which of the process environment's variables a [`ProcessSnapshot`] takes: those starting with [`VAR_PREFIX`] and
/// those in `names`.
#[derive(Debug, Clone, Copy)]
pub struct Wanted {
    pub names: &'static [&'static str],
}

impl Wanted {
    fn names(self) -> impl Iterator<Item = &'static str> {
        self.names.iter().copied()
    }

    pub fn holds(self, name: &str) -> bool {
        name.starts_with(VAR_PREFIX) || self.names().any(|n| n == name)
    }
}

/// The process environment's variables that a configuration reads ([`Wanted`]), found in one pass over it. Any
/// other variable is read from the environment when asked for.
pub struct ProcessSnapshot {
    wanted: Wanted,
    vars: Vec<(String, OsString)>,
}

impl ProcessSnapshot {
    pub fn take(wanted: Wanted) -> ProcessSnapshot {
        ProcessSnapshot { wanted, vars: vars_of_process(wanted) }
    }
}

impl EnvSource for ProcessSnapshot {
    fn var(&self, name: &str) -> Option<OsString> {
        if !self.wanted.holds(name) {
            return std::env::var_os(name);
        }
        self.vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn snowid_names(&self) -> Vec<String> {
        self.vars.iter().map(|(k, _)| k.clone()).filter(|k| k.starts_with(VAR_PREFIX)).collect()
    }
}

/// The process environment's variables that `wanted` holds (a name that is not UTF-8 is left out). On Linux, one pass
/// over `environ` that copies only those (`std::env::vars_os` copies every name and value, which each
/// `new Snowflake()` would pay).
#[cfg(target_os = "linux")]
fn vars_of_process(wanted: Wanted) -> Vec<(String, OsString)> {
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
            if !std::iter::once(VAR_PREFIX).chain(wanted.names()).any(|n| n.as_bytes().first() == Some(&first)) {
                entry = entry.add(1);
                continue;
            }
            let bytes = std::ffi::CStr::from_ptr(*entry).to_bytes();
            let mut parts = bytes.splitn(2, |&b| b == b'=');
            let (name, value) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            // Names are compared as bytes, and only a kept one is checked as UTF-8.
            let kept = name.starts_with(VAR_PREFIX.as_bytes()) || wanted.names().any(|n| n.as_bytes() == name);
            if let Some(Ok(name)) = kept.then(|| std::str::from_utf8(name)) {
                vars.push((name.to_string(), std::ffi::OsStr::from_bytes(value).to_os_string()));
            }
            entry = entry.add(1);
        }
    }
    vars
}

#[cfg(not(target_os = "linux"))]
fn vars_of_process(wanted: Wanted) -> Vec<(String, OsString)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))).filter(|(k, _)| wanted.holds(k)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_snapshot_reads_what_the_process_environment_holds() {
        // The test binary's own environment: whatever it holds, the snapshot agrees with the OS for every name it
        // keeps, and for one it does not keep.
        let wanted = Wanted { names: &["HOME", "workerId", "container"] };
        let snapshot = ProcessSnapshot::take(wanted);
        for name in ["HOME", "workerId", "container", "SNOWID_WORKER_ID", "SNOWID_LEASE_DIR", "PATH"] {
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
}
