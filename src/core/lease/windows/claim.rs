//! Liveness claims on Windows: the rule a host lease rests on there.
//!
//! A claim is a named event in the `Global\` namespace of kernel objects, made by `CreateEventW`. It has no file:
//! no delete, rename, junction or mount can remove it or make a second process see it as free. It lives while a
//! handle to it is open, and this process keeps its handles for its whole life; Windows closes them when the
//! process exits or is killed. Making a name that exists gives `ERROR_ALREADY_EXISTS`, atomically, so of two
//! processes racing for a name exactly one makes it.
//!
//! - An event, not a mutex: a mutex is owned by the thread that took it, and is abandoned when that thread exits,
//!   while the process lives on (a `worker_thread` may take the default generator's slot and then end).
//! - `Global\`, not `Local\`: `Local\` is one per session, so a service in session 0 and a user's console would not
//!   see each other's claims. Where this process may not make objects in `Global\` (an AppContainer), the lease
//!   fails loudly rather than claim in a namespace of its own.
//! - A name another user made (so this user may not open it, `ERROR_ACCESS_DENIED`) counts as taken: squatting a
//!   name costs a slot, never uniqueness. So does a 64-bit hash shared by two id spaces.
//!
//! The claims of a slot are those of every platform ([`space_name`](super::super::space::space_name) and
//! [`path_name`](super::super::space::path_name), the path as Windows compares paths), and one named after the
//! lease directory's identity (volume serial number and 128-bit file id), so two spellings of one directory (a
//! junction, a mapped drive, an 8.3 name) are the same slot.

use std::os::windows::io::OwnedHandle;
use std::path::Path;
use std::sync::OnceLock;

use super::super::super::error::{quote_path, Class, Code, Error, Result};
use super::sys::{self, FileId};

/// The namespace of every claim: the machine's, whatever the session.
const PREFIX: &str = "Global\\";

/// The longest name after the prefix: kernel object names stop at `MAX_PATH` (260) characters.
const MAX_NAME: usize = 260 - PREFIX.len() - 1;

/// A claim made, held for as long as the value lives (for a lease, the process's life).
#[derive(Debug)]
pub struct Claim {
    _event: OwnedHandle,
}

impl Claim {
    /// Makes the claim `name`: `Ok(None)` when another handle (of this process or another) holds it.
    pub fn take(name: &str) -> std::io::Result<Option<Claim>> {
        Ok(sys::create_event(&full_name(name)?)?.map(|event| Claim { _event: event }))
    }

    /// Whether some process holds the claim `name`, looked at without taking it.
    pub fn held(name: &str) -> std::io::Result<bool> {
        sys::event_exists(&full_name(name)?)
    }
}

/// `name` in the `Global\` namespace; a backslash in it would name a directory of objects, and is refused.
fn full_name(name: &str) -> std::io::Result<String> {
    if name.contains('\\') || name.chars().count() > MAX_NAME {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "claim name with a backslash or too long"));
    }
    Ok(format!("{PREFIX}{name}"))
}

/// The claim of a slot by the lease directory's identity.
pub fn id_name(id: FileId, datacenter_id: u32, worker_id: u32) -> String {
    format!("snowid-lease/v1/fileid/{:x}/{:032x}/dc{datacenter_id}/worker{worker_id}", id.0, id.1)
}

