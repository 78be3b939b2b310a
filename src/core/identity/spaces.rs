//! The id space each slot this process holds was leased in.
//!
//! A slot's lease is claimed in one id space (the layout's four widths and the lease namespace: see
//! [`Space`]), and the process keeps it, by lease directory and slot, for its whole life. A later configuration of
//! another id space over the same directory is given that same lease back (the automatic slot, or the configured one),
//! whose claims say nothing of the new id space: another process making ids in it would see the slot free. So a lease
//! is used only in the id space it was first leased in ([`bind`]); any other is refused with
//! `ERR_SNOWID_ID_SPACE_CHANGED`, which names the orders of calls that lead there.
//!
//! The epoch is not part of the id space, for that reason: ids of one slot made with two epochs can be the same numbers
//! (with epochs d ms apart, the later epoch's id at time t is the one the earlier made at t − d). So the generators of a
//! lease all make ids with the epoch of the first ([`issue`]); another is refused the same way.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::{Mutex, MutexGuard};

use super::super::config::Config;
use super::super::error::{quote, Class, Code, Error, Result};
use super::super::lease::space::Space;
use super::super::lease::Lease;

/// A configuration's id space, with the words that name it in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSpace {
    pub space: Space,
    pub text: String,
}

impl IdSpace {
    pub fn of(config: &Config) -> IdSpace {
        let namespace = config.lease_namespace.value.as_deref();
        let w = config.layout.widths();
        let mut text = format!(
            "datacenterBits {}, workerBits {}, clockBackBits {}, sequenceBits {}",
            w.datacenter, w.worker, w.clock_back, w.sequence
        );
        match namespace {
            Some(ns) => text.push_str(&format!(", lease namespace {}", quote(ns))),
            None => text.push_str(", the host's lease namespace"),
        }
        IdSpace { space: Space::new(&config.layout, namespace), text }
    }
}

/// A held lease, the id space it was leased in, and the epoch of its generators once one has started.
pub struct Held {
    lease: Weak<Lease>,
    space: IdSpace,
    epoch: Option<u64>,
}

/// Each held lease, by the address of its allocation (which the `Weak` keeps from reuse).
type Leased = HashMap<usize, Held>;

fn leased() -> &'static Mutex<Leased> {
    static LEASED: OnceLock<Mutex<Leased>> = OnceLock::new();
    LEASED.get_or_init(Default::default)
}

/// The table of leased id spaces, locked: [`bind`] holds it from the lease's acquisition to its record, so that no
/// other thread can be given the same lease for another id space in between.
pub fn lock() -> MutexGuard<'static, Leased> {
    leased().lock()
}

/// `lease`, just given to a configuration of `space`: recorded as leased in `space` the first time; refused when it
/// was leased in another id space first.
pub fn bind(table: &mut Leased, lease: &Arc<Lease>, space: &IdSpace) -> Result<()> {
    if let Some(held) = find(table, lease) {
        return if held.space.space == space.space { Ok(()) } else { Err(changed(lease, &held.space, space)) };
    }
    table.retain(|_, held| held.lease.strong_count() > 0);
    table.insert(Arc::as_ptr(lease) as usize, Held { lease: Arc::downgrade(lease), space: space.clone(), epoch: None });
    Ok(())
}

/// The record of `lease`, if [`bind`] made one.
fn find<'a>(table: &'a mut Leased, lease: &Arc<Lease>) -> Option<&'a mut Held> {
    table.get_mut(&(Arc::as_ptr(lease) as usize)).filter(|h| h.lease.upgrade().is_some_and(|l| Arc::ptr_eq(&l, lease)))
}

/// A generator of `epoch` starting on `lease` (which [`bind`] gave it): the lease's generators make ids with the epoch
/// of the first one for the process's life; another epoch is refused.
pub fn issue(lease: &Arc<Lease>, epoch: u64) -> Result<()> {
    let mut table = lock();
    let Some(held) = find(&mut table, lease) else { return Ok(()) };
    match held.epoch {
        Some(first) if first != epoch => Err(Error::new(
            Code::IdSpaceChanged,
            Class::Error,
            format!(
                "epoch: expected the epoch this process makes ids with on datacenterId {} workerId {} ({first}), found \
                 {epoch}: ids of one slot made with two epochs can be the same numbers (those of the later epoch are \
                 the earlier one's, made as many ms before as the epochs are apart). Use one epoch per id space, or give \
                 generators of another epoch a lease directory (leaseDir) or a workerId of their own",
                lease.datacenter_id(),
                lease.worker_id()
            ),
        )),
        _ => {
            held.epoch = Some(epoch);
            Ok(())
        }
    }
}

fn changed(lease: &Lease, first: &IdSpace, now: &IdSpace) -> Error {
    let (dc, worker) = (lease.datacenter_id(), lease.worker_id());
    Error::new(
        Code::IdSpaceChanged,
        Class::Error,
        format!(
            "workerId: expected a slot leased in the id space of this generator ({}), found this process leased \
             datacenterId {dc} workerId {worker} of the same lease directory in another one first ({}), where it \
             stays claimed for the process's life: config() or a first id before a configure() that changed the \
             layout's widths or the lease namespace, or a Snowflake of another layout. Call configure() before \
             config() and before the first id, or give generators of another id space a lease directory (leaseDir) or \
             a workerId of their own",
            now.text, first.text
        ),
    )
}
