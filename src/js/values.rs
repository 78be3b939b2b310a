//! JS values into the core's (ids, times, option values, encodings) and ids back into JS values.

use std::ptr;

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue};
use napi::{sys, Result};

use crate::core::config::{time_arg, OptionValue};
use crate::core::encoding::{Encoding, EXPECTED_ENCODING};
use crate::core::error::{quote, Code, Error as CoreError, Result as CoreResult, QUOTE_CHARS};
use crate::core::id::{self, Decimal, EXPECTED_ID};

use super::errors::{check, check_reading, raise};

/// An id, or the error that replaces it, converted to a JS `bigint` (or thrown) without taking `Env` as a
/// parameter: napi-rs hands the env to `to_napi_value`.
pub struct IdBigInt(pub(crate) CoreResult<u64>);

impl ToNapiValue for IdBigInt {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        match val.0 {
            Ok(id) => unsafe { bigint(env, id) },
            Err(e) => Err(raise(env, &e)),
        }
    }
}

pub(crate) fn type_of(env: sys::napi_env, value: sys::napi_value) -> Result<sys::napi_valuetype> {
    let mut t = 0;
    // SAFETY: `env` and `value` come from the current call.
    check(unsafe { sys::napi_typeof(env, value, &mut t) })?;
    Ok(t)
}

pub(crate) fn is_date(env: sys::napi_env, value: sys::napi_value) -> Result<bool> {
    let mut yes = false;
    // SAFETY: as above.
    check(unsafe { sys::napi_is_date(env, value, &mut yes) })?;
    Ok(yes)
}

/// A JS value described for an error message, for the kinds a caller should not have passed.
pub(crate) fn describe(env: sys::napi_env, value: sys::napi_value) -> Result<String> {
    use sys::ValueType as T;
    Ok(match type_of(env, value)? {
        T::napi_undefined => "undefined".into(),
        T::napi_null => "null".into(),
        T::napi_boolean => {
            // SAFETY: `value` is a boolean.
            let b = unsafe { bool::from_napi_value(env, value) }?;
            format!("the boolean {b}")
        }
        T::napi_number => {
            // SAFETY: `value` is a number.
            let n = unsafe { f64::from_napi_value(env, value) }?;
            format!("the number {}", crate::core::number::js_number(n))
        }
        T::napi_string => "a string".into(),
        T::napi_symbol => "a symbol".into(),
        T::napi_function => "a function".into(),
        T::napi_bigint => "a bigint".into(),
        _ => "an object".into(),
    })
}

/// Reads a JS value given for an option, sorted by JS type for the core to check.
pub(crate) fn option_value(env: sys::napi_env, value: sys::napi_value) -> Result<Option<OptionValue>> {
    use sys::ValueType as T;
    Ok(Some(match type_of(env, value)? {
        T::napi_undefined => return Ok(None),
        // SAFETY: each cast below matches the type just checked.
        T::napi_number => OptionValue::Number(unsafe { f64::from_napi_value(env, value) }?),
        T::napi_string => OptionValue::Text(unsafe { String::from_napi_value(env, value) }?),
        T::napi_boolean => OptionValue::Bool(unsafe { bool::from_napi_value(env, value) }?),
        T::napi_object if is_date(env, value)? => {
            let mut t = 0.0;
            check(unsafe { sys::napi_get_date_value(env, value, &mut t) })?;
            OptionValue::Date(t)
        }
        _ => OptionValue::Other(describe(env, value)?),
    }))
}

/// The own properties of a plain object argument named `what`, as (key, value) pairs. `undefined` and `null` have
/// none. Anything else that is not a plain object (one whose prototype is `null` or an `Object.prototype`, of the
/// module instance's realm or of another, see [`is_plain`]) is a coded `TypeError`: a `Map`, a `Date`, an array or a class instance would
/// otherwise pass as "no options". So is a non-enumerable or symbol key, which is never read, and a getter or Proxy
/// trap that throws.
pub(crate) fn own_entries(
    env: sys::napi_env,
    value: sys::napi_value,
    what: &str,
) -> Result<Vec<(String, sys::napi_value)>> {
    use sys::ValueType as T;
    let refuse = |found: &str| {
        let e = CoreError::type_error(Code::InvalidConfig, what, "a plain object", found);
        Err(raise(env, &e))
    };
    match type_of(env, value)? {
        T::napi_undefined | T::napi_null => return Ok(Vec::new()),
        T::napi_object => {}
        _ => return refuse(&describe(env, value)?),
    }
    if !is_plain(env, value, what)? {
        return refuse("an object that is not a plain object (an array, a Map, a Date or a class instance)");
    }
    let keys = own_keys(env, value, sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols, what)?;
    let all = own_keys(env, value, sys::KeyFilter::all_properties, what)?;
    if array_length(env, all)? != array_length(env, keys)? {
        return refuse("an object with a non-enumerable or symbol key");
    }
    let len = array_length(env, keys)?;
    let mut entries = Vec::with_capacity(len as usize);
    for i in 0..len {
        let (mut key, mut v) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: `i` is below the array's length; its elements are strings (numbers were converted), each an own
        // key of `value`.
        check(unsafe { sys::napi_get_element(env, keys, i, &mut key) })?;
        let name = unsafe { String::from_napi_value(env, key) }?;
        let status = unsafe { sys::napi_get_property(env, value, key, &mut v) };
        if status != sys::Status::napi_ok {
            check_reading(env, status, &format!("{what}.{}", short(&name)))?;
        }
        entries.push((name, v));
    }
    Ok(entries)
}

