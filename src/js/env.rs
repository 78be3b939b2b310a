//! The environment variables a configuration reads: a JS `process.env` (the one the calling JS gave for the call,
//! such as Jest's copy in a test file, else this thread's), so that values assigned from JS count on every runtime
//! (Bun does not pass such assignments down to the OS environment), and, for the default generator, each variable
//! remembered from its first read. Only its own properties are variables: a property of `Object.prototype` is not.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CString, OsString};
use std::ptr;

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Result};

use crate::core::config::wanted;
use crate::core::env::{EnvSource, ProcessSnapshot, VAR_PREFIX};
use crate::core::error::{Code, Error as CoreError, Result as CoreResult};

use super::errors::{check, check_reading};
use super::module_instance::caller_env;
use super::values::{own_entries, own_key_names, type_of};

/// The `process.env` a call reads (see [`JsEnv::new`]), one variable at a time; the OS environment when the runtime has no
/// `process.env` object. Lives for one call from JS.
pub(crate) struct JsEnv {
    env: sys::napi_env,
    object: Option<sys::napi_value>,
    /// The OS environment's `SNOWID_*` variables, when there is no `process.env` object to read.
    process: Option<ProcessSnapshot>,
    /// The own variables of `process.env` that a configuration reads (`wanted`), listed on first need: one listing
    /// serves every variable, and an unset one costs no read.
    own: RefCell<Option<Vec<String>>>,
    /// The first variable that could not be read (a throwing getter, a value with no string form).
    failed: RefCell<Option<CoreError>>,
}

thread_local! {
    /// The `process.env` that `lib/addon.js` found, as it loaded on this thread in the module instance's own global,
    /// to be Node's own view of the OS environment (see [`register_os_backed`]).
    static OS_BACKED: std::cell::Cell<Option<sys::napi_ref>> = const { std::cell::Cell::new(None) };
}

/// For `lib/addon.js`, on Node's main thread only, in the module instance's own global: `object` is `process.env` as Node
/// made it, whose every read, write and delete goes to the OS environment. While `process.env` is still that object,
/// variables are read from the OS environment directly, with the same result and a fraction of the cost of reading
/// them, and listing them, through N-API (a `new Snowflake()` reads them all). Bun keeps assignments to
/// `process.env` from the OS environment, a `worker_thread`'s `process.env` is its own copy, and so is Jest's in a
/// test file's `vm` context, so there it is read through N-API.
pub(crate) fn register_os_backed(env: sys::napi_env, object: sys::napi_value) -> Result<()> {
    // The WASI build's environment is the one its wasm instance was given when it started, not the OS's.
    if cfg!(target_os = "wasi") {
        return Ok(());
    }
    let mut reference = ptr::null_mut();
    // SAFETY: `object` is a value of this call; the reference is kept for the life of the env.
    check(unsafe { sys::napi_create_reference(env, object, 1, &mut reference) })?;
    OS_BACKED.with(|o| o.set(Some(reference)));
    Ok(())
}

/// Whether `object` is the `process.env` registered by [`register_os_backed`] on this thread.
fn is_os_backed(env: sys::napi_env, object: sys::napi_value) -> bool {
    let Some(reference) = OS_BACKED.with(|o| o.get()) else {
        return false;
    };
    let (mut registered, mut same) = (ptr::null_mut(), false);
    // SAFETY: the reference is alive; both values belong to this env.
    let read = unsafe { sys::napi_get_reference_value(env, reference, &mut registered) };
    if read != sys::Status::napi_ok || registered.is_null() {
        return false;
    }
    // SAFETY: as above.
    let compared = unsafe { sys::napi_strict_equals(env, registered, object, &mut same) };
    compared == sys::Status::napi_ok && same
}

