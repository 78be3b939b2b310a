//! The id space of a host's slots, and the names a slot's claims take (see [`super::backend`]): every backend names
//! its claims after the slot's id space and after the lease directory's configured path.

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use super::super::hash::fnv1a;
use super::super::layout::Layout;

/// The id space of a host's slots: its layout's four widths and its lease namespace, hashed.
///
/// Not its epoch: processes of one layout and different epochs make ids that can be the same numbers (a second
/// later, the later epoch's process makes the ids the earlier one made), so they must never hold one slot at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    hash: u64,
    /// The lease namespace's own hash, when there is one.
    namespace: Option<u64>,
}

impl Space {
    pub fn new(layout: &Layout, namespace: Option<&str>) -> Space {
        let w = layout.widths();
        let mut text = format!("bits={}/{}/{}/{}", w.datacenter, w.worker, w.clock_back, w.sequence);
        if let Some(ns) = namespace {
            text.push_str(" namespace=");
            text.push_str(ns);
        }
        Space { hash: fnv1a(text.as_bytes()), namespace: namespace.map(|ns| fnv1a(ns.as_bytes())) }
    }

    /// A directory's claim `name` (by its path or its identity) within this space's lease namespace: a namespace is
    /// a separate set of slots in every directory, the default one too. Without a namespace the name is unchanged, as
    /// every version of snowid names it.
    pub fn scoped(&self, name: String) -> String {
        match self.namespace {
            Some(ns) => format!("{name}/ns{ns:016x}"),
            None => name,
        }
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
    format!("snowid-lease/v1/space/{:016x}/dc{datacenter_id}/worker{worker_id}", space.hash)
}

/// The id-space claims this process holds, by name (of the one type of claim a platform has).
fn space_claims() -> &'static Mutex<HashMap<String, Weak<dyn Any + Send + Sync>>> {
    static SPACE: OnceLock<Mutex<HashMap<String, Weak<dyn Any + Send + Sync>>>> = OnceLock::new();
    SPACE.get_or_init(Default::default)
}

/// The slot's id-space claim, made by `take` (`None` when another holds the name), or shared when this process
/// holds it already: a second lease of the slot in another directory, in the same process, shares it, as the
/// process's generators of one identity share one state.
pub fn space_claim<C: Any + Send + Sync>(
    space: Space,
    datacenter_id: u32,
    worker_id: u32,
    take: impl FnOnce(&str) -> std::io::Result<Option<C>>,
) -> std::io::Result<Option<Arc<C>>> {
    let name = space_name(space, datacenter_id, worker_id);
    let mut held = space_claims().lock();
    if let Some(mine) = held.get(&name).and_then(Weak::upgrade).and_then(|c| c.downcast::<C>().ok()) {
        return Ok(Some(mine));
    }
    let Some(taken) = take(&name)? else {
        return Ok(None);
    };
    let taken = Arc::new(taken);
    held.retain(|_, c| c.strong_count() > 0);
    let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(&taken) as Weak<dyn Any + Send + Sync>;
    held.insert(name, weak);
    Ok(Some(taken))
}

/// The claim of a slot by the lease directory's configured path. The path is normalized lexically only (repeated
/// and trailing separators, `.` components; on Windows also `/` for `\`, the `\\?\` prefix and letter case, as the
/// file system ignores them): links are not resolved, since a link switched later must not change it.
pub fn path_name(dir: &Path, datacenter_id: u32, worker_id: u32) -> String {
    let hash = fnv1a(&normal_path(dir));
    format!("snowid-lease/v1/path/{hash:016x}/dc{datacenter_id}/worker{worker_id}")
}

#[cfg(not(windows))]
fn normal_path(dir: &Path) -> Vec<u8> {
    let normal: std::path::PathBuf = dir.components().collect();
    normal.into_os_string().into_encoded_bytes()
}

/// A Windows path as one spelling: `\\?\C:\x` as `C:\x`, `\\?\UNC\host\share` as `\\host\share`, `/` as `\`,
/// and upper case (NTFS and ReFS compare names case-insensitively, by an upper-case table).
#[cfg(windows)]
fn normal_path(dir: &Path) -> Vec<u8> {
    use std::path::{Component, Prefix};
    let mut text = String::new();
    for part in dir.components() {
        match part {
            Component::Prefix(p) => match p.kind() {
                Prefix::Disk(d) | Prefix::VerbatimDisk(d) => text.push_str(&format!("{}:", d as char)),
                Prefix::UNC(host, share) | Prefix::VerbatimUNC(host, share) => {
                    text.push_str(&format!("\\\\{}\\{}", host.to_string_lossy(), share.to_string_lossy()))
                }
                _ => text.push_str(&p.as_os_str().to_string_lossy()),
            },
            Component::RootDir => text.push('\\'),
            Component::CurDir => {}
            Component::ParentDir | Component::Normal(_) => {
                if !text.is_empty() && !text.ends_with('\\') {
                    text.push('\\');
                }
                text.push_str(&part.as_os_str().to_string_lossy());
            }
        }
    }
    text.to_uppercase().into_bytes()
}

/// The name of a slot's file in its lease directory.
pub fn slot_name(datacenter_id: u32, worker_id: u32) -> String {
    format!("dc{datacenter_id}-worker{worker_id}.lease")
}

/// The (datacenterId, workerId) whose slot file is named `name`: only the name [`slot_name`] gives (no sign, no
/// leading zero, no other spelling of the same numbers).
pub fn slot_of(name: &std::ffi::OsStr) -> Option<(u32, u32)> {
    let name = name.to_str()?;
    let (dc, worker) = name.strip_prefix("dc")?.strip_suffix(".lease")?.split_once("-worker")?;
    let slot = (dc.parse().ok()?, worker.parse().ok()?);
    (slot_name(slot.0, slot.1) == name).then_some(slot)
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

    #[test]
    fn a_namespace_scopes_the_directory_claims_and_none_leaves_them_as_they_were() {
        let layout = Layout::new(Widths::default(), DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
        let name = path_name(Path::new("/dev/shm/snowid"), 0, 3);
        assert_eq!(Space::new(&layout, None).scoped(name.clone()), name, "the host's names, as every version has them");
        let a = Space::new(&layout, Some("test-a")).scoped(name.clone());
        let b = Space::new(&layout, Some("test-b")).scoped(name.clone());
        assert!(a.starts_with(&name) && b.starts_with(&name) && a != b && a != name, "{a} {b}");
        // The namespace alone scopes them: another layout of the namespace is the same directory's same slot.
        let narrower =
            Layout::new(Widths { sequence: 11, ..Widths::default() }, DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
        assert_eq!(Space::new(&narrower, Some("test-a")).scoped(name), a);
    }
}
