//! Slot files as every backend reads and writes them, by offset through an open file: at most two records read,
//! whatever the file, and anything but a regular file of at most two records refused, left as found.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::backend::{limit_of, refused, Trouble};
use super::record::{read_file, Record, RECORD_SIZE};

/// `ERR_SNOWID_LEASE_DIR` for a lease directory at `dir` where `what` ("making it") failed with `e`; or
/// `ERR_SNOWID_CLAIM_REFUSED`, naming the limit, where `e` is a limit of the OS reached (no descriptor left, no memory).
pub fn dir_error(dir: &Path, what: &str, e: &std::io::Error) -> Error {
    if limit_of(e).is_some() {
        return refused(&format!("lease directory {}: {what}", quote_path(dir)), e);
    }
    dir_problem(dir, &format!("that {what} failed: {e}"))
}

/// `ERR_SNOWID_LEASE_DIR` for a lease directory at `dir` that is what `found` says.
pub fn dir_problem(dir: &Path, found: &str) -> Error {
    Error::new(
        Code::LeaseDir,
        Class::Error,
        format!(
            "lease directory {}: expected a directory this process can create and lock files in, found {found}. Set \
             SNOWID_LEASE_DIR to another, or SNOWID_LEASE=off with SNOWID_WORKER_ID",
            quote_path(dir)
        ),
    )
}

/// `ERR_SNOWID_LEASE_DIR` for a held slot's file at `path` where `what` ("writing") failed with `e` (or
/// `ERR_SNOWID_CLAIM_REFUSED`, as [`dir_error`] says).
fn file_error(path: &Path, what: &str, e: &std::io::Error) -> Error {
    if limit_of(e).is_some() {
        return refused(&format!("lease file {}: {what} it", quote_path(path)), e);
    }
    Error::new(
        Code::LeaseDir,
        Class::Error,
        format!("lease file {}: expected {what} it to work, found: {e}", quote_path(path)),
    )
}

/// The same, as what keeps a holder from finding its file again, without deciding the slot.
pub fn failed(path: &Path, what: &str, e: &std::io::Error) -> Trouble {
    Trouble::Failed(file_error(path, what, e))
}

/// Writes `record` at its offset to `file`, the held slot's file at `path`, and (best effort) to `earlier`, the files
/// of directories the holder took before its directory moved, so that whoever reaches one of them finds every mark.
pub fn write_record(path: &Path, file: &File, earlier: &[File], record: &Record) -> Result<()> {
    let bytes = record.encode().ok_or_else(|| {
        Error::new(
            Code::LeaseDir,
            Class::Error,
            format!(
                "lease file {}: expected its record to fit in {RECORD_SIZE} bytes, found it longer",
                quote_path(path)
            ),
        )
    })?;
    write_at(file, &bytes, record.offset()).map_err(|e| file_error(path, "writing", &e))?;
    for file in earlier {
        let _ = write_at(file, &bytes, record.offset());
    }
    Ok(())
}

/// Reads into `buf` from `offset`, without moving any position another reader relies on.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
}

/// Writes all of `bytes` at `offset`.
fn write_at(file: &File, mut bytes: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !bytes.is_empty() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::write_at(file, bytes, offset);
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_write(file, bytes, offset);
        match n {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = bytes.get(n..).unwrap_or_default();
                offset += n as u64;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads a slot file's records: at most two records' worth, whatever the file.
pub fn read_records(file: &File) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 2 * RECORD_SIZE];
    let mut filled = 0;
    while filled < buf.len() {
        let rest = buf.get_mut(filled..).unwrap_or_default();
        match read_at(file, rest, filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// The pid the record in `file` names, when it holds a valid one.
pub fn record_pid(file: &File, path: &Path) -> Option<u32> {
    read_records(file).ok().and_then(|b| read_file(&b, path).ok().flatten()).map(|r| r.pid)
}

/// `ERR_SNOWID_LEASE_CORRUPT` for a slot file at `path` that is `what` ("a FIFO", "a directory") rather than a
/// regular file.
pub fn not_regular(path: &Path, what: &str) -> Error {
    Error::new(
        Code::LeaseCorrupt,
        Class::Error,
        format!("lease file {}: expected a regular file, found {what}; it is left as found", quote_path(path)),
    )
}

/// Refuses a slot file of `len` bytes that is longer than two records: it is not read.
pub fn check_size(len: u64, path: &Path) -> Result<()> {
    if len > 2 * RECORD_SIZE as u64 {
        return Err(Error::new(
            Code::LeaseCorrupt,
            Class::Error,
            format!(
                "lease file {}: expected at most {} bytes (two records), found {len}; it is not read, and is left as found",
                quote_path(path),
                2 * RECORD_SIZE,
            ),
        ));
    }
    Ok(())
}
