//! A generator identity's claim by one loaded copy of snowid, that every other copy in this process sees (see
//! [`CopyClaim`]), on Unix:
//!
//! - on Linux and Android, an abstract socket named after the process's pid namespace, its pid and the identity: no
//!   file to lose, and freed by the kernel when the process ends. The pid namespace is in the name because processes
//!   that share a network namespace (the containers of a Kubernetes pod) may have one pid each in their own;
//! - elsewhere, an exclusive `flock` on a file named after the pid and the identity, in `snowid-copies-<uid>` under
//!   the temp directory, made mode 0700 and refused unless it is the user's own directory. A `flock` belongs to an
//!   open file, so another copy's open of the same file is refused the lock; the OS frees it when the process ends.
//!   The first claim of a copy removes the files of processes that are gone, so they do not pile up; a file removed
//!   between a taker's open and its lock is no claim, so a taker holds one only once the path still leads to the file
//!   it locked.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::super::backend::CopyClaim;

/// An identity's claim by this copy of snowid: held while the value lives.
#[derive(Debug)]
pub struct UnixCopyClaim {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    _socket: super::claim::Claim,
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    _file: File,
}

impl CopyClaim for UnixCopyClaim {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn take(identity: u64) -> io::Result<Option<Self>> {
        let name = socket_name(pid_namespace(), std::process::id(), identity);
        Ok(super::claim::Claim::take(&name)?.map(|socket| UnixCopyClaim { _socket: socket }))
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn take(identity: u64) -> io::Result<Option<Self>> {
        let dir = files_dir()?;
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep(&dir));
        Ok(lock_file(&dir, std::process::id(), identity)?.map(|file| UnixCopyClaim { _file: file }))
    }
}

/// The abstract name of `identity`'s claim in the process `pid` of the pid namespace `namespace`.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
fn socket_name(namespace: u64, pid: u32, identity: u64) -> String {
    format!("snowid-copy/v1/{namespace:x}/{pid}/{identity:016x}")
}

/// The inode of this process's pid namespace (0 where it cannot be read), looked up once.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    static NAMESPACE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *NAMESPACE.get_or_init(|| std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino()))
}

/// The user's directory of claim files under the temp directory: made mode 0700 when missing, and refused unless it
/// is a directory (not a link) of this user's that no one else may write to.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn files_dir() -> io::Result<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("snowid-copies-{uid}"));
    private_dir(&dir, uid)?;
    Ok(dir)
}

/// Makes `dir` (mode 0700) when missing, and checks that it is a directory of `uid`'s that no one else may write to.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn private_dir(dir: &Path, uid: u32) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let m = std::fs::symlink_metadata(dir)?;
    if !m.is_dir() || m.uid() != uid || m.mode() & 0o022 != 0 {
        return Err(io::Error::other("the claims directory is not the user's own"));
    }
    Ok(())
}

/// The file of `identity`'s claim in the process `pid`.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn claim_file(dir: &Path, pid: u32, identity: u64) -> PathBuf {
    dir.join(format!("{pid}-{identity:016x}.claim"))
}

/// Locks `identity`'s claim file for the process `pid`: `None` when another open file holds its lock.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn lock_file(dir: &Path, pid: u32, identity: u64) -> io::Result<Option<File>> {
    let path = claim_file(dir, pid, identity);
    // A sweep may remove the file between the open and the lock (only when the process is gone, but its pid may be
    // this process's by now): then the path no longer leads to the file locked, and the file is opened again.
    for _ in 0..8 {
        let Some(file) = open_locked(&path)? else {
            return Ok(None);
        };
        if same_file(&file, &path) {
            return Ok(Some(file));
        }
    }
    Err(io::Error::other("the claim file kept being removed"))
}

/// `path` opened (made if missing, mode 0600, never through a link) with its exclusive lock: `None` when another open
/// file holds it.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn open_locked(path: &Path) -> io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Whether `path` leads to `file`.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Removes the claim files in `dir` of processes that are gone, each only once its lock is taken here, so that a
/// file some live process holds is never removed. Best effort.
#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split_once('-')).and_then(|(p, _)| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 sends nothing; it asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if !gone {
            continue;
        }
        let path = entry.path();
        if let Ok(Some(file)) = open_locked(&path) {
            let _ = std::fs::remove_file(&path);
            drop(file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::TempDir;

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_claimed_identity_is_refused_to_another_copy_until_its_claim_ends() {
        // Another copy of snowid in this process takes the same name: here, a second take.
        let identity = 0x5eed_0000_0000_0000 ^ u64::from(std::process::id());
        let first = UnixCopyClaim::take(identity).unwrap();
        assert!(first.is_some());
        assert!(UnixCopyClaim::take(identity).unwrap().is_none(), "held");
        assert!(UnixCopyClaim::take(identity ^ 1).unwrap().is_some(), "another identity is free");
        drop(first);
        assert!(UnixCopyClaim::take(identity).unwrap().is_some(), "freed with its claim");
        let name = socket_name(u64::MAX, u32::MAX, u64::MAX);
        assert!(name.len() <= 107, "{name}");
        assert_ne!(socket_name(1, 2, 3), socket_name(4, 2, 3), "pid namespaces apart");
    }

    #[test]
    fn a_claim_file_is_locked_once_and_swept_once_its_process_is_gone() {
        let t = TempDir::new("copies");
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        private_dir(&t.0, uid).unwrap();
        let pid = std::process::id();
        let first = lock_file(&t.0, pid, 7).unwrap();
        assert!(first.is_some());
        assert!(lock_file(&t.0, pid, 7).unwrap().is_none(), "another open file is refused the lock");
        assert!(lock_file(&t.0, pid, 8).unwrap().is_some());
        // A file of a process that is gone (pid 2^22 + 1 is past Linux's largest), and one of a live process.
        let gone = claim_file(&t.0, (1 << 22) + 1, 7);
        std::fs::write(&gone, "").unwrap();
        sweep(&t.0);
        assert!(!gone.exists(), "swept");
        assert!(claim_file(&t.0, pid, 7).exists(), "a live process's file is kept");
        assert!(lock_file(&t.0, pid, 7).unwrap().is_none(), "and still held");
        drop(first);
        assert!(lock_file(&t.0, pid, 7).unwrap().is_some());
    }

    #[test]
    fn a_claims_directory_that_is_not_the_users_own_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let t = TempDir::new("copies-open");
        std::fs::create_dir_all(&t.0).unwrap();
        std::fs::set_permissions(&t.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        assert!(private_dir(&t.0, uid).is_err(), "writable by others");
        assert!(private_dir(&t.0, uid.wrapping_add(1)).is_err(), "another user's");
        let link = t.join("link");
        let target = TempDir::new("copies-target");
        private_dir(&target.0, uid).unwrap();
        std::os::unix::fs::symlink(&target.0, &link).unwrap();
        assert!(private_dir(&link, uid).is_err(), "a link");
    }
}
