//! The worker id of a Kubernetes StatefulSet pod: the ordinal at the end of its host name (`web-3` is 3).
//!
//! `SNOWID_WORKER_ID_FROM=statefulset` (or the option `workerIdFrom: 'statefulset'`) turns it on. The host name is `HOSTNAME` (which Kubernetes sets to the pod
//! name), else the OS host name. Only its first DNS label is read, and it must be `<name>-<ordinal>` exactly as a
//! StatefulSet names its pods: a non-empty name that does not end in `-`, then a decimal ordinal with no sign and no
//! leading zero. Anything else is refused, never guessed at, and so is an ordinal past the worker id's range.

use std::ffi::OsString;

use super::env::EnvSource;
use super::error::{quote, Code, Error, Result};

/// The variable that chooses where the worker id comes from.
pub const FROM_VAR: &str = "SNOWID_WORKER_ID_FROM";
/// The variable that names the host (Kubernetes sets it to the pod name).
pub const HOST_VAR: &str = "HOSTNAME";
/// Its one value: the ordinal of a StatefulSet pod's host name.
pub const STATEFULSET: &str = "statefulset";

/// What `SNOWID_WORKER_ID_FROM` (or the `workerIdFrom` option) must be, for messages: any value but `statefulset`
/// is refused (the configuration reads it).
pub fn expected_from() -> String {
    format!("{} (the worker id is then the ordinal of a StatefulSet pod's host name)", quote(STATEFULSET))
}

/// The worker id from the host name's ordinal, at most `max`. `hint` follows the range in messages.
pub fn worker_id(env: &dyn EnvSource, max: u64, hint: &str) -> Result<u64> {
    let (host, what) = host_name(env)?;
    let expected = format!(
        "a StatefulSet pod name, <name>-<ordinal> with the ordinal from 0 to {max}{hint} and no leading zero \
         ({FROM_VAR} is {STATEFULSET})"
    );
    match ordinal(&host) {
        Ordinal::Missing => Err(Error::type_error(Code::InvalidConfig, what, &expected, &quote(&host))),
        Ordinal::Digits(digits) => match digits.parse::<u64>() {
            Ok(n) if n <= max => Ok(n),
            // Too many digits for a u64 is out of range too: no digit string can wrap into range.
            _ => Err(Error::range_error(Code::InvalidConfig, what, &expected, &quote(&host))),
        },
    }
}

/// The host name to read, and what to call it in messages.
fn host_name(env: &dyn EnvSource) -> Result<(String, &'static str)> {
    let expected = "a StatefulSet pod name in UTF-8";
    let (os, what) = match env.var(HOST_VAR) {
        Some(os) => (os, HOST_VAR),
        None => (os_host_name()?, "the host name"),
    };
    match os.into_string() {
        Ok(text) => Ok((text, what)),
        Err(os) => Err(Error::type_error(Code::InvalidConfig, what, expected, &quote(&os.to_string_lossy()))),
    }
}

#[cfg(unix)]
fn os_host_name() -> Result<OsString> {
    use std::os::unix::ffi::OsStringExt;
    // Host names are at most 255 bytes (POSIX HOST_NAME_MAX is 255 on Linux, 255 on macOS).
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for `buf.len()` bytes, which gethostname never writes past.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|&b| b == 0);
    match (rc, len) {
        (0, Some(len)) => Ok(OsString::from_vec(buf.get(..len).unwrap_or_default().to_vec())),
        _ => Err(Error::type_error(
            Code::InvalidConfig,
            "the host name",
            "a host name (HOSTNAME is not set)",
            &format!("none: gethostname failed ({})", std::io::Error::last_os_error()),
        )),
    }
}

#[cfg(not(unix))]
fn os_host_name() -> Result<OsString> {
    Err(Error::type_error(Code::InvalidConfig, HOST_VAR, "a StatefulSet pod name", "it unset"))
}

/// What a host name's first label ends in.
#[derive(Debug, PartialEq, Eq)]
enum Ordinal<'a> {
    /// A StatefulSet ordinal: the digits, not yet checked against any range.
    Digits(&'a str),
    Missing,
}

fn ordinal(host: &str) -> Ordinal<'_> {
    let label = host.split('.').next().unwrap_or_default();
    let Some((name, digits)) = label.rsplit_once('-') else {
        return Ordinal::Missing;
    };
    let well_formed = !name.is_empty()
        && !name.ends_with('-')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if well_formed {
        Ordinal::Digits(digits)
    } else {
        Ordinal::Missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Class;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    fn from_host(host: &str, max: u64) -> Result<u64> {
        worker_id(&env(&[("HOSTNAME", host)]), max, " (workerBits is 5)")
    }

    #[test]
    fn the_ordinal_of_a_pod_name_is_the_worker_id() {
        for (host, id) in [
            ("web-0", 0),
            ("web-3", 3),
            ("my-app-12", 12),
            ("a-b-c-7", 7),
            ("web-31", 31),
            ("web-3.nginx.default.svc.cluster.local", 3),
            ("x-10", 10),
        ] {
            assert_eq!(from_host(host, 31), Ok(id), "{host}");
        }
    }

    #[test]
    fn a_host_name_without_an_ordinal_is_refused() {
        for host in [
            "web",
            "web-",
            "web-3a",
            "web--1",
            "-3",
            "3",
            "",
            "web-+3",
            "web- 3",
            "web-3 ",
            "web-03",
            "web-00",
            "web-٣",
            "web.3",
            "web-3a.x-4",
            ".web-3",
        ] {
            let e = from_host(host, 31).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::TypeError), "{host:?}: {e}");
            assert!(e.message().starts_with("HOSTNAME: expected a StatefulSet pod name"), "{e}");
            assert!(e.message().contains(&quote(host)), "{e}");
        }
    }

    #[test]
    fn an_ordinal_out_of_range_is_refused_however_long() {
        for host in [
            "web-32",
            "web-4294967296",
            "web-18446744073709551615",
            "web-18446744073709551616",
            &format!("web-{}", "9".repeat(5000)),
        ] {
            let e = from_host(host, 31).unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidConfig, Class::RangeError), "{e}");
            assert!(e.message().contains("0 to 31 (workerBits is 5)"), "{e}");
        }
        assert_eq!(from_host("web-32", 255), Ok(32));
        assert_eq!(from_host("web-0", 0), Ok(0));
        assert!(from_host("web-1", 0).is_err());
        let e = from_host("web-32", 31).unwrap_err();
        assert_eq!(
            e.message(),
            "HOSTNAME: expected a StatefulSet pod name, <name>-<ordinal> with the ordinal from 0 to 31 (workerBits is 5) \
             and no leading zero (SNOWID_WORKER_ID_FROM is statefulset), found \"web-32\""
        );
    }

    #[cfg(unix)]
    #[test]
    fn without_hostname_the_os_host_name_is_read() {
        let os = os_host_name().unwrap();
        assert!(!os.is_empty());
        let r = worker_id(&env(&[]), u64::MAX, "");
        match ordinal(os.to_str().unwrap_or_default()) {
            Ordinal::Digits(d) => assert_eq!(r.ok(), d.parse().ok()),
            Ordinal::Missing => assert!(r.unwrap_err().message().starts_with("the host name: expected")),
        }
    }
}
