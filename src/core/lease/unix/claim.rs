//! Liveness claims: the rule a host lease rests on.
//!
//! A claim is a Unix socket bound to a name in Linux's abstract namespace. It has no file: no `unlink`, `rename`,
//! `mount` or symlink switch can remove it or make a second process see it as free. Only its holder's exit (or a
//! close, which snowid never does) frees it, and the kernel does that even on `SIGKILL`. Binding a name that is bound
//! fails with `EADDRINUSE`, atomically, so of two processes racing for a name exactly one wins.
//!
//! A process takes a slot only after it has bound all three claims of the slot:
//! - one named after the slot's id space ([`space_name`](super::super::space::space_name)): the layout's four widths and the lease namespace
//!   (`SNOWID_LEASE_NAMESPACE`, none by default), not its epoch, so two processes that could make the same ids
//!   (those of another epoch can) never hold the same slot at once, whatever lease directory each uses (another
//!   `TMPDIR`, `SNOWID_LEASE_DIR`, a private `/tmp`). A namespace is a separate set of slots: for tests that must
//!   not meet the host's processes.
//! - one named after the lease directory's configured path, as written (normalized only lexically), so a directory
//!   moved, replaced, mounted over or reached through a switched parent symlink is still the same slot;
//! - one named after the directory's device and inode, so two spellings of one directory are the same slot too.
//!
//! A lease namespace scopes the last two ([`Space::scoped`](super::super::space::Space::scoped)) as it does the first
//! (on Windows, only the path's):
//! a test's namespace never meets the host's slots through the default directory's path, nor another test's through a
//! directory's inode that the file system gave again after a removal. Without one, they are named as ever.
//!
//! A process binds an id-space name once: a second lease of the same slot in another directory, in the same process,
//! shares it, as the process's generators of one identity share one state.
//!
//! The abstract namespace belongs to the network namespace: processes in separate network namespaces (containers
//! that share a lease volume but not a network) do not see each other's claims. Between them, only the lease file's
//! lock keeps a slot to one process, and that holds while the lease files and directory are left alone.
//!
//! Any process in the network namespace may bind any name, so another user can squat a slot's name: that costs the
//! slot (the process moves on, or fails loudly), never uniqueness. So does a 64-bit hash shared by two id spaces.

/// A bound claim, held for as long as the value lives (for a lease, the process's life).
#[derive(Debug)]
pub struct Claim {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    _socket: std::os::fd::OwnedFd,
}

/// The longest abstract name: `sun_path` less the leading NUL.
#[cfg(any(target_os = "linux", target_os = "android"))]
const MAX_NAME: usize = 107;

impl Claim {
    /// Binds `name`: `Ok(None)` when another socket holds it.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn take(name: &str) -> std::io::Result<Option<Claim>> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let bytes = name.as_bytes();
        if bytes.len() > MAX_NAME {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "claim name too long"));
        }
        // SAFETY: plain socket(2) call; the descriptor is owned below.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_un is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        // sun_path[0] stays 0: the abstract namespace. The name follows, with no terminator.
        for (dst, src) in addr.sun_path.iter_mut().skip(1).zip(bytes) {
            *dst = *src as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + 1 + bytes.len();
        // SAFETY: `addr` is a valid sockaddr_un and `len` does not exceed its size.
        let rc = unsafe {
            libc::bind(
                std::os::fd::AsRawFd::as_raw_fd(&socket),
                std::ptr::addr_of!(addr).cast::<libc::sockaddr>(),
                len as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(Some(Claim { _socket: socket }));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EADDRINUSE) {
            return Ok(None);
        }
        Err(e)
    }

    /// Where there is no abstract namespace, a claim is always granted: the lease file's lock is then the only rule.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub fn take(_name: &str) -> std::io::Result<Option<Claim>> {
        Ok(Some(Claim {}))
    }
}

/// The claim of a slot by the lease directory's (device, inode).
pub fn inode_name(dev: u64, ino: u64, datacenter_id: u32, worker_id: u32) -> String {
    format!("snowid-lease/v1/inode/{dev:x}/{ino:x}/dc{datacenter_id}/worker{worker_id}")
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::super::super::space::path_name;
    use super::super::super::tests::{longest_space_name, namespaced as scope};
    use super::*;
    use std::path::Path;

    #[test]
    fn a_name_is_held_once_and_freed_with_its_holder() {
        let name = format!("snowid-test/{}/claim", std::process::id());
        let first = Claim::take(&name).unwrap();
        assert!(first.is_some());
        assert!(Claim::take(&name).unwrap().is_none(), "a second bind of a held name fails");
        drop(first);
        assert!(Claim::take(&name).unwrap().is_some(), "closing frees it");
    }

    #[test]
    fn names_fit_and_ignore_spelling_but_not_links() {
        let a = path_name(Path::new("/var/lib/snowid/"), 7, 31);
        assert_eq!(a, path_name(Path::new("/var//lib/./snowid"), 7, 31));
        assert_ne!(a, path_name(Path::new("/var/lib/snowid2"), 7, 31));
        assert_ne!(a, path_name(Path::new("/var/lib/snowid"), 7, 30));
        assert_ne!(a, path_name(Path::new("/var/lib/snowid"), 6, 31));
        let longest = scope().scoped(inode_name(u64::MAX, u64::MAX, u32::MAX, u32::MAX));
        assert!(longest.len() <= MAX_NAME && scope().scoped(a.clone()).len() <= MAX_NAME, "{longest}");
        assert!(longest_space_name().len() <= MAX_NAME);
        assert!(Claim::take(&"x".repeat(MAX_NAME + 1)).is_err());
    }
}