impl JsEnv {
    /// The `process.env` the calling JS gave for this call (`lib/addon.js`, in a `vm` context such as a Jest test
    /// file's, whose `process.env` is its own), else the global `process.env`; the OS environment if there is none, or
    /// it cannot be reached, or it is Node's own view of the OS environment (see [`register_os_backed`]).
    pub(crate) fn new(env: sys::napi_env) -> JsEnv {
        let object = caller_env(env).or_else(|| {
            let mut global = ptr::null_mut();
            // SAFETY: `env` is the live env of the current call.
            let got = unsafe { sys::napi_get_global(env, &mut global) } == sys::Status::napi_ok;
            let process = got.then(|| property_object(env, global, c"process").ok().flatten()).flatten();
            process.and_then(|process| property_object(env, process, c"env").ok().flatten())
        });
        let object = object.filter(|o| !is_os_backed(env, *o));
        let process = object.is_none().then(|| ProcessSnapshot::take(wanted()));
        JsEnv { env, object, process, own: RefCell::new(None), failed: RefCell::new(None) }
    }

    /// Keeps the first variable that could not be read, for `finish`.
    fn fail(&self, e: CoreError) {
        self.failed.borrow_mut().get_or_insert(e);
    }

    /// Whether `name` is an own variable of `object`: one a configuration reads is looked for in [`Self::listed`],
    /// any other is asked for.
    fn has_own(&self, object: sys::napi_value, name: &str) -> std::result::Result<bool, String> {
        if wanted().holds(name) {
            return self.listed(object, |names| names.iter().any(|n| n == name));
        }
        let key = js_string(self.env, name).map_err(|_| "a name that could not be made".to_string())?;
        let mut has = false;
        // SAFETY: `object` and `key` are values of the current call.
        let status = unsafe { sys::napi_has_own_property(self.env, object, key, &mut has) };
        if status != sys::Status::napi_ok {
            clear_pending(self.env);
            return Err("a Proxy trap that threw".into());
        }
        Ok(has)
    }

    /// `f` of the own variables of `object` that a configuration reads, listed on the first call.
    fn listed<T>(&self, object: sys::napi_value, f: impl FnOnce(&[String]) -> T) -> std::result::Result<T, String> {
        let mut own = self.own.borrow_mut();
        if own.is_none() {
            let names = own_key_names(self.env, object, "process.env").map_err(|_| {
                clear_pending(self.env);
                "variables that could not be listed (a Proxy trap that threw)".to_string()
            })?;
            *own = Some(names.into_iter().filter(|n| wanted().holds(n)).collect());
        }
        Ok(f(own.as_deref().unwrap_or_default()))
    }

    /// `r`, unless a variable could not be read while making it: then that error.
    pub(crate) fn finish<T>(&self, r: CoreResult<T>) -> CoreResult<T> {
        match self.failed.borrow_mut().take() {
            Some(e) => Err(e),
            None => r,
        }
    }

    fn read(&self, object: sys::napi_value, name: &str) -> std::result::Result<Option<OsString>, String> {
        let env = self.env;
        let key = CString::new(name).map_err(|_| "a name with a NUL".to_string())?;
        let mut value = ptr::null_mut();
        // SAFETY: `object` is a value of the current call and `key` is NUL-terminated.
        let status = unsafe { sys::napi_get_named_property(env, object, key.as_ptr(), &mut value) };
        if status != sys::Status::napi_ok {
            clear_pending(env);
            return Err("a getter or Proxy trap that threw".into());
        }
        match type_of(env, value) {
            Ok(sys::ValueType::napi_undefined) => Ok(None),
            Ok(sys::ValueType::napi_string) => {
                // SAFETY: `value` is a string.
                unsafe { String::from_napi_value(env, value) }
                    .map(|s| Some(s.into()))
                    .map_err(|_| "a string that could not be read".into())
            }
            _ => Err("a value that is not a string".into()),
        }
    }
}

impl EnvSource for JsEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        let Some(object) = self.object else {
            return self.process.as_ref().and_then(|p| p.var(name));
        };
        match self.has_own(object, name).and_then(|own| if own { self.read(object, name) } else { Ok(None) }) {
            Ok(v) => v,
            Err(found) => {
                let e = CoreError::type_error(
                    Code::InvalidConfig,
                    &format!("process.env.{name}"),
                    "a string or nothing",
                    &found,
                );
                self.fail(e);
                None
            }
        }
    }

    fn snowid_names(&self) -> Vec<String> {
        let Some(object) = self.object else {
            return self.process.as_ref().map(|p| p.snowid_names()).unwrap_or_default();
        };
        let names = |names: &[String]| names.iter().filter(|n| n.starts_with(VAR_PREFIX)).cloned().collect();
        self.listed(object, names).unwrap_or_else(|found| {
            self.fail(CoreError::type_error(Code::InvalidConfig, "process.env", "an object of variables", &found));
            Vec::new()
        })
    }
}

