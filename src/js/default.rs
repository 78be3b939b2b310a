//! The process's default generator: configured on first need (by `configure()` or from the environment), started
//! by its first id, and read without starting it (its layout, its configuration).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use napi::sys;
use parking_lot::Mutex;

use crate::core::config::{Config, Options};
use crate::core::error::{Class, Code, Error as CoreError, Result as CoreResult};
use crate::core::generator::{Generator, Snapshot};
use crate::core::identity::{self, bind_worker, IdSpace};
use crate::core::layout::Layout;
use crate::core::time::{Clock, SystemClock};

use super::env::{JsEnv, Remembered};
use super::errors::emit_warning;
use super::report::{host_lease, stats_of, SnowidStats};

/// A configuration resolved from `opts` over the environment `env` holds now.
pub(crate) fn resolve(opts: &Options, env: &JsEnv) -> CoreResult<Config> {
    env.finish(Config::resolve(opts, env, SystemClock.now_ms()))
}

/// Whether the process has given its one warning of an identity no one chose.
static WARNED: AtomicBool = AtomicBool::new(false);

/// Gives `warning` (from `identity::generator` or `identity::check`), the first time there is one in this process, as a
/// `SnowidWarning` with the code `SNOWID_IDENTITY_UNCHOSEN`. Call it holding no lock: `process.emitWarning` is JS.
pub(crate) fn warn_once(env: sys::napi_env, warning: Option<String>) {
    if let Some(message) = warning {
        if !WARNED.swap(true, Ordering::AcqRel) {
            emit_warning(env, &message, "SNOWID_IDENTITY_UNCHOSEN");
        }
    }
}

/// The process-wide default generator, once it has issued its first id.
pub(crate) static DEFAULT: OnceLock<(Generator<SystemClock>, Config)> = OnceLock::new();
/// The default generator's configuration before it starts.
pub(crate) static PENDING: Mutex<Pending> =
    Mutex::new(Pending { options: None, seen: BTreeMap::new(), layout: None, config: None, leased: None });

/// What `configure()` gave, and what was resolved from it and the environment on first need.
///
/// The environment is the `process.env` of the thread that first needs a value, and each variable is read once and
/// kept: `decode()` before the first id, `config()` and the generator itself all see the same values. Reading ids
/// resolves only the layout, so a variable it does not need can never stop it.
pub(crate) struct Pending {
    options: Option<Options>,
    seen: BTreeMap<String, Option<OsString>>,
    layout: Option<Layout>,
    config: Option<Config>,
    /// The configuration `config()` leased the default generator's slot with (the process keeps that slot).
    leased: Option<Config>,
}

impl Pending {
    fn config(&mut self, env: sys::napi_env) -> CoreResult<&Config> {
        let config = match self.config.take() {
            Some(c) => c,
            None => {
                let source = JsEnv::new(env);
                let remembered = Remembered { seen: RefCell::new(&mut self.seen), source: &source };
                let opts = self.options.clone().unwrap_or_default();
                source.finish(Config::resolve(&opts, &remembered, SystemClock.now_ms()))?
            }
        };
        Ok(self.config.insert(config))
    }

    fn layout(&mut self, env: sys::napi_env) -> CoreResult<Layout> {
        if let Some(c) = &self.config {
            return Ok(c.layout);
        }
        if let Some(l) = self.layout {
            return Ok(l);
        }
        let source = JsEnv::new(env);
        let remembered = Remembered { seen: RefCell::new(&mut self.seen), source: &source };
        let opts = self.options.clone().unwrap_or_default();
        let layout = source.finish(Config::resolve_layout(&opts, &remembered, SystemClock.now_ms()))?;
        Ok(*self.layout.insert(layout))
    }
}

#[inline]
pub(crate) fn default_generator(env: sys::napi_env) -> CoreResult<&'static Generator<SystemClock>> {
    match DEFAULT.get() {
        Some((g, _)) => Ok(g),
        None => start_default(env),
    }
}

#[cold]
pub(crate) fn start_default(env: sys::napi_env) -> CoreResult<&'static Generator<SystemClock>> {
    let mut pending = PENDING.lock();
    if let Some((g, _)) = DEFAULT.get() {
        return Ok(g);
    }
    let mut config = pending.config(env)?.clone();
    let (generator, warning) = identity::generator(&mut config)?;
    let generator = &DEFAULT.get_or_init(|| (generator, config)).0;
    drop(pending);
    warn_once(env, warning);
    Ok(generator)
}

/// The default generator's configuration, without starting it, refused (or warned of) as its first id would be. With
/// `bind`, an automatic worker id is leased so that it can be reported (the process keeps that slot, and the generator
/// will use it).
pub(crate) fn default_config(env: sys::napi_env, bind: bool) -> CoreResult<Config> {
    let mut pending = PENDING.lock();
    if let Some((_, c)) = DEFAULT.get() {
        return Ok(c.clone());
    }
    let mut config = pending.config(env)?.clone();
    let warning = identity::check(&config)?;
    if bind && config.worker_id_needs_lease() {
        bind_worker(&mut config)?;
        pending.leased.get_or_insert_with(|| config.clone());
    }
    drop(pending);
    warn_once(env, warning);
    Ok(config)
}

