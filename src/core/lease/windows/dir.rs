//! The lease directory on Windows: a real directory (not a symbolic link or junction), held open so that no process
//! can delete or rename it while a slot of this process is in it.

use std::fs::File;
use std::os::windows::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use super::super::super::error::{quote_path, Result};
use super::super::backend::{Opened, Sharing};
use super::super::files::{check_size, dir_error, dir_problem, not_regular, record_pid};
use super::super::record::RECORD_SIZE;
use super::claim::check_global;
use super::sys::{self, FileId, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT};

const LINK: &str = "a symbolic link or junction (snowid does not follow links)";

/// The byte of a slot file that its holder locks: the first past its two records (see the backend's header).
pub(super) const LOCK_BYTE: u64 = 2 * RECORD_SIZE as u64;

/// The lease directory at `path` (absolute), made when missing: the directory held open, and its identity. Its access
/// rights are what the folder it is made in passes on (the default one, in ProgramData, lets every user make files in
/// it that only their owner may change); they are not checked. The default directory (`sharing` is
/// [`Sharing::Shared`]) must belong to this process's user, SYSTEM or the administrators.
pub(super) fn open(path: &Path, sharing: Sharing) -> Result<(Arc<File>, FileId)> {
    check_global(path)?;
    if let Err(e) = std::fs::create_dir_all(path) {
        return Err(dir_error(path, "making it", &e));
    }
    let dir = sys::open_held(path, false).map_err(|e| dir_error(path, "opening it", &e))?;
    let m = dir.metadata().map_err(|e| dir_error(path, "reading it", &e))?;
    if m.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(dir_problem(path, LINK));
    }
    if m.file_attributes() & FILE_ATTRIBUTE_DIRECTORY == 0 {
        return Err(dir_problem(path, "something that is not a directory"));
    }
    if sharing == Sharing::Shared {
        check_owner(&dir, path)?;
    }
    let id = sys::file_id(&dir).map_err(|e| dir_error(path, "reading its identity", &e))?;
    Ok((Arc::new(dir), id))
}

/// What a slot file's metadata says about it, refusing anything but a regular file of at most two records.
pub(super) fn check_slot_file(m: &std::fs::Metadata, path: &Path) -> Result<()> {
    let attributes = m.file_attributes();
    if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(not_regular(path, LINK));
    }
    if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        return Err(not_regular(path, "a directory"));
    }
    if !m.is_file() {
        return Err(not_regular(path, "not a regular file"));
    }
    check_size(m.len(), path)
}

/// The pid the record of the slot file at `path` names, when it is a regular file with a valid one.
pub(super) fn holder_at(path: &Path) -> Option<u32> {
    let file = sys::open_reader(path).ok()?;
    check_slot_file(&file.metadata().ok()?, path).ok()?;
    record_pid(&file, path)
}

/// Opens the slot file at `path` to take it (made when missing): read and write when this user may, else read only
/// to see its lock. Only a regular file of at most two records is accepted.
pub(super) fn open_slot(dir: &Path, path: &Path) -> Result<Opened> {
    let opening = |e: &std::io::Error| dir_error(dir, &format!("opening {}", quote_path(path)), e);
    let opened = match sys::open_held(path, true) {
        Ok(f) => Opened::Writable(f),
        Err(e) if e.raw_os_error() == Some(sys::ERROR_SHARING_VIOLATION) => return Ok(Opened::Busy),
        Err(e) if e.raw_os_error() == Some(sys::ERROR_ACCESS_DENIED) => match sys::open_held(path, false) {
            Ok(f) => Opened::ReadOnly(f),
            Err(e) if e.raw_os_error() == Some(sys::ERROR_SHARING_VIOLATION) => return Ok(Opened::Busy),
            Err(e) => return Err(opening(&e)),
        },
        Err(e) => return Err(opening(&e)),
    };
    let (Opened::Writable(file) | Opened::ReadOnly(file)) = &opened else { return Ok(opened) };
    let m = file.metadata().map_err(|e| dir_error(dir, &format!("reading {}", quote_path(path)), &e))?;
    check_slot_file(&m, path)?;
    Ok(opened)
}

/// Refuses the default directory, shared by every user, unless this process's user, SYSTEM or the administrators own
/// it: a folder another user made first in ProgramData is that user's, who may delete the files in it.
fn check_owner(dir: &File, path: &Path) -> Result<()> {
    let owner = sys::owner(dir).map_err(|e| dir_error(path, "reading its owner", &e))?;
    if owner.trusted {
        return Ok(());
    }
    Err(not_trusted(path, &owner.sid))
}

fn not_trusted(path: &Path, sid: &str) -> super::super::super::error::Error {
    dir_problem(
        path,
        &format!(
            "that it belongs to {sid}, neither this process's user, SYSTEM nor the administrators, while it is the \
             default directory that every user shares: another user made it first, and could delete this process's \
             slot files once it exits. Have an administrator remove it, or make it before any user does, or use a \
             directory of this user's"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_directory_is_trusted_when_this_user_owns_it_and_refused_otherwise() {
        let t = crate::core::testing::TempDir::new("owner");
        let path = t.join("snowid");
        let (dir, _) = open(&path, Sharing::Shared).unwrap();
        let owner = sys::owner(&dir).unwrap();
        assert!(owner.trusted && owner.sid.starts_with("S-1-"), "{}", owner.sid);
        drop(dir);
        // Given to another owner (where this process may give it away): refused as the default directory.
        let given = sys::give_to_everyone(&path).and_then(|()| sys::owner(&sys::open_reader(&path)?));
        match given {
            // Wine reports success and keeps the owner it had.
            Ok(owner) if owner.sid != "S-1-1-0" => println!("the owner stayed {}: that part did not run", owner.sid),
            Ok(_) => {
                let e = open(&path, Sharing::Shared).map(|_| ()).unwrap_err();
                assert_eq!(e.code(), crate::core::error::Code::LeaseDir);
                assert!(e.message().contains("found that it belongs to S-1-1-0, neither this process's user"), "{e}");
                assert!(open(&path, Sharing::Private).is_ok(), "as a directory of its own, its rights are its owner's");
            }
            Err(e) => println!("the owner could not be changed here ({e}): that part did not run"),
        }
        let e = not_trusted(&path, "S-1-5-21-1-2-3-1001");
        assert_eq!(e.code(), crate::core::error::Code::LeaseDir);
        assert!(
            e.message().contains("found that it belongs to S-1-5-21-1-2-3-1001, neither this process's user"),
            "{e}"
        );
        assert!(e.message().contains("Set SNOWID_LEASE_DIR to another"), "{e}");
    }
}