/// A key as a message names it: cut as quoted input is.
fn short(name: &str) -> String {
    if name.chars().count() <= QUOTE_CHARS {
        name.to_string()
    } else {
        quote(name)
    }
}

/// Whether an object's prototype is `null`, or an `Object.prototype`: the module instance's, or that of another
/// realm (a `vm` context such as a Jest or Vitest test file's, whose object literals the binding is given as they
/// are): an object of null prototype whose own `constructor` is a function named `Object` with it as its
/// `prototype`. So an object literal of either, or an object that JS (Jest's `process.env`, `structuredClone`) made in
/// the other, is plain; an array, a `Map`, a `Date` or a class instance (whose prototype has a prototype) is not.
fn is_plain(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<bool> {
    let mut proto = ptr::null_mut();
    // SAFETY: `value` is an object of the current call; `proto` is a valid out-pointer.
    check_reading(env, unsafe { sys::napi_get_prototype(env, value, &mut proto) }, what)?;
    if type_of(env, proto)? == sys::ValueType::napi_null {
        return Ok(true);
    }
    let mut above = ptr::null_mut();
    // SAFETY: `proto` is an object of the current call (the prototype of an object is an object or null).
    check_reading(env, unsafe { sys::napi_get_prototype(env, proto, &mut above) }, what)?;
    if type_of(env, above)? != sys::ValueType::napi_null {
        return Ok(false);
    }
    let (mut key, mut own) = (ptr::null_mut(), false);
    // SAFETY: plain N-API calls on values of the current call; "constructor" is 11 bytes.
    check(unsafe { sys::napi_create_string_utf8(env, c"constructor".as_ptr(), 11, &mut key) })?;
    check_reading(env, unsafe { sys::napi_has_own_property(env, proto, key, &mut own) }, what)?;
    if !own {
        return Ok(false);
    }
    let (mut constructor, mut prototype, mut name) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    check_reading(env, unsafe { sys::napi_get_property(env, proto, key, &mut constructor) }, what)?;
    if type_of(env, constructor)? != sys::ValueType::napi_function {
        return Ok(false);
    }
    check_reading(
        env,
        unsafe { sys::napi_get_named_property(env, constructor, c"prototype".as_ptr(), &mut prototype) },
        what,
    )?;
    let mut same = false;
    // SAFETY: both are values of the current call.
    check(unsafe { sys::napi_strict_equals(env, proto, prototype, &mut same) })?;
    if !same {
        return Ok(false);
    }
    check_reading(env, unsafe { sys::napi_get_named_property(env, constructor, c"name".as_ptr(), &mut name) }, what)?;
    if type_of(env, name)? != sys::ValueType::napi_string {
        return Ok(false);
    }
    // SAFETY: `name` is a string.
    Ok(unsafe { String::from_napi_value(env, name) }? == "Object")
}

/// The own enumerable string keys of `value` (for example `process.env`'s variable names).
pub(crate) fn own_key_names(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<Vec<String>> {
    let keys = own_keys(env, value, sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols, what)?;
    let len = array_length(env, keys)?;
    let mut names = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut key = ptr::null_mut();
        // SAFETY: `i` is below the array's length; its elements are strings (numbers were converted).
        check(unsafe { sys::napi_get_element(env, keys, i, &mut key) })?;
        names.push(unsafe { String::from_napi_value(env, key) }?);
    }
    Ok(names)
}

/// The own keys of `value` that pass `filter`, numbers as strings, in a new array.
fn own_keys(
    env: sys::napi_env,
    value: sys::napi_value,
    filter: sys::napi_key_filter,
    what: &str,
) -> Result<sys::napi_value> {
    let mut keys = ptr::null_mut();
    // SAFETY: `value` is an object of the current call; `keys` is a valid out-pointer.
    let status = unsafe {
        sys::napi_get_all_property_names(
            env,
            value,
            sys::KeyCollectionMode::own_only,
            filter,
            sys::KeyConversion::numbers_to_strings,
            &mut keys,
        )
    };
    check_reading(env, status, what)?;
    Ok(keys)
}

fn array_length(env: sys::napi_env, array: sys::napi_value) -> Result<u32> {
    let mut len = 0u32;
    // SAFETY: `array` is an array made by N-API in this call.
    check(unsafe { sys::napi_get_array_length(env, array, &mut len) })?;
    Ok(len)
}

/// Reads an id argument: a bigint, a decimal string, or a safe integer.
pub(crate) fn read_id(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<u64> {
    use sys::ValueType as T;
    // The common case first, in one call: a bigint from 0 to 2^63 - 1 (one that is negative or above 2^64 - 1 is not
    // lossless, and one above 2^63 - 1 is refused below). A value of another type fails this call with a status and
    // no exception, and is read by its type below.
    let (mut low, mut lossless) = (0u64, false);
    // SAFETY: `value` is a value of this call; both out-pointers are valid.
    if unsafe { sys::napi_get_value_bigint_uint64(env, value, &mut low, &mut lossless) } == sys::Status::napi_ok
        && lossless
        && low <= crate::core::layout::MAX_ID
    {
        return Ok(low);
    }
    let parsed = match type_of(env, value)? {
        T::napi_bigint => {
            // One word is all an id needs; a longer bigint is out of range, whatever its size, so only its sign, its
            // low word and its word count are read.
            let (mut sign, mut count, mut word) = (0, 1usize, 0u64);
            // SAFETY: `word` has room for the 1 word `count` says.
            check(unsafe { sys::napi_get_value_bigint_words(env, value, &mut sign, &mut count, &mut word) })?;
            // With words to write, runtimes differ on what `count` then says: the bigint's length (Node) or the
            // words written (emnapi on WASI, and Deno, where 2^64 + 5 would otherwise read as 5). With none to
            // write, each sets it to the length.
            // SAFETY: with no words to write, N-API only sets `count`.
            check(unsafe {
                sys::napi_get_value_bigint_words(env, value, ptr::null_mut(), &mut count, ptr::null_mut())
            })?;
            id::from_bigint(sign != 0, if count == 0 { 0 } else { word }, count, what)
        }
        // SAFETY: the casts match the types just checked.
        T::napi_string => id::parse_decimal(&unsafe { String::from_napi_value(env, value) }?, what),
        T::napi_number => id::from_f64(unsafe { f64::from_napi_value(env, value) }?, what),
        _ => Err(CoreError::type_error(Code::InvalidId, what, EXPECTED_ID, &describe(env, value)?)),
    };
    parsed.map_err(|e| raise(env, &e))
}

/// Reads a time argument: a `Date`, Unix ms, or ISO-8601 text.
pub(crate) fn read_time(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<u64> {
    let v = match option_value(env, value)? {
        Some(v) => v,
        None => OptionValue::Other("undefined".into()),
    };
    time_arg(&v, what).map_err(|e| raise(env, &e))
}

/// Reads an encoding name.
pub(crate) fn read_encoding(env: sys::napi_env, value: sys::napi_value) -> Result<Encoding> {
    let e = match type_of(env, value)? {
        sys::ValueType::napi_string => {
            // SAFETY: `value` is a string.
            let name = unsafe { String::from_napi_value(env, value) }?;
            match Encoding::parse(&name) {
                Some(e) => return Ok(e),
                None => CoreError::range_error(
                    Code::InvalidArgument,
                    "encoding",
                    EXPECTED_ENCODING,
                    &crate::core::error::quote(&name),
                ),
            }
        }
        _ => CoreError::type_error(Code::InvalidArgument, "encoding", EXPECTED_ENCODING, &describe(env, value)?),
    };
    Err(raise(env, &e))
}

/// An id as a JS bigint.
#[inline]
pub(crate) unsafe fn bigint(env: sys::napi_env, id: u64) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: `env` is the live env of this call and `out` a valid out-pointer.
    check(unsafe { sys::napi_create_bigint_uint64(env, id, &mut out) })?;
    Ok(out)
}

/// An id as a decimal JS string, written from a stack buffer.
#[inline]
pub(crate) unsafe fn decimal(env: sys::napi_env, id: u64) -> Result<sys::napi_value> {
    let digits = Decimal::new(id);
    let bytes = digits.as_bytes();
    let mut out = ptr::null_mut();
    // SAFETY: `bytes` is ASCII (so latin1) and its length is passed explicitly.
    check(unsafe { sys::napi_create_string_latin1(env, bytes.as_ptr().cast(), bytes.len() as isize, &mut out) })?;
    Ok(out)
}

/// A value already made in JS.
pub struct Raw(pub(crate) sys::napi_value);

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
    }
}
