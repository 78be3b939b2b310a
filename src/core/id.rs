//! Ids as decimal text, and the checks on ids that come from outside.

use super::error::{quote, Code, Error, Result};
use super::layout::MAX_ID;

/// What an id argument must be, for messages.
pub const EXPECTED_ID: &str = "a bigint, a decimal string or a safe integer from 0 to 9223372036854775807";

/// A u64 in decimal, written right-aligned into a stack buffer (no heap).
pub struct Decimal {
    buf: [u8; 20],
    start: usize,
}

/// The two digits of 0 to 99, in order: `PAIRS[2n..2n + 2]` is `n` in two digits.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
                            2021222324252627282930313233343536373839\
                            4041424344454647484950515253545556575859\
                            6061626364656667686970717273747576777879\
                            8081828384858687888990919293949596979899";

impl Decimal {
    /// Two digits per step, from a table: half the divisions of one digit per step, on every id turned into text.
    #[inline]
    pub fn new(mut v: u64) -> Self {
        let mut buf = [b'0'; 20];
        let mut i = buf.len();
        while v >= 10 {
            // Below 100, so both indexes are within PAIRS; `i` is at least 2 here, as a u64 has at most 20 digits.
            let pair = (v % 100) as usize * 2;
            v /= 100;
            i -= 2;
            buf[i] = PAIRS[pair];
            buf[i + 1] = PAIRS[pair + 1];
            if v == 0 {
                // The last pair taken was 10 to 99, so its leading digit is not a 0.
                return Decimal { buf, start: i };
            }
        }
        i -= 1;
        buf[i] = b'0' + v as u8;
        Decimal { buf, start: i }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits were written.
        std::str::from_utf8(self.as_bytes()).unwrap_or("0")
    }
}

/// Appends the decimal forms of `ids` to `text`, each after a comma unless `text` is empty. A batch's ids come in
/// runs of consecutive values (one ms's sequence), so an id one past the previous one is written by copying the
/// previous one's digits and adding one to them in place, which costs a fraction of turning it into text anew.
/// `last` is where the last decimal written starts in `text` (carried from one call to the next), or `None`.
pub fn push_joined(text: &mut Vec<u8>, ids: &[u64], last: &mut Option<(usize, u64)>) {
    for &id in ids {
        if !text.is_empty() {
            text.push(b',');
        }
        let start = text.len();
        let stepped = match *last {
            Some((from, prev)) if prev.checked_add(1) == Some(id) && from < start => {
                text.extend_from_within(from..start - 1);
                increment(text.get_mut(start..).unwrap_or_default())
            }
            _ => false,
        };
        if !stepped {
            text.truncate(start);
            text.extend_from_slice(Decimal::new(id).as_bytes());
        }
        *last = Some((start, id));
    }
}

/// Adds one to the decimal digits in `digits`, in place: false (and `digits` unspecified) when every digit is a 9,
/// so that the value needs one more digit.
fn increment(digits: &mut [u8]) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return true;
        }
    }
    false
}

fn too_large(what: &str, found: &str) -> Error {
    Error::range_error(Code::InvalidId, what, EXPECTED_ID, found)
}

/// Parses a decimal id: ASCII digits only (no sign, spaces, prefix or fraction), at most [`MAX_ID`].
pub fn parse_decimal(text: &str, what: &str) -> Result<u64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::type_error(Code::InvalidId, what, EXPECTED_ID, &format!("the string {}", quote(text))));
    }
    if negative {
        return Err(too_large(what, &format!("the string {} (negative)", quote(text))));
    }
    match digits.parse::<u64>() {
        Ok(v) if v <= MAX_ID => Ok(v),
        _ => Err(too_large(what, &format!("the string {} (above 2^63 - 1)", quote(text)))),
    }
}

/// Checks a JS number id: a safe integer, not negative. Larger numbers have already lost digits.
pub fn from_f64(n: f64, what: &str) -> Result<u64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if n.is_finite() && n.fract() == 0.0 && (0.0..=MAX_SAFE).contains(&n) {
        return Ok(n as u64);
    }
    let why = if !n.is_finite() || n.fract() != 0.0 {
        "not an integer"
    } else if n < 0.0 {
        "negative"
    } else {
        "above Number.MAX_SAFE_INTEGER, so its digits are already lost: pass a bigint or a string"
    };
    Err(too_large(what, &format!("the number {} ({why})", super::config::js_number(n))))
}

