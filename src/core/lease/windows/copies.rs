//! A generator identity's claim by one loaded copy of snowid, that every other copy in this process sees (see
//! [`CopyClaim`]), on Windows: a named event `Local\snowid-copy-v1-<pid>-<identity>`, made by `CreateEventW` as the
//! slot claims are (`claim`). Every binary loaded in the process reaches the same kernel objects, a second make of
//! the name reports `ERROR_ALREADY_EXISTS` while a copy holds it, and Windows closes the handle when the process
//! ends. An event, not a mutex, for the reason the slot claims give: a mutex is abandoned when the thread that made
//! it ends, and a `worker_thread` may make an identity's state. `Local\` (the session's namespace) is enough, since
//! the name is the process's own, and unlike `Global\` it is open to every process, an AppContainer's included.
//! A name that another user made in the session, and this one may not open, counts as held.

use std::io;
use std::os::windows::io::OwnedHandle;

use super::super::backend::CopyClaim;
use super::sys;

/// An identity's claim by this copy of snowid: held while the value lives.
#[derive(Debug)]
pub struct WinCopyClaim {
    _event: OwnedHandle,
}

impl CopyClaim for WinCopyClaim {
    fn take(identity: u64) -> io::Result<Option<Self>> {
        Ok(sys::create_event(&copy_name(std::process::id(), identity))?.map(|event| WinCopyClaim { _event: event }))
    }
}

/// The name of `identity`'s claim in the process `pid`.
fn copy_name(pid: u32, identity: u64) -> String {
    format!("Local\\snowid-copy-v1-{pid}-{identity:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_is_claimed_once_per_process_until_its_claim_is_dropped() {
        // An identity of the test's own, so that no generator of this test binary has claimed it.
        let identity = 0x5eed_0000_0000_0000 | u64::from(std::process::id());
        let first = WinCopyClaim::take(identity).unwrap();
        assert!(first.is_some());
        assert!(WinCopyClaim::take(identity).unwrap().is_none(), "another copy's take finds it held");
        assert!(sys::event_exists(&copy_name(std::process::id(), identity)).unwrap());
        let from_thread = std::thread::spawn(move || WinCopyClaim::take(identity).unwrap().is_none()).join().unwrap();
        assert!(from_thread, "held for every thread of the process");
        assert!(WinCopyClaim::take(identity ^ 1).unwrap().is_some(), "another identity is another claim");
        drop(first);
        assert!(WinCopyClaim::take(identity).unwrap().is_some(), "dropped, it is free again");
        // Another process's claim of the same identity is another name.
        assert_ne!(copy_name(1, identity), copy_name(2, identity));
        assert_eq!(copy_name(7, 0xab), "Local\\snowid-copy-v1-7-00000000000000ab");
    }
}
