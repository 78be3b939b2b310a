//! Which slots live processes hold, read without taking any lock. Windows lists no file locks, as Linux does in
//! `/proc/locks`: a slot file's record names its holder when the slot's claim by this directory's identity is held,
//! which only its holder (while it lives) can make it. That claim is the same in every lease namespace, so a process
//! sees the holders of every namespace live, as `/proc/locks` shows them on Linux.

use std::ops::RangeInclusive;

use super::super::super::error::Result;
use super::super::backend::{Dir, Os, SlotHolder};
use super::super::files::{dir_error, read_records};
use super::super::record::read_file;
use super::super::space::slot_of;
use super::claim::{id_name, Claim};
use super::dir::check_slot_file;
use super::sys::{self, FileId};

/// Every slot of the datacenter ids `datacenters` whose file holds a valid record, sorted, without taking any lock:
/// live where the slot's claim by this directory is held. Files that cannot be read, or are not regular files of a
/// lease's size, are left out.
pub(super) fn holders<O: Os<Id = FileId>>(dir: &Dir<O>, datacenters: RangeInclusive<u32>) -> Result<Vec<SlotHolder>> {
    let entries = std::fs::read_dir(&dir.path).map_err(|e| dir_error(&dir.path, "listing it", &e))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some((datacenter, worker)) = slot_of(&entry.file_name()).filter(|(d, _)| datacenters.contains(d)) else {
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
        if let Some(record) = record {
            let live = Claim::held(&id_name(dir.id, datacenter, worker)).unwrap_or(false);
            out.push(SlotHolder { datacenter_id: datacenter, worker_id: worker, record, live });
        }
    }
    out.sort_unstable_by_key(|h| (h.datacenter_id, h.worker_id));
    Ok(out)
}
