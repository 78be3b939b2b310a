//! Values as options and variables give them, checked in full: integers, epochs and points in time. Nothing is
//! masked, clamped or truncated into range.

use super::super::error::{quote, Code, Error, Result};
use super::super::number::{js_number, whole};
use super::super::time::{format_iso, parse_iso};
use super::options::OptionValue;

/// Describes a JS option value for a message: numbers as JS prints them, strings quoted.
pub fn describe(v: &OptionValue) -> String {
    match v {
        OptionValue::Number(n) => js_number(*n),
        OptionValue::Text(t) => format!("the string {}", quote(t)),
        OptionValue::Date(_) => "a Date".to_string(),
        OptionValue::Bool(b) => format!("the boolean {b}"),
        OptionValue::Other(what) => what.clone(),
    }
}

/// An option's value as an integer from 0 to `max`: a JS number that is one.
pub(super) fn option_integer(v: &OptionValue, name: &str, expected: &str, max: u64) -> Result<u64> {
    let n = match v {
        OptionValue::Number(n) => *n,
        other => return Err(Error::type_error(Code::InvalidConfig, name, expected, &describe(other))),
    };
    whole(n).filter(|&v| v <= max).ok_or_else(|| Error::range_error(Code::InvalidConfig, name, expected, &js_number(n)))
}

/// A variable's value as an integer from 0 to `max`: a plain base-10 integer, with digits only (no sign, no spaces,
/// nothing trailing).
pub(super) fn env_integer(text: &str, name: &str, expected: &str, max: u64) -> Result<u64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::type_error(Code::InvalidConfig, name, expected, &quote(text)));
    }
    match text.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(Error::range_error(Code::InvalidConfig, name, expected, &quote(text))),
    }
}

