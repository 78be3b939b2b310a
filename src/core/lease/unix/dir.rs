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
