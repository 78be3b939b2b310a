//! One state per identity per process: every generator with the same layout, epoch, datacenterId and workerId,
//! in any thread, shares it, so generators made per request can never hand out the same id twice.
//!
//! States are kept for the life of the process. Dropping them when the last generator goes would let a new
//! generator restart the sequence inside a ms that an earlier one already used.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::error::{Code, Error, Result};
use super::generator::{Shared, SharedState, State};
use super::layout::Layout;

type Identity = (Layout, u32, u32);

fn registry() -> &'static Mutex<HashMap<Identity, SharedState>> {
    static REGISTRY: OnceLock<Mutex<HashMap<Identity, SharedState>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The state of an identity, made by `make` on first use. A later generator of the same identity must be
/// configured with the same clockBack: two starting values would let one generator's clock-back steps land on
/// values the other is using.
pub fn shared_state(
    layout: &Layout,
    datacenter_id: u32,
    worker_id: u32,
    clock_back: u32,
    make: impl FnOnce() -> Result<State>,
) -> Result<SharedState> {
    let mut map = registry().lock();
    let state = match map.entry((*layout, datacenter_id, worker_id)) {
        Entry::Occupied(e) => Arc::clone(e.get()),
        Entry::Vacant(e) => Arc::clone(e.insert(Shared::new(make()?, layout))),
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
}
