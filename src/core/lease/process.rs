//! What a lease record says of its holder besides its pid: this process's host name and command line, read once.

use std::sync::OnceLock;

use super::record::{bounded, MAX_COMMAND, MAX_HOST};

/// This process's host name and command line, cut as a record keeps them (empty where the platform gives none).
pub fn this_process() -> &'static (String, String) {
    static FACTS: OnceLock<(String, String)> = OnceLock::new();
    FACTS.get_or_init(|| {
        (bounded(&host_name(), MAX_HOST).to_string(), bounded(&command_line(), MAX_COMMAND).to_string())
    })
}

/// The host name, as `gethostname` gives it.
#[cfg(unix)]
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; one byte is kept back so the name always ends with a NUL.
    let done = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if done != 0 {
        return String::new();
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(0);
    String::from_utf8_lossy(buf.get(..len).unwrap_or_default()).into_owned()
}

/// The host name, as Windows gives it to every process (`COMPUTERNAME`).
#[cfg(windows)]
fn host_name() -> String {
    std::env::var_os("COMPUTERNAME").map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(not(any(unix, windows)))]
fn host_name() -> String {
    String::new()
}

/// The command line: `/proc/self/cmdline` on Linux (at most its first 4 KiB), else the arguments std was given;
/// arguments joined by spaces, bytes that are not UTF-8 read as U+FFFD.
fn command_line() -> String {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::io::Read;
        let mut raw = Vec::new();
        let read = std::fs::File::open("/proc/self/cmdline").and_then(|f| f.take(4096).read_to_end(&mut raw));
        if read.is_ok() && !raw.is_empty() {
            let args: Vec<_> = raw.split(|&b| b == 0).filter(|a| !a.is_empty()).map(String::from_utf8_lossy).collect();
            return args.join(" ");
        }
    }
    std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_named_and_bounded() {
        let (host, command) = this_process();
        assert!(host.len() <= MAX_HOST && command.len() <= MAX_COMMAND);
        #[cfg(unix)]
        assert!(!host.is_empty(), "gethostname gives a name");
        #[cfg(target_os = "linux")]
        assert_eq!(host.as_str(), std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim_end());
        let argv0 = std::env::args().next().unwrap();
        assert!(command.starts_with(bounded(&argv0, MAX_COMMAND)), "{command:?} starts with {argv0:?}");
    }
}
