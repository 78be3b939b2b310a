//! Errors of the core: a public struct around a private kind, with a stable code, the JS class it maps to, and a
//! message of the form "what: expected X, found Y".

use std::fmt;

/// The stable `code` carried by every error that reaches JS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    InvalidConfig,
    InvalidId,
    InvalidArgument,
    ClockBackwards,
    TimeExhausted,
    AlreadyConfigured,
    WorkerIdInUse,
    NoFreeWorkerId,
    LeaseDir,
    LeaseCorrupt,
    LeaseLost,
    ClaimRefused,
    /// Made by the host lease of a platform without one (`lease::none`).
    #[cfg_attr(unix, allow(dead_code))]
    LeaseUnsupported,
    IdentityRequired,
    IdSpaceChanged,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidConfig => "ERR_SNOWID_INVALID_CONFIG",
            Code::InvalidId => "ERR_SNOWID_INVALID_ID",
            Code::InvalidArgument => "ERR_SNOWID_INVALID_ARGUMENT",
            Code::ClockBackwards => "ERR_SNOWID_CLOCK_BACKWARDS",
            Code::TimeExhausted => "ERR_SNOWID_TIME_EXHAUSTED",
            Code::AlreadyConfigured => "ERR_SNOWID_ALREADY_CONFIGURED",
            Code::WorkerIdInUse => "ERR_SNOWID_WORKER_ID_IN_USE",
            Code::NoFreeWorkerId => "ERR_SNOWID_NO_FREE_WORKER_ID",
            Code::LeaseDir => "ERR_SNOWID_LEASE_DIR",
            Code::LeaseCorrupt => "ERR_SNOWID_LEASE_CORRUPT",
            Code::LeaseLost => "ERR_SNOWID_LEASE_LOST",
            Code::ClaimRefused => "ERR_SNOWID_CLAIM_REFUSED",
            Code::LeaseUnsupported => "ERR_SNOWID_LEASE_UNSUPPORTED",
            Code::IdentityRequired => "ERR_SNOWID_IDENTITY_REQUIRED",
            Code::IdSpaceChanged => "ERR_SNOWID_ID_SPACE_CHANGED",
        }
    }
}

/// The JS constructor an error is thrown as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Error,
    TypeError,
    RangeError,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: Code,
    class: Class,
    message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(code: Code, class: Class, message: impl Into<String>) -> Self {
        Error { code, class, message: message.into() }
    }

    /// A value of the wrong kind: `what: expected X, found Y`.
    pub fn type_error(code: Code, what: &str, expected: &str, found: &str) -> Self {
        Self::new(code, Class::TypeError, format!("{what}: expected {expected}, found {found}"))
    }

    /// A value of the right kind but outside its range: `what: expected X, found Y`.
    pub fn range_error(code: Code, what: &str, expected: &str, found: &str) -> Self {
        Self::new(code, Class::RangeError, format!("{what}: expected {expected}, found {found}"))
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn class(&self) -> Class {
        self.class
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The most characters of an input that a message repeats.
pub const QUOTE_CHARS: usize = 40;

/// Quotes text found in input so that empty strings, spaces and control characters are visible in a message.
/// Text longer than [`QUOTE_CHARS`] characters is cut there and its length given, so a message stays short whatever
/// the input.
pub fn quote(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= QUOTE_CHARS {
        return format!("{text:?}");
    }
    let head: String = text.chars().take(QUOTE_CHARS).collect();
    format!("{head:?}... ({chars} characters)")
}

/// The most characters of a path that a message repeats: enough for any ordinary path.
pub const QUOTE_PATH_CHARS: usize = 160;

/// Quotes a path for a message. A path longer than [`QUOTE_PATH_CHARS`] characters keeps its end, which names the
/// file, and gives its length.
pub fn quote_path(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    let chars = text.chars().count();
    if chars <= QUOTE_PATH_CHARS {
        return format!("{text:?}");
    }
    let tail: String = text.chars().skip(chars - QUOTE_PATH_CHARS / 2).collect();
    format!("...{tail:?} ({chars} characters)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_input_is_bounded() {
        assert_eq!(quote(""), "\"\"");
        assert_eq!(quote("a\nb"), "\"a\\nb\"");
        let long = "x".repeat(1 << 20);
        let q = quote(&long);
        assert_eq!(q, format!("\"{}\"... (1048576 characters)", "x".repeat(QUOTE_CHARS)));
        let p = format!("/{}/dc0-worker0.lease", "d".repeat(1 << 16));
        let q = quote_path(std::path::Path::new(&p));
        assert!(q.starts_with("...\"ddd") && q.ends_with("/dc0-worker0.lease\" (65555 characters)"), "{q}");
        assert_eq!(quote_path(std::path::Path::new("/tmp/snowid")), "\"/tmp/snowid\"");
        let exact = "é".repeat(QUOTE_CHARS);
        assert_eq!(quote(&exact), format!("{exact:?}"));
    }
}
