//! The realm a call comes from. Jest (each test file in a `vm` context) and Vitest's vm pools run the package's JS
//! in realms of their own, but open its `.node` file with the host's `require`, so the module instance, and every
//! function and object it makes, belong to the main realm. A realm's own objects are not the main realm's: its
//! object literals have its `Object.prototype`, `instanceof TypeError` there is its `TypeError`, and its `process.env`
//! (Jest's) may be a copy that the OS environment never sees.
//!
//! So each `index.js` tells the binding its realm (`__realm(globalThis)`), and gets that realm's functions: each runs
//! with the realm as the calling one ([`calling`]), and then throws that realm's error classes, takes that realm's
//! plain objects as options, and reads that realm's `process.env`. The hot callbacks set it only when they leave
//! their fast path, so a call that makes an id pays nothing for it. With no realm calling (the binding's functions
//! called directly), and once a realm is gone, a call takes the module instance's own.

use std::cell::Cell;
use std::ptr;
use std::rc::Rc;

use napi::sys;

use crate::core::error::Class;

/// What the binding keeps of a realm that loaded `index.js`: weak references to its global object, its
/// `Object.prototype` and its error classes, so that a realm that is let go (a finished test file) is collected.
pub(crate) struct Realm {
    env: sys::napi_env,
    global: sys::napi_ref,
    object_prototype: sys::napi_ref,
    /// `Error`, `TypeError` and `RangeError`, as [`Class`] orders them.
    errors: [sys::napi_ref; 3],
}

thread_local! {
    /// The realm whose function this thread is running, or null (see [`calling`]): a plain pointer, so that setting
    /// it costs a batch call no reference count and no borrow. The function that set it holds the realm (its data
    /// owns an `Rc` of it) until the call returns, and the call puts back the pointer it replaced.
    static CALLING: Cell<*const Realm> = const { Cell::new(ptr::null()) };
}

fn ok(status: sys::napi_status) -> bool {
    status == sys::Status::napi_ok
}

/// A weak reference to `value`, or null where there is none to make (a value that is not an object).
fn weak(env: sys::napi_env, value: sys::napi_value) -> sys::napi_ref {
    let mut reference = ptr::null_mut();
    // SAFETY: `value` is a value of the current call; a reference of count 0 does not keep it alive.
    if value.is_null() || !ok(unsafe { sys::napi_create_reference(env, value, 0, &mut reference) }) {
        return ptr::null_mut();
    }
    reference
}

/// `object[name]` when it is an object or a function, else null.
fn object_property(env: sys::napi_env, object: sys::napi_value, name: &std::ffi::CStr) -> sys::napi_value {
    let (mut value, mut kind) = (ptr::null_mut(), 0);
    // SAFETY: `object` is a value of the current call and `name` is NUL-terminated.
    let read = !object.is_null()
        && ok(unsafe { sys::napi_get_named_property(env, object, name.as_ptr(), &mut value) })
        && ok(unsafe { sys::napi_typeof(env, value, &mut kind) });
    if read && matches!(kind, sys::ValueType::napi_object | sys::ValueType::napi_function) {
        value
    } else {
        // A getter that threw leaves its exception pending.
        let mut thrown = ptr::null_mut();
        // SAFETY: `env` is the live env of the current call.
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut thrown) };
        ptr::null_mut()
    }
}

/// `object[name]` when it is an object or a function.
pub(crate) fn property(env: sys::napi_env, object: sys::napi_value, name: &std::ffi::CStr) -> Option<sys::napi_value> {
    Some(object_property(env, object, name)).filter(|v| !v.is_null())
}

impl Realm {
    /// The realm whose global object is `global`, as it is now: its `Object.prototype` and error classes are read
    /// once, here.
    pub(crate) fn new(env: sys::napi_env, global: sys::napi_value) -> Rc<Realm> {
        let object = object_property(env, global, c"Object");
        let errors = [c"Error", c"TypeError", c"RangeError"].map(|name| weak(env, object_property(env, global, name)));
        Rc::new(Realm {
            env,
            global: weak(env, global),
            object_prototype: weak(env, object_property(env, object, c"prototype")),
            errors,
        })
    }

    /// The value of one of this realm's references, while it lives.
    fn value(&self, reference: sys::napi_ref) -> Option<sys::napi_value> {
        let mut value = ptr::null_mut();
        // SAFETY: `reference` is one of this realm's, made in its env; a collected value reads as null.
        let read =
            !reference.is_null() && ok(unsafe { sys::napi_get_reference_value(self.env, reference, &mut value) });
        (read && !value.is_null()).then_some(value)
    }
}

impl Drop for Realm {
    fn drop(&mut self) {
        for reference in [self.global, self.object_prototype].into_iter().chain(self.errors) {
            if !reference.is_null() {
                // SAFETY: each reference was made in `env` by `Realm::new` and is deleted once, here.
                unsafe { sys::napi_delete_reference(self.env, reference) };
            }
        }
    }
}

/// Puts the realm it replaced back when the call it was set for ends, however it ends.
struct Restore<'a>(&'a Cell<*const Realm>, *const Realm);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// Runs `f` with `realm` as the calling realm, and puts back the one before (a call may run JS that calls in from
/// another realm). A function made with no realm (one the binding made for a direct call) runs `f` as it is. The
/// thread-local is looked up once for both (a batch call sets it every time).
pub(crate) fn calling<T>(realm: Option<&Rc<Realm>>, f: impl FnOnce() -> T) -> T {
    let Some(realm) = realm else {
        return f();
    };
    CALLING.with(|c| {
        let _restore = Restore(c, c.replace(Rc::as_ptr(realm)));
        f()
    })
}

/// `f` of the calling realm of `env`, if there is one.
fn with_current<T>(env: sys::napi_env, f: impl FnOnce(&Rc<Realm>) -> Option<T>) -> Option<T> {
    let realm = CALLING.with(|c| c.get());
    if realm.is_null() {
        return None;
    }
    // SAFETY: a non-null pointer is the realm of a call still running on this thread, whose function's data holds an
    // `Rc` of it (see `CALLING`). `ManuallyDrop` borrows that count without taking it.
    let realm = std::mem::ManuallyDrop::new(unsafe { Rc::from_raw(realm) });
    if realm.env != env {
        return None;
    }
    f(&realm)
}

/// The calling realm, when it belongs to `env`: a function that a call makes (a `Snowflake`'s methods) belongs to
/// the realm that called.
pub(crate) fn current(env: sys::napi_env) -> Option<Rc<Realm>> {
    with_current(env, |r| Some(Rc::clone(r)))
}

/// The global object of the calling realm, while it lives; else `env`'s own.
pub(crate) fn global(env: sys::napi_env) -> Option<sys::napi_value> {
    if let Some(global) = with_current(env, |r| r.value(r.global)) {
        return Some(global);
    }
    let mut global = ptr::null_mut();
    // SAFETY: `env` is the live env of the current call.
    ok(unsafe { sys::napi_get_global(env, &mut global) }).then_some(global)
}

/// The calling realm's `Object.prototype`, while it lives.
pub(crate) fn object_prototype(env: sys::napi_env) -> Option<sys::napi_value> {
    with_current(env, |r| r.value(r.object_prototype))
}

/// The calling realm's constructor of errors of `class`, while it lives.
pub(crate) fn error_class(env: sys::napi_env, class: Class) -> Option<sys::napi_value> {
    let i = match class {
        Class::Error => 0,
        Class::TypeError => 1,
        Class::RangeError => 2,
    };
    with_current(env, |r| r.errors.get(i).and_then(|&reference| r.value(reference)))
}