/// Fails, with `ERR_SNOWID_LEASE_UNSUPPORTED` naming `dir`, unless this process may make objects in `Global\`:
/// found by making an event of its own there, until that works once.
pub fn check_global(dir: &Path) -> Result<()> {
    static GLOBAL: OnceLock<()> = OnceLock::new();
    if GLOBAL.get().is_some() {
        return Ok(());
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = format!("{PREFIX}snowid-lease/v1/probe/{}/{nanos:x}", std::process::id());
    match sys::create_event_raw(&name) {
        Ok(_) => {
            let _ = GLOBAL.set(());
            Ok(())
        }
        Err(e) => Err(no_global(dir, &e.to_string())),
    }
}

fn no_global(dir: &Path, e: &str) -> Error {
    Error::new(
        Code::LeaseUnsupported,
        Class::Error,
        format!(
            "host lease in {}: expected to make named objects in the Global\\ namespace, where the claims of every \
             process of the machine meet, found that this process may not ({e}), as in an AppContainer; set \
             SNOWID_LEASE=off with an explicit SNOWID_WORKER_ID, or take worker ids from snowid/redis or \
             snowid/postgres",
            quote_path(dir)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::super::space::path_name;
    use super::super::super::tests::{longest_space_name, namespaced as scope};
    use super::*;

    #[test]
    fn a_name_is_held_once_and_freed_with_its_holder() {
        let name = format!("snowid-test/{}/claim", std::process::id());
        assert!(!Claim::held(&name).unwrap());
        let first = Claim::take(&name).unwrap();
        assert!(first.is_some());
        assert!(Claim::take(&name).unwrap().is_none(), "a second make of a held name finds it");
        assert!(Claim::held(&name).unwrap(), "a look sees it");
        assert!(Claim::take(&name).unwrap().is_none(), "and a look does not take it");
        drop(first);
        assert!(!Claim::held(&name).unwrap(), "closing frees it");
        assert!(Claim::take(&name).unwrap().is_some());
    }

    #[test]
    fn a_claim_made_by_a_thread_outlives_the_thread() {
        let name = format!("snowid-test/{}/thread", std::process::id());
        let made = std::thread::spawn({
            let name = name.clone();
            move || Claim::take(&name).unwrap()
        })
        .join()
        .unwrap();
        assert!(made.is_some());
        assert!(Claim::held(&name).unwrap(), "held while the process lives, though the thread ended");
        assert!(Claim::take(&name).unwrap().is_none());
    }

    #[test]
    fn names_fit_and_ignore_spelling_and_case_but_not_links() {
        let a = path_name(Path::new(r"C:\ProgramData\snowid"), 7, 31);
        for same in [r"c:\programdata\SNOWID\", r"C:/ProgramData//./snowid", r"\\?\C:\ProgramData\snowid"] {
            assert_eq!(a, path_name(Path::new(same), 7, 31), "{same}");
        }
        assert_ne!(a, path_name(Path::new(r"C:\ProgramData\snowid2"), 7, 31));
        assert_ne!(a, path_name(Path::new(r"D:\ProgramData\snowid"), 7, 31));
        assert_ne!(a, path_name(Path::new(r"C:\ProgramData\snowid"), 7, 30));
        let unc = path_name(Path::new(r"\\host\share\snowid"), 0, 0);
        assert_eq!(unc, path_name(Path::new(r"\\?\UNC\HOST\share\snowid"), 0, 0));
        let longest = id_name((u64::MAX, u128::MAX), u32::MAX, u32::MAX);
        assert!(longest.len() <= MAX_NAME && scope().scoped(a.clone()).len() <= MAX_NAME, "{longest}");
        assert!(longest_space_name().len() <= MAX_NAME);
        assert!(Claim::take(&"x".repeat(MAX_NAME + 1)).is_err());
        assert!(Claim::take(r"snowid-test\sub").is_err());
    }

    #[test]
    fn global_names_are_available_here_and_their_absence_says_what_to_set() {
        check_global(Path::new(r"C:\ProgramData\snowid")).unwrap();
        let e = no_global(Path::new(r"C:\x"), "Access is denied. (os error 5)");
        assert_eq!(e.code(), Code::LeaseUnsupported);
        assert!(e.message().contains("found that this process may not (Access is denied. (os error 5))"), "{e}");
        assert!(e.message().contains("SNOWID_LEASE=off with an explicit SNOWID_WORKER_ID"), "{e}");
    }
}
