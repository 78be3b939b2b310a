//! The id space of a host's slots, and the names a slot's claims take (see [`super::backend`]): every backend names
//! its claims after the slot's id space and after the lease directory's configured path.

use std::path::Path;

use super::super::hash::fnv1a;
use super::super::layout::Layout;

/// The id space of a host's slots: its layout's four widths and its lease namespace, hashed.
///
/// Not its epoch: processes of one layout and different epochs make ids that can be the same numbers (a second
/// later, the later epoch's process makes the ids the earlier one made), so they must never hold one slot at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space(u64);

impl Space {
    pub fn new(layout: &Layout, namespace: Option<&str>) -> Space {
        let w = layout.widths();
        let mut text = format!("bits={}/{}/{}/{}", w.datacenter, w.worker, w.clock_back, w.sequence);
        if let Some(ns) = namespace {
            text.push_str(" namespace=");
            text.push_str(ns);
        }
        Space(fnv1a(text.as_bytes()))
    }
}

/// The identity of a process's generator state, for the claim every loaded copy of snowid in the process sees (see
/// [`CopyClaim`](super::backend::CopyClaim)): the registry's key, the layout (widths and epoch), the datacenterId and
/// the workerId, hashed.
pub fn identity_key(layout: &Layout, datacenter_id: u32, worker_id: u32) -> u64 {
    let w = layout.widths();
    let text = format!(
        "bits={}/{}/{}/{} epoch={} dc={datacenter_id} worker={worker_id}",
        w.datacenter,
        w.worker,
        w.clock_back,
        w.sequence,
        layout.epoch()
    );
    fnv1a(text.as_bytes())
}

/// The claim of a slot by its id space: the same for every process that would make the slot's ids.
pub fn space_name(space: Space, datacenter_id: u32, worker_id: u32) -> String {
    format!("snowid-lease/v1/space/{:016x}/dc{datacenter_id}/worker{worker_id}", space.0)
}

/// The claim of a slot by the lease directory's configured path. The path is normalized lexically only (repeated
/// and trailing slashes, `.` components): links are not resolved, since a link switched later must not change it.
pub fn path_name(dir: &Path, datacenter_id: u32, worker_id: u32) -> String {
    let normal: std::path::PathBuf = dir.components().collect();
    let hash = fnv1a(normal.as_os_str().as_encoded_bytes());
    format!("snowid-lease/v1/path/{hash:016x}/dc{datacenter_id}/worker{worker_id}")
}

/// The name of a slot's file in its lease directory.
pub fn slot_name(datacenter_id: u32, worker_id: u32) -> String {
    format!("dc{datacenter_id}-worker{worker_id}.lease")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::layout::{Widths, DEFAULT_EPOCH};

    #[test]
    fn an_id_space_is_its_widths_and_namespace_whatever_the_epoch() {
        let at = |w: Widths, epoch: u64| Layout::new(w, epoch, DEFAULT_EPOCH + 1).unwrap();
        let base = Space::new(&at(Widths::default(), DEFAULT_EPOCH), None);
        assert_eq!(base, Space::new(&at(Widths::default(), DEFAULT_EPOCH), None));
        // Ids of another epoch are numbers of the same kind: the same slots.
        assert_eq!(base, Space::new(&at(Widths::default(), DEFAULT_EPOCH - 1), None));
        assert_eq!(base, Space::new(&at(Widths::default(), DEFAULT_EPOCH - 86_400_000), None));
        let others = [
            Space::new(&at(Widths { datacenter: 2, ..Widths::default() }, DEFAULT_EPOCH), None),
            Space::new(&at(Widths { worker: 6, ..Widths::default() }, DEFAULT_EPOCH), None),
            Space::new(&at(Widths { clock_back: 1, ..Widths::default() }, DEFAULT_EPOCH), None),
            Space::new(&at(Widths { sequence: 11, ..Widths::default() }, DEFAULT_EPOCH), None),
            Space::new(&at(Widths::default(), DEFAULT_EPOCH), Some("test-a")),
            Space::new(&at(Widths::default(), DEFAULT_EPOCH), Some("test-b")),
        ];
        for (i, s) in others.iter().enumerate() {
            assert_ne!(*s, base, "{i}");
            assert!(others.iter().skip(i + 1).all(|o| o != s), "{i}");
        }
        let name = space_name(base, 1, 2);
        assert_ne!(name, space_name(base, 1, 3));
        assert_ne!(name, space_name(base, 0, 2));
        assert!(name.starts_with("snowid-lease/v1/space/") && name.ends_with("/dc1/worker2"), "{name}");
    }
}