/// Whether text gives a time as a number of ms (digits), not as a date.
pub(super) fn is_ms_text(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// An epoch or a time given as text: Unix ms in digits, or an ISO-8601 date.
pub(super) fn epoch_text(text: &str, name: &str, expected: &str) -> Result<u64> {
    if is_ms_text(text) {
        return text.parse::<u64>().map_err(|_| Error::range_error(Code::InvalidConfig, name, expected, &quote(text)));
    }
    parse_iso(text).ok_or_else(|| Error::type_error(Code::InvalidConfig, name, expected, &quote(text)))
}

/// What an epoch must be, for messages.
pub(super) fn expected_epoch(now: u64) -> String {
    format!(
        "Unix ms (0, or from 2000-01-01) or an ISO-8601 date (YYYY-MM-DD, or a date-time with Z or an offset) from \
         1970, to now ({now}, {})",
        format_iso(now)
    )
}

/// 2000-01-01T00:00:00Z in Unix ms: the earliest epoch given as a number of ms, but for 0.
pub const EARLIEST_MS_EPOCH: u64 = 946_684_800_000;

/// Checks an epoch of `ms` Unix ms, read from `name` (`numeric` when it was given as a number of ms: a JS number, or
/// digits), against the time `now`. It is not in the future. A number is 0 (the Unix epoch) or from 2000-01-01 on:
/// any other is most likely seconds (`1700000000` is 1970-01-20 as ms, and its ids would run out in 2039), and one in
/// the future most likely microseconds or nanoseconds, which the message names. A date before 2000 is given as
/// ISO-8601 text or a `Date`, which say what they mean.
pub(super) fn check_epoch(ms: u64, numeric: bool, name: &str, now: u64) -> Result<u64> {
    let refuse = |found: String| Err(Error::range_error(Code::InvalidConfig, name, &expected_epoch(now), &found));
    if ms > now {
        for (scale, unit) in [(1_000, "microseconds"), (1_000_000, "nanoseconds")] {
            let in_ms = ms / scale;
            if numeric && (EARLIEST_MS_EPOCH..=now).contains(&in_ms) {
                return refuse(format!(
                    "{ms}, which is in the future: it looks like {unit}; in ms it is {in_ms} ({})",
                    format_iso(in_ms)
                ));
            }
        }
        // The latest time a JS `Date` holds; past it, no date is shown.
        let when = if ms <= 8_640_000_000_000_000 { format!(" ({})", format_iso(ms)) } else { String::new() };
        return refuse(format!("{ms}{when}, which is in the future"));
    }
    if !numeric || ms == 0 || ms >= EARLIEST_MS_EPOCH {
        return Ok(ms);
    }
    let in_ms = ms.saturating_mul(1000);
    if (EARLIEST_MS_EPOCH..=now).contains(&in_ms) {
        return refuse(format!(
            "{ms} ({}), a number of ms before 2000: it looks like seconds; in ms it is {in_ms} ({})",
            format_iso(ms),
            format_iso(in_ms)
        ));
    }
    refuse(format!(
        "{ms} ({0}), a number of ms before 2000 that is not 0, most likely in another unit; for that very time give \
         the ISO-8601 date '{0}'",
        format_iso(ms)
    ))
}

/// What a time argument must be, for messages.
pub const EXPECTED_TIME: &str = "a Date, Unix ms, or an ISO-8601 date (YYYY-MM-DD, or a date-time with Z or an offset)";

/// Reads a point in time given to a call (not an option): a `Date`, a whole number of Unix ms, or text written as
/// an epoch may be. The caller checks it against a layout.
pub fn time_arg(v: &OptionValue, what: &str) -> Result<u64> {
    let ms =
        |n: f64| whole(n).ok_or_else(|| Error::range_error(Code::InvalidArgument, what, EXPECTED_TIME, &js_number(n)));
    match v {
        OptionValue::Number(n) => ms(*n),
        OptionValue::Date(t) if t.is_nan() => {
            Err(Error::range_error(Code::InvalidArgument, what, EXPECTED_TIME, "an invalid Date"))
        }
        OptionValue::Date(t) => ms(*t),
        OptionValue::Text(text) => epoch_text(text, what, EXPECTED_TIME)
            .map_err(|e| Error::new(Code::InvalidArgument, e.class(), e.message().to_string())),
        other @ (OptionValue::Bool(_) | OptionValue::Other(_)) => {
            Err(Error::type_error(Code::InvalidArgument, what, EXPECTED_TIME, &describe(other)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Class;

    #[test]
    fn time_arguments() {
        let ok = |v: OptionValue| time_arg(&v, "time").unwrap();
        assert_eq!(ok(OptionValue::Number(1_600_000_000_000.0)), 1_600_000_000_000);
        assert_eq!(ok(OptionValue::Date(0.0)), 0);
        assert_eq!(ok(OptionValue::Text("1600000000000".into())), 1_600_000_000_000);
        assert_eq!(ok(OptionValue::Text("2024-01-01".into())), 1_704_067_200_000);
        assert_eq!(ok(OptionValue::Text("2024-01-01T08:00:00.001+08:00".into())), 1_704_067_200_001);
        for (v, class) in [
            (OptionValue::Number(-1.0), Class::RangeError),
            (OptionValue::Number(0.5), Class::RangeError),
            (OptionValue::Number(f64::NAN), Class::RangeError),
            (OptionValue::Date(f64::NAN), Class::RangeError),
            (OptionValue::Text("2024-01-01T00:00:00".into()), Class::TypeError),
            (OptionValue::Text("".into()), Class::TypeError),
            (OptionValue::Text("99999999999999999999999".into()), Class::RangeError),
            (OptionValue::Bool(true), Class::TypeError),
            (OptionValue::Other("null".into()), Class::TypeError),
        ] {
            let e = time_arg(&v, "time").unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidArgument, class), "{v:?}: {e}");
            assert!(e.message().starts_with("time: expected a Date, Unix ms"), "{e}");
        }
    }
}