/// Clears a pending exception, if any.
pub(crate) fn clear_pending(env: sys::napi_env) {
    let mut thrown = ptr::null_mut();
    // SAFETY: `env` is the live env of the current call.
    unsafe { sys::napi_get_and_clear_last_exception(env, &mut thrown) };
}

/// A JS string of `text`.
fn js_string(env: sys::napi_env, text: &str) -> Result<sys::napi_value> {
    let mut value = ptr::null_mut();
    // SAFETY: the length is passed explicitly.
    check(unsafe { sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value) })?;
    Ok(value)
}

/// The object at `parent[name]`, or `None` when it is not an object.
fn property_object(
    env: sys::napi_env,
    parent: sys::napi_value,
    name: &std::ffi::CStr,
) -> Result<Option<sys::napi_value>> {
    let mut value = ptr::null_mut();
    // SAFETY: `parent` is an object of the current call and `name` is NUL-terminated.
    if unsafe { sys::napi_get_named_property(env, parent, name.as_ptr(), &mut value) } != sys::Status::napi_ok {
        clear_pending(env);
        return Ok(None);
    }
    Ok((type_of(env, value)? == sys::ValueType::napi_object).then_some(value))
}

/// A source whose every variable is read once, from `source`, and then kept in `seen`: the default generator's,
/// so that `decode()` before the first id and the generator itself see the same values.
pub(crate) struct Remembered<'a> {
    pub(crate) seen: RefCell<&'a mut BTreeMap<String, Option<OsString>>>,
    pub(crate) source: &'a JsEnv,
}

impl EnvSource for Remembered<'_> {
    fn var(&self, name: &str) -> Option<OsString> {
        if let Some(v) = self.seen.borrow().get(name) {
            return v.clone();
        }
        let v = self.source.var(name);
        if self.source.failed.borrow().is_none() {
            self.seen.borrow_mut().insert(name.to_string(), v.clone());
        }
        v
    }

    fn snowid_names(&self) -> Vec<String> {
        self.source.snowid_names()
    }
}

/// Variables given in JS over a base environment, as `cluster.fork(env)` merges them over `process.env`: a variable
/// given as `None` (`undefined` in JS) is unset.
pub(crate) struct Overlay<'a> {
    pub(crate) vars: HashMap<String, Option<String>>,
    pub(crate) base: &'a dyn EnvSource,
}

impl EnvSource for Overlay<'_> {
    fn var(&self, name: &str) -> Option<OsString> {
        match self.vars.get(name) {
            Some(v) => v.as_ref().map(OsString::from),
            None => self.base.var(name),
        }
    }

    fn snowid_names(&self) -> Vec<String> {
        let mut names = self.base.snowid_names();
        names.retain(|n| !self.vars.contains_key(n));
        names
            .extend(self.vars.iter().filter(|(k, v)| v.is_some() && k.starts_with(VAR_PREFIX)).map(|(k, _)| k.clone()));
        names
    }
}

/// Reads an environment object as `cluster.fork(env)` merges it over `process.env`: a variable whose value is
/// `undefined` is unset in the child (`None`), every other value becomes its string form.
pub(crate) fn read_env_object(env: sys::napi_env, value: sys::napi_value) -> Result<HashMap<String, Option<String>>> {
    let mut vars = HashMap::new();
    for (name, v) in own_entries(env, value, "env")? {
        if type_of(env, v)? == sys::ValueType::napi_undefined {
            vars.insert(name, None);
            continue;
        }
        let mut s = ptr::null_mut();
        // SAFETY: `v` is a value of the current call.
        let status = unsafe { sys::napi_coerce_to_string(env, v, &mut s) };
        if status != sys::Status::napi_ok {
            check_reading(env, status, &format!("env.{name}"))?;
        }
        vars.insert(name, Some(unsafe { String::from_napi_value(env, s) }?));
    }
    Ok(vars)
}
