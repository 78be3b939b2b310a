//! Ids as decimal text, and the checks on ids that come from outside.

use super::error::{quote, Code, Error, Result};
use super::layout::MAX_ID;
use super::number::{js_number, MAX_SAFE_INTEGER};

/// What an id argument must be, for messages.
pub const EXPECTED_ID: &str = "a bigint, a decimal string or a safe integer from 0 to 9223372036854775807";

/// `n` (below 10^8) as its eight decimal digits, leading zeros included, in the bytes of a u64 in memory order
/// (`to_le_bytes`). All eight are found at once, in lanes of one 64-bit word: `n` splits into two 32-bit lanes
/// (its first and last four digits), each of those into two 16-bit lanes (pairs), each pair into two bytes (digits).
/// Each lane's quotient is a multiply and a shift that is exact over the lane's range (`v * 5243 >> 19` is `v / 100`
/// below 43,699; `w * 103 >> 10` is `w / 10` below 179), and no lane's product reaches the next lane's bits.
#[inline(always)]
fn eight_digits(n: u32) -> u64 {
    let n = u64::from(n);
    let fours = (n / 10_000) | ((n % 10_000) << 32);
    let hundreds = ((fours * 5243) >> 19) & 0x0000_007f_0000_007f;
    let pairs = hundreds | ((fours - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    let digits = tens | ((pairs - tens * 10) << 8);
    digits | 0x3030_3030_3030_3030
}

/// How many decimal digits `n` (below 10^8) has; 1 for 0.
#[inline(always)]
fn digit_count(n: u32) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// A u64 in decimal, written right-aligned into a stack buffer (no heap): up to four leading digits, then eight and
/// eight.
pub struct Decimal {
    buf: [u8; 24],
    start: usize,
}

impl Decimal {
    /// Eight digits at a time ([`eight_digits`]): an id's 19 digits take two 64-bit divisions and three stores.
    /// Always inlined, so that the digits are written where the caller keeps them.
    #[inline(always)]
    pub fn new(v: u64) -> Self {
        let mut buf = [b'0'; 24];
        // Below 10^8 each, by construction; `top` is below 1,845 (u64::MAX / 10^16).
        let (top, middle, low) =
            ((v / 10u64.pow(16)) as u32, (v / 100_000_000 % 100_000_000) as u32, (v % 100_000_000) as u32);
        let mut put = |at: usize, n: u32| {
            if let Some(slot) = buf.get_mut(at..at + 8) {
                slot.copy_from_slice(&eight_digits(n).to_le_bytes());
            }
        };
        put(16, low);
        let start = if top > 0 {
            put(8, middle);
            // `top` takes the last four places of the first eight.
            put(0, top);
            8 - digit_count(top)
        } else if middle > 0 {
            put(8, middle);
            16 - digit_count(middle)
        } else {
            24 - digit_count(low)
        };
        Decimal { buf, start }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    #[cfg(test)]
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
    if n.is_finite() && n.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&n) {
        return Ok(n as u64);
    }
    let why = if !n.is_finite() || n.fract() != 0.0 {
        "not an integer"
    } else if n < 0.0 {
        "negative"
    } else {
        "above Number.MAX_SAFE_INTEGER, so its digits are already lost: pass a bigint or a string"
    };
    Err(too_large(what, &format!("the number {} ({why})", js_number(n))))
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
        for i in 0..300_000u64 {
            // Every magnitude: an id shifted right by 0 to 63 bits.
            let v = rng.id() >> (i % 64);
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