/// Checks a JS bigint id given as its sign and 64-bit words, least significant first.
/// `low` is the bigint's lowest 64-bit word and `words` how many words it has in all (0 for `0n`), so that a huge
/// bigint is refused without reading the rest of it.
pub fn from_bigint(negative: bool, low: u64, words: usize, what: &str) -> Result<u64> {
    let high_zero = words <= 1;
    let zero = low == 0 && high_zero;
    if negative && !zero {
        return Err(too_large(what, "a negative bigint"));
    }
    if !high_zero || low > MAX_ID {
        return Err(too_large(what, "a bigint above 2^63 - 1"));
    }
    Ok(low)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Class;

    /// `ids` joined as `push_joined` joins them, in calls of `chunk` ids.
    fn joined(ids: &[u64], chunk: usize) -> String {
        let (mut text, mut last) = (Vec::new(), None);
        for part in ids.chunks(chunk) {
            push_joined(&mut text, part, &mut last);
        }
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn joined_decimals_match_to_string_across_carries() {
        let mut cases: Vec<Vec<u64>> = vec![vec![], vec![0], (0..25).collect(), (95..1_005).collect()];
        // Runs across every power of ten (a carry that adds a digit), one above another, and gaps between runs.
        let mut p = 1u64;
        for _ in 0..18 {
            p *= 10;
            cases.push((p - 3..p + 3).chain(p + 10..p + 12).chain([p - 1, p]).collect());
        }
        cases.push((MAX_ID - 5..=MAX_ID).collect());
        cases.push(vec![u64::MAX - 1, u64::MAX, 0, 1]);
        cases.push((1_234_567_890_123_456_788..1_234_567_890_123_456_812).collect());
        // Runs of a ms's sequence values, as a batch has them: 4096 per ms, then the next ms.
        let base = 901_748_290_000_000_000u64;
        cases.push((0..3).flat_map(|ms| (0..4096).map(move |s| base + (ms << 22) + s)).collect());
        for ids in &cases {
            let expected = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            for chunk in [1, 7, 256] {
                assert_eq!(joined(ids, chunk), expected, "{} ids in chunks of {chunk}", ids.len());
            }
        }
    }

    #[test]
    fn decimal_formats_like_to_string() {
        for v in [0u64, 1, 9, 10, 99, 100, 4096, 1_234_567_890_123_456_789, MAX_ID, u64::MAX] {
            assert_eq!(Decimal::new(v).as_str(), v.to_string());
        }
        // Every length, at its edges, and random ids of every magnitude.
        let mut p = 1u64;
        for _ in 0..19 {
            p *= 10;
            for v in [p - 1, p, p + 1, p / 10 * 9, p.saturating_add(p / 2)] {
                assert_eq!(Decimal::new(v).as_str(), v.to_string());
            }
        }
        let mut rng = crate::core::testing::Rng::new(7);
        for _ in 0..100_000 {
            let v = rng.id();
            assert_eq!(Decimal::new(v).as_str(), v.to_string());
        }
    }

    #[test]
    fn parse_accepts_decimal_ids_only() {
        assert_eq!(parse_decimal("0", "id").unwrap(), 0);
        assert_eq!(parse_decimal("9223372036854775807", "id").unwrap(), MAX_ID);
        assert_eq!(parse_decimal("007", "id").unwrap(), 7);
        for (bad, class) in [
            ("", Class::TypeError),
            (" 1", Class::TypeError),
            ("1 ", Class::TypeError),
            ("+1", Class::TypeError),
            ("1.0", Class::TypeError),
            ("1e3", Class::TypeError),
            ("0x10", Class::TypeError),
            ("-", Class::TypeError),
            ("١٢", Class::TypeError),
            ("-1", Class::RangeError),
            ("9223372036854775808", Class::RangeError),
            ("99999999999999999999999", Class::RangeError),
        ] {
            let e = parse_decimal(bad, "id").unwrap_err();
            assert_eq!((e.code(), e.class()), (Code::InvalidId, class), "{bad:?}: {e}");
            assert!(e.message().starts_with("id: expected a bigint, a decimal string"), "{e}");
        }
    }

    #[test]
    fn numbers_must_be_safe_integers() {
        assert_eq!(from_f64(0.0, "id").unwrap(), 0);
        assert_eq!(from_f64(9_007_199_254_740_991.0, "id").unwrap(), 9_007_199_254_740_991);
        for bad in [-1.0, 0.5, f64::NAN, f64::INFINITY, 9_007_199_254_740_992.0, 1e19] {
            assert_eq!(from_f64(bad, "id").unwrap_err().class(), Class::RangeError, "{bad}");
        }
        assert!(from_f64(1e19, "id").unwrap_err().message().contains("MAX_SAFE_INTEGER"));
    }

    #[test]
    fn bigints_keep_their_sign_and_size() {
        assert_eq!(from_bigint(false, 0, 0, "id").unwrap(), 0);
        assert_eq!(from_bigint(true, 0, 0, "id").unwrap(), 0);
        assert_eq!(from_bigint(false, MAX_ID, 1, "id").unwrap(), MAX_ID);
        assert!(from_bigint(true, 5, 1, "id").unwrap_err().message().contains("negative"));
        assert!(from_bigint(false, MAX_ID + 1, 1, "id").is_err());
        assert!(from_bigint(false, 5, 2, "id").unwrap_err().message().contains("above"));
        assert!(from_bigint(true, 5, 1 << 24, "id").unwrap_err().message().contains("negative"));
    }
}