/// Refuses options that would make the default generator's ids in another id space than the one `config()` leased
/// its slot in, over the same lease directory: the slot stays leased in that one, and would be given back to them (see
/// `identity::bind_worker`, which refuses it then in any case).
fn space_kept(leased: Option<&Config>, next: &Config) -> CoreResult<()> {
    let Some(leased) = leased else { return Ok(()) };
    let (before, after) = (IdSpace::of(leased), IdSpace::of(next));
    if !next.lease.value || next.lease_dir.value != leased.lease_dir.value || before.space == after.space {
        return Ok(());
    }
    Err(CoreError::new(
        Code::IdSpaceChanged,
        Class::Error,
        format!(
            "configure: expected a call before config() leased the default generator's slot, or options of its id space \
             ({}), found config() leased datacenterId {} workerId {} first and these options make ids in another one \
             ({}) over the same lease directory, where that slot is not claimed. Call configure() before config(), keep \
             the layout's widths and the lease namespace, or give these options a lease directory of their own \
             (leaseDir)",
            before.text, leased.datacenter_id.value, leased.worker_id.value, after.text
        ),
    ))
}

/// How many times `configure()` has replaced the pending configuration, moved only under the `PENDING` lock: the
/// version of `PENDING`, which JS reads through [`configured_view`] to know that the default layout its `decode` split
/// ids with is still current (it is for as long as the count has not moved).
static CONFIGURED: AtomicU64 = AtomicU64::new(0);

/// The default generator's layout, without starting it, and without reading the variables only generating needs.
#[inline]
pub(crate) fn default_layout(env: sys::napi_env) -> CoreResult<Layout> {
    counted_default_layout(env).map(|(_, layout)| layout)
}

/// [`default_layout`], with the `CONFIGURED` count it is current for: the layout stays the default's for as long as
/// the count has not moved (once the generator has started, `configure()` is refused and the count never moves).
/// Before the generator starts, it is `PENDING`'s, read under its lock.
pub(crate) fn counted_default_layout(env: sys::napi_env) -> CoreResult<(u64, Layout)> {
    if let Some((g, _)) = DEFAULT.get() {
        return Ok((CONFIGURED.load(Ordering::Acquire), *g.layout()));
    }
    let mut pending = PENDING.lock();
    // Read under the lock, which `configure()` holds while it replaces the configuration and moves the count.
    let count = CONFIGURED.load(Ordering::Relaxed);
    Ok((count, pending.layout(env)?))
}

/// A `Uint32Array` of two elements over `CONFIGURED` itself, for `index.js`'s `decode`, which keeps the default
/// layout it was last told with the count it is current for, and reads the count through this view to know that it
/// still is. `None` where the runtime cannot show JS this memory itself (one that refuses external buffers, or that
/// copies their data), which `index.js` takes as a layout never known to be current.
pub(crate) fn configured_view(env: sys::napi_env) -> Option<sys::napi_value> {
    let at = CONFIGURED.as_ptr().cast::<std::ffi::c_void>();
    let (mut buffer, mut view, mut data, mut length) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), 0usize);
    // SAFETY: `CONFIGURED` is a static, so its 8 bytes outlive every view, which nothing frees (no finalizer); JS
    // only reads it, and an aligned 32-bit load of a word that an atomic store changes sees the old or the new word.
    let made = unsafe { sys::napi_create_external_arraybuffer(env, at, 8, None, ptr::null_mut(), &mut buffer) }
        == sys::Status::napi_ok
        && unsafe { sys::napi_get_arraybuffer_info(env, buffer, &mut data, &mut length) } == sys::Status::napi_ok
        && data == at
        && length == 8
        && unsafe { sys::napi_create_typedarray(env, sys::TypedarrayType::uint32_array, 2, buffer, 0, &mut view) }
            == sys::Status::napi_ok;
    if made {
        Some(view)
    } else {
        // A refused external buffer may leave an exception pending.
        super::env::clear_pending(env);
        None
    }
}

/// The default generator's current lead, counters and host lease (all 0, and none, before its first id).
pub(crate) fn default_stats() -> SnowidStats {
    match DEFAULT.get() {
        Some((g, started)) => {
            // The configuration as resolved before the generator started, which `configure()` can no longer replace.
            let pending = PENDING.lock();
            let lease = host_lease(g, pending.config.as_ref().unwrap_or(started), started);
            drop(pending);
            stats_of(g.snapshot(), lease)
        }
        None => stats_of(Snapshot { lead_ms: 0, clock_back: 0, stats: Default::default() }, None),
    }
}

/// Replaces the default generator's options before its first id, reading the environment again for them; refused
/// once it has started.
pub(crate) fn configure_default(env: sys::napi_env, opts: Options) -> CoreResult<()> {
    let mut pending = PENDING.lock();
    if DEFAULT.get().is_some() {
        return Err(CoreError::new(
            Code::AlreadyConfigured,
            Class::Error,
            "configure: expected a call before the default generator's first id, found it already started; \
             use new Snowflake(options) for a generator of your own",
        ));
    }
    // A new Pending: options from before are replaced, and the environment is read again for them. The slot config()
    // leased stays this process's.
    let leased = pending.leased.clone();
    let mut next = Pending { options: Some(opts), seen: BTreeMap::new(), layout: None, config: None, leased: None };
    space_kept(leased.as_ref(), next.config(env)?)?;
    next.leased = leased;
    *pending = next;
    CONFIGURED.fetch_add(1, Ordering::Release);
    Ok(())
}
