//! Which slots live processes hold, read without taking any lock. Windows lists no file locks, as Linux does in
//! `/proc/locks`: a slot file's record names its holder when the slot's claim by this directory's identity is held,
//! which only its holder (while it lives) can make it.

use super::super::super::error::Result;
use super::super::files::{dir_error, read_records};
use super::super::record::read_file;
use super::claim::{id_name, Claim};
use super::dir::{check_slot_file, Directory};
use super::sys;

/// The (workerId, pid) of every slot of `datacenter_id` held by a live process, sorted by workerId, without taking
/// any lock: the pid its file names, where the slot's claim by this directory is held. Files that cannot be read,
/// or are not regular files of a lease's size, are left out.
pub(super) fn recorded(dir: &Directory, datacenter_id: u32) -> Result<Vec<(u32, u32)>> {
    let prefix = format!("dc{datacenter_id}-worker");
    let entries = std::fs::read_dir(&dir.path).map_err(|e| dir_error(&dir.path, "listing it", &e))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(worker) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".lease"))
            .and_then(|w| w.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let Some(file) = sys::open_reader(&path)
            .ok()
            .filter(|f| f.metadata().ok().is_some_and(|m| check_slot_file(&m, &path).is_ok()))
        else {
            continue;
        };
        let record = read_records(&file).ok().and_then(|b| read_file(&b, &path).ok().flatten());
        if let Some(r) = record {
            if Claim::held(&id_name(dir.id, datacenter_id, worker)).unwrap_or(false) {
                out.push((worker, r.pid));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}
