//! Ids as fixed-width text: `encode` and `parse`.

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Env, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::encoding::{self, Text};
use crate::core::error::{Code, Error as CoreError};

use super::errors::raise;
use super::values::{describe, read_encoding, read_id, type_of, IdBigInt};

/// An id as fixed-width text: `'base62'` (11 characters of `0-9A-Za-z`), `'base36'` (13 of `0-9a-z`) or `'hex'`
/// (16 of `0-9a-f`). Shorter values are padded with `0`, so texts in one encoding compare (byte by byte, as JS `<`
/// does) in the same order as their ids.
/// @param id - a `bigint`, a decimal string, or a safe integer `number`.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for input that is not a valid id.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for an unknown encoding.
#[napi]
pub fn encode(
    env: Env,
    #[napi(ts_arg_type = "bigint | string | number")] id: Unknown,
    #[napi(ts_arg_type = "'base62' | 'base36' | 'hex'")] encoding: Unknown,
) -> Result<String> {
    let raw = env.raw();
    let id = read_id(raw, id.raw(), "id")?;
    let encoding = read_encoding(raw, encoding.raw())?;
    Ok(Text::new(id, encoding).as_str().to_string())
}

/// Reads text made by `encode()` back into the id, as a `bigint`. The text must have exactly the encoding's width
/// (11, 13 or 16 characters): shorter or longer text is refused, never padded or cut. `'hex'` and `'base36'` also
/// take capital letters.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ID` for text of another length, a character outside the
/// alphabet, or a value above 2^63 - 1.
/// @throws {TypeError|RangeError} `ERR_SNOWID_INVALID_ARGUMENT` for an unknown encoding.
#[napi(ts_return_type = "bigint")]
pub fn parse(
    env: Env,
    #[napi(ts_arg_type = "string")] text: Unknown,
    #[napi(ts_arg_type = "'base62' | 'base36' | 'hex'")] encoding: Unknown,
) -> Result<IdBigInt> {
    let raw = env.raw();
    let encoding = read_encoding(raw, encoding.raw())?;
    let text = match type_of(raw, text.raw())? {
        // SAFETY: `text` is a string.
        sys::ValueType::napi_string => unsafe { String::from_napi_value(raw, text.raw()) }?,
        _ => {
            let expected = format!("a string of {} {} characters", encoding.width(), encoding.name());
            let e = CoreError::type_error(Code::InvalidId, "text", &expected, &describe(raw, text.raw())?);
            return Err(raise(raw, &e));
        }
    };
    Ok(IdBigInt(encoding::parse(&text, encoding, "text")))
}
