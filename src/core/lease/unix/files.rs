//! Files as the Unix backend opens and checks them: by name relative to an open directory, never following a link,
//! never blocking, and refusing anything but a regular slot file.

use std::ffi::CStr;
use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::Path;

use super::super::super::error::Result;
use super::super::files::{check_size, not_regular, record_pid};

/// The (device, inode) of a file: what a path must still lead to for its holder to go on.
pub(super) fn identity(m: &std::fs::Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

/// The (device, inode) of `name` in `dir`, by `fstatat` without following a link (so, of the link itself).
pub(super) fn identity_at(dir: &File, name: &CStr) -> std::io::Result<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `dir` is an open directory, `name` a NUL-terminated file name and `st` a valid out-pointer.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fstatat succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    // The same widening as `MetadataExt::dev` and `ino`, so the two compare.
    #[allow(clippy::unnecessary_cast)]
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// `openat` of `name` in `dir` with `flags`, never following a link, never blocking, closed on exec; a file made
/// by it is readable by all (so other users' processes can honour its marks) and writable by its owner only.
pub(super) fn open_at(dir: &File, name: &CStr, flags: libc::c_int) -> std::io::Result<File> {
    let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: `dir` is an open directory and `name` a NUL-terminated file name; the fd returned is owned below.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// What a slot file's metadata says about it, refusing anything but a regular file of at most two records.
pub(super) fn check_slot_file(m: &std::fs::Metadata, path: &Path) -> Result<()> {
    let kind = m.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(not_regular(path, what));
    }
    check_size(m.len(), path)
}

/// The pid the record of the slot file `name` in `dir` names, when it is a regular file with a valid one.
pub(super) fn holder_in(dir: &File, name: &CStr, path: &Path) -> Option<u32> {
    let file = open_at(dir, name, libc::O_RDONLY).ok()?;
    check_slot_file(&file.metadata().ok()?, path).ok()?;
    record_pid(&file, path)
}

/// This process's effective user id.
pub(super) fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
