//! One state per identity per process: every generator with the same layout, epoch, datacenterId and workerId,
//! in any thread, shares it, so generators made per request can never hand out the same id twice.
//!
//! States are kept for the life of the process. Dropping them when the last generator goes would let a new
//! generator restart the sequence inside a ms that an earlier one already used.
//!
//! This registry is the binary's: a copy of snowid installed with a binary file of its own has another. So each
//! identity is also claimed, when its state is made, by a claim every copy in the process sees
//! ([`CopyClaim`](super::lease::CopyClaim)), and a copy whose identity another copy holds is refused it.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::error::{Class, Code, Error, Result};
use super::generator::{Shared, SharedState, State};
use super::layout::Layout;
use super::lease::backend::refused;
use super::lease::space::identity_key;
use super::lease::{CopyClaim, PlatformCopyClaim};

type Identity = (Layout, u32, u32);

/// An identity's state, and this copy's claim of the identity.
type Registered = (SharedState, PlatformCopyClaim);

/// The most identities a copy claims (one socket or open file each, for the life of the process): past it, an
/// identity is refused (`ERR_SNOWID_CLAIM_REFUSED`), so that generators of many identities cannot use up the
/// process's file descriptors.
pub const MAX_CLAIMS: usize = 1024;

/// The states of this copy, each with its identity's claim.
#[derive(Default)]
struct Registry {
    states: HashMap<Identity, Registered>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The state of an identity, made by `make` on first use. A later generator of the same identity must be
/// configured with the same clockBack: two starting values would let one generator's clock-back steps land on
/// values the other is using. Another loaded copy of snowid that makes ids with the identity already is
/// `ERR_SNOWID_WORKER_ID_IN_USE`.
pub fn shared_state(
    layout: &Layout,
    datacenter_id: u32,
    worker_id: u32,
    clock_back: u32,
    make: impl FnOnce() -> Result<State>,
) -> Result<SharedState> {
    let mut registry = registry().lock();
    let held = registry.states.len();
    let state = match registry.states.entry((*layout, datacenter_id, worker_id)) {
        Entry::Occupied(e) => Arc::clone(&e.get().0),
        Entry::Vacant(e) => {
            let claim = claim(layout, datacenter_id, worker_id, held)?;
            let state = Shared::new(make()?, layout);
            Arc::clone(&e.insert((state, claim)).0)
        }
    };
    let start = state.configured_clock_back();
    if start != clock_back {
        return Err(Error::range_error(
            Code::InvalidConfig,
            "clockBack",
            &format!(
                "{start}, the clockBack of the generator already running in this process with the same layout, \
                 epoch, datacenterId {datacenter_id} and workerId {worker_id}"
            ),
            &clock_back.to_string(),
        ));
    }
    Ok(state)
}

/// This copy's claim of the identity, when it claims `held` already: `ERR_SNOWID_WORKER_ID_IN_USE` when another copy
/// holds it; `ERR_SNOWID_CLAIM_REFUSED` when the OS refuses the means (no descriptor left, no memory, no directory of
/// the user's own) or this copy claims [`MAX_CLAIMS`] identities already. An identity is never left unchecked.
fn claim(layout: &Layout, datacenter_id: u32, worker_id: u32, held: usize) -> Result<PlatformCopyClaim> {
    let what =
        format!("workerId: the claim of datacenterId {datacenter_id} workerId {worker_id} by this copy of snowid");
    if held >= MAX_CLAIMS {
        return Err(Error::new(
            Code::ClaimRefused,
            Class::Error,
            format!(
                "{what}: expected this copy to claim at most {MAX_CLAIMS} identities (one socket or open file each, \
                 for the life of the process), found {held} claimed already: generators of that many (layout, epoch, \
                 datacenterId, workerId) identities in one process. Use fewer"
            ),
        ));
    }
    match PlatformCopyClaim::take(identity_key(layout, datacenter_id, worker_id)) {
        Ok(Some(claim)) => Ok(claim),
        Err(e) => Err(refused(&what, &e)),
        Ok(None) => Err(Error::new(
            Code::WorkerIdInUse,
            Class::Error,
            format!(
                "workerId: expected an identity no other copy of snowid in this process makes ids with, found \
                 datacenterId {datacenter_id} workerId {worker_id} (of this layout and epoch) in use by another copy, \
                 one with a binary file of its own (a second install of the package, as another version in \
                 node_modules is): load one copy (deduplicate the installs: npm dedupe), or give each copy's \
                 generators worker ids of their own"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::layout::{Widths, DEFAULT_EPOCH};

    #[test]
    fn same_identity_shares_state_and_others_do_not() {
        let l = Layout::new(Widths { sequence: 11, ..Widths::default() }, DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
        let a = shared_state(&l, 1, 2, 0, || Ok(State::new(0))).unwrap();
        let b = shared_state(&l, 1, 2, 0, || panic!("made twice")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let c = shared_state(&l, 1, 3, 0, || Ok(State::new(0))).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        let e = shared_state(&l, 1, 2, 1, || Ok(State::new(1))).map(|_| ()).unwrap_err();
        assert_eq!(e.code(), Code::InvalidConfig);
        assert!(
            e.message().starts_with("clockBack: expected 0, the clockBack of the generator already running"),
            "{e}"
        );
        // A state that fails to be made is not registered.
        let l2 = Layout::new(Widths { sequence: 10, ..Widths::default() }, DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
        let boom = || Err(Error::new(Code::LeaseDir, crate::core::error::Class::Error, "x"));
        assert!(shared_state(&l2, 0, 0, 0, boom).is_err());
        assert!(shared_state(&l2, 0, 0, 0, || Ok(State::new(0))).is_ok());
    }

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android", windows))]
    fn an_identity_another_copy_holds_is_refused() {
        // Another copy of snowid, with its own registry, holds (5, 6) of this layout: its claim, taken here.
        let l = Layout::new(Widths { sequence: 9, ..Widths::default() }, DEFAULT_EPOCH, DEFAULT_EPOCH + 1).unwrap();
        let theirs = PlatformCopyClaim::take(identity_key(&l, 5, 6)).unwrap();
        assert!(theirs.is_some());
        let e = shared_state(&l, 5, 6, 0, || panic!("no state is made")).map(|_| ()).unwrap_err();
        assert_eq!((e.code(), e.class()), (Code::WorkerIdInUse, Class::Error));
        assert!(e.message().contains("in use by another copy, one with a binary file of its own"), "{e}");
        // Another epoch is another identity, whose state another copy may make.
        let later = Layout::new(l.widths(), DEFAULT_EPOCH + 1, DEFAULT_EPOCH + 2).unwrap();
        assert!(shared_state(&later, 5, 6, 0, || Ok(State::new(0))).is_ok());
        // Once the other copy's claim ends (its process would have to end: here, the value is dropped), it is free.
        drop(theirs);
        let a = shared_state(&l, 5, 6, 0, || Ok(State::new(0))).unwrap();
        // And this copy's claim now keeps it from the others.
        assert!(PlatformCopyClaim::take(identity_key(&l, 5, 6)).unwrap().is_none());
        assert!(Arc::ptr_eq(&a, &shared_state(&l, 5, 6, 0, || panic!("made twice")).unwrap()));
    }
}
