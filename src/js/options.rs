//! Generator options read from JS, and their typings.

use napi::{sys, JsValue, Result, Unknown};
use napi_derive::napi;

use crate::core::config::{option_table, Options, OPTIONS};
use crate::core::error::{quote, Code, Error as CoreError};

use super::errors::raise;
use super::values::{option_value, own_entries};

/// Reads a generator's options argument: a plain object whose every own key is a known option. A missing
/// argument, `undefined` and `null` are no options.
pub(crate) fn read_options(env: sys::napi_env, value: Option<Unknown>) -> Result<Options> {
    read_only(env, value, false)
}

/// Reads a layout's options argument, as `read_options` does, with only the layout's options (what reading ids
/// needs) known.
pub(crate) fn read_layout_options(env: sys::napi_env, value: Option<Unknown>) -> Result<Options> {
    read_only(env, value, true)
}

/// Reads an options argument whose keys must be options of the table, and, with `layout_only`, a layout's.
fn read_only(env: sys::napi_env, value: Option<Unknown>, layout_only: bool) -> Result<Options> {
    let known = |name: &str| OPTIONS.iter().any(|o| o.name == name && (o.layout || !layout_only));
    let mut opts = Options::default();
    let Some(value) = value else {
        return Ok(opts);
    };
    for (name, v) in own_entries(env, value.raw(), "options")? {
        let slot = if known(&name) { opts.slot(&name) } else { None };
        let Some(slot) = slot else {
            let e = CoreError::type_error(
                Code::InvalidConfig,
                "options",
                &format!("only the options {}", option_names(layout_only).join(", ")),
                &format!("an unknown option {}", quote(&name)),
            );
            return Err(raise(env, &e));
        };
        *slot = option_value(env, v)?;
    }
    Ok(opts)
}

/// Makes the typings of the options from the table: `SnowflakeOptions` with every option, each documented with the
/// table's text, its variables and its default, and `LayoutOptions` with the layout's (without variables: a layout
/// reads none). `read_options` reads the objects themselves, to check every value, so the structs only declare.
macro_rules! typings {
    ($( $opt:ident $field:ident $name:tt [$($var:expr),+] $ty:ty, layout $layout:tt, max $max:expr,
        option $ts:tt, config $config_ts:tt, doc $doc:tt, env $env:tt, default $default:tt; )+) => {
        /// Options of a generator. Each one left out is read from its environment variable, else takes its default.
        /// Numbers must be integers in range: nothing is masked, clamped or truncated.
        #[napi(object, object_from_js = false)]
        #[allow(dead_code)]
        pub struct SnowflakeOptions {
            $(
                #[doc = $doc]
                #[doc = $env]
                #[doc = "@default"]
                #[doc = $default]
                #[napi(ts_type = $ts)]
                pub $field: Option<()>,
            )+
        }

        layout_options!([] $( $field layout $layout, option $ts, doc $doc, default $default; )+);
    };
}

/// `LayoutOptions`: the rows of the table whose `layout` is true, gathered one by one.
macro_rules! layout_options {
    ([$($fields:tt)*]) => {
        /// Options of a `SnowflakeLayout`. Nothing is read from the environment: each one left out takes snowid's
        /// default.
        #[napi(object, object_from_js = false)]
        #[allow(dead_code)]
        pub struct LayoutOptions {
            $($fields)*
        }
    };
    ([$($fields:tt)*] $field:ident layout true, option $ts:tt, doc $doc:tt, default $default:tt;
        $($rest:tt)*) => {
        layout_options!([$($fields)*
            #[doc = $doc]
            #[doc = "@default"]
            #[doc = $default]
            #[napi(ts_type = $ts)]
            pub $field: Option<()>,
        ] $($rest)*);
    };
    ([$($fields:tt)*] $field:ident layout false, option $ts:tt, doc $doc:tt, default $default:tt;
        $($rest:tt)*) => {
        layout_options!([$($fields)*] $($rest)*);
    };
}

option_table!(typings);

/// The names of the options a generator (or, with `layout_only`, a layout) takes, for messages.
fn option_names(layout_only: bool) -> Vec<&'static str> {
    OPTIONS.iter().filter(|o| o.layout || !layout_only).map(|o| o.name).collect()
}
