//! The lease directory on Unix, and its safety: a real directory (not a link), that no other user can replace this
//! process's files in.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use super::super::super::error::Result;
use super::super::backend::Sharing;
use super::super::files::{dir_error, dir_problem};
use super::files::{identity, my_uid};

/// The lease directory at `path` (absolute), made when missing: the open directory (which holds the directory's
/// shared lock) and its (device, inode).
///
/// It must be a directory, not a link to one, and no other user may be able to replace this process's files in it:
/// it belongs to this user and no one else may write to it, or it is sticky (mode 1777, as the OS temp dir is), where
/// only a file's owner may remove or rename it.
pub(super) fn open(path: &Path, sharing: Sharing) -> Result<(Arc<File>, (u64, u64))> {
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent) {
            return Err(dir_error(path, "making its parent", &e));
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {
            // The mode is set explicitly: the umask would take the sticky bit and the others' bits away.
            let mode = if sharing == Sharing::Shared { 0o1777 } else { 0o700 };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| dir_error(path, "setting its mode", &e))?;
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(dir_error(path, "making it", &e)),
    }
    if std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false) {
        return Err(dir_problem(path, "a symbolic link (snowid does not follow links)"));
    }
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => dir_problem(path, "a symbolic link (snowid does not follow links)"),
            Some(libc::ENOTDIR) => dir_problem(path, "something that is not a directory"),
            _ => dir_error(path, "opening it", &e),
        })?;
    let m = dir.metadata().map_err(|e| dir_error(path, "reading it", &e))?;
    let me = my_uid();
    let sticky = m.mode() & 0o1000 != 0;
    let others_write = m.mode() & 0o022 != 0;
    if m.uid() == me && others_write && !sticky {
        return Err(dir_problem(
            path,
            &format!(
                "mode {:o}: others may write to it but it is not sticky, so they could replace this process's \
                     files (chmod 700 or 1777)",
                m.mode() & 0o7777
            ),
        ));
    }
    // The default directory, shared by every user, is made by the first snowid process after boot: one made first by
    // another user (any user may make it in /dev/shm or /tmp) is that user's to empty or replace.
    if sharing == Sharing::Shared && m.uid() != 0 && m.uid() != me {
        return Err(dir_problem(
            path,
            &format!(
                "that it belongs to {}, neither root nor this process's user (uid {me}), while it is the default \
                 directory that every user shares: another user made it first, and could remove or replace this \
                 process's slot files. Have root remove it, or make it before any user does (systemd-tmpfiles: \
                 `d {} 1777 root root -`), or use a directory of this user's",
                user_name(m.uid()),
                path.display()
            ),
        ));
    }
    if m.uid() != me && !sticky {
        return Err(dir_problem(
            path,
            &format!(
                "that it belongs to uid {} and is not sticky (mode {:o}), so its owner could replace this process's \
                     files (chmod 1777 shares it)",
                m.uid(),
                m.mode() & 0o7777
            ),
        ));
    }
    // A shared BSD lock on the directory for as long as a lease in it is held: systemd-tmpfiles skips a
    // directory another process has locked, so an age-based cleaner leaves a live process's lease files alone.
    // Best effort: should a cleaner hold its lock at this very moment, a deleted file is made again (see
    // `HostFile::locate`).
    // SAFETY: `dir` is an open directory; flock has no other preconditions.
    unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    Ok((Arc::new(dir), identity(&m)))
}

/// The user `uid`, as "uid 1001 (alice)", or "uid 1001" where the user database has no name for it.
fn user_name(uid: u32) -> String {
    let mut pwd = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and `buf` is as long as its length says.
    let rc = unsafe { libc::getpwuid_r(uid, pwd.as_mut_ptr(), buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return format!("uid {uid}");
    }
    // SAFETY: getpwuid_r found an entry: `pwd` is filled, and its name points into `buf`, NUL-terminated.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.assume_init_ref().pw_name) };
    format!("uid {uid} ({})", name.to_string_lossy())
}
