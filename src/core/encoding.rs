//! Ids as fixed-width text in base 62, base 36 or hexadecimal.
//!
//! Every encoding writes every id with the same number of characters, left-padded with the alphabet's zero, and
//! each alphabet is in ASCII order. So for any two ids, comparing their texts byte by byte (JS `<`, `Array.sort()`,
//! SQL `COLLATE "C"`) gives the same answer as comparing the ids.

use super::error::{quote, Code, Error, Result};
use super::layout::MAX_ID;

/// The text encodings of an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Base62,
    Base36,
    Hex,
}

/// Digits 0-9, then A-Z, then a-z: ASCII order, so fixed-width texts sort as their values do.
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Digits 0-9, then a-z.
const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// Digits 0-9, then a-f.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The longest text: 16 hex digits.
const MAX_WIDTH: usize = 16;

/// What an encoding argument must be, for messages.
pub const EXPECTED_ENCODING: &str = "one of 'base62', 'base36' or 'hex'";

impl Encoding {
    pub const ALL: [Encoding; 3] = [Encoding::Base62, Encoding::Base36, Encoding::Hex];

    pub fn parse(name: &str) -> Option<Encoding> {
        Encoding::ALL.into_iter().find(|e| e.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::Base62 => "base62",
            Encoding::Base36 => "base36",
            Encoding::Hex => "hex",
        }
    }

    fn alphabet(self) -> &'static [u8] {
        match self {
            Encoding::Base62 => BASE62,
            Encoding::Base36 => BASE36,
            Encoding::Hex => HEX,
        }
    }

    fn radix(self) -> u64 {
        self.alphabet().len() as u64
    }

    /// The number of characters of every id's text: the fewest that hold 2^63 - 1.
    pub fn width(self) -> usize {
        match self {
            Encoding::Base62 => 11,
            Encoding::Base36 => 13,
            Encoding::Hex => 16,
        }
    }

    /// What a character is worth, or `None` when it is not in the alphabet. Hex and base 36 also take capitals.
    fn digit(self, c: u8) -> Option<u64> {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'A'..=b'Z' if self == Encoding::Base62 => c - b'A' + 10,
            b'a'..=b'z' if self == Encoding::Base62 => c - b'a' + 36,
            b'A'..=b'Z' => c - b'A' + 10,
            b'a'..=b'z' => c - b'a' + 10,
            _ => return None,
        };
        (u64::from(v) < self.radix()).then_some(u64::from(v))
    }

    fn expected(self) -> String {
        let chars = match self {
            Encoding::Base62 => "0-9, A-Z, a-z",
            Encoding::Base36 => "0-9 and a-z, capitals allowed",
            Encoding::Hex => "0-9 and a-f, capitals allowed",
        };
        format!(
            "{} {} characters ({chars}) from {} to {}",
            self.width(),
            self.name(),
            Text::new(0, self).as_str(),
            Text::new(MAX_ID, self).as_str()
        )
    }
}

/// An id's text in one encoding, written into a stack buffer.
pub struct Text {
    buf: [u8; MAX_WIDTH],
    len: usize,
}

impl Text {
    pub fn new(mut id: u64, encoding: Encoding) -> Text {
        let alphabet = encoding.alphabet();
        let radix = encoding.radix();
        let len = encoding.width();
        let mut buf = [b'0'; MAX_WIDTH];
        for slot in buf.iter_mut().take(len).rev() {
            // `id % radix` is below the alphabet's length.
            *slot = alphabet.get((id % radix) as usize).copied().unwrap_or(b'0');
            id /= radix;
        }
        Text { buf, len }
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII from the alphabets was written.
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

/// Reads an id's text: exactly `encoding.width()` characters of its alphabet, at most 2^63 - 1. Text of another
/// length is refused rather than padded, so a truncated or doubled id is never read as some other id.
pub fn parse(text: &str, encoding: Encoding, what: &str) -> Result<u64> {
    let bad = |why: String| {
        Error::type_error(Code::InvalidId, what, &encoding.expected(), &format!("the string {} ({why})", quote(text)))
    };
    let count = text.chars().count();
    if count != encoding.width() {
        return Err(bad(format!("{count} characters")));
    }
    let mut value: u64 = 0;
    let mut overflow = false;
    for (i, c) in text.bytes().enumerate() {
        let Some(d) = encoding.digit(c) else {
            let ch = text.chars().nth(i).unwrap_or(char::REPLACEMENT_CHARACTER);
            return Err(bad(format!("{} at position {i}", quote(&ch.to_string()))));
        };
        match value.checked_mul(encoding.radix()).and_then(|v| v.checked_add(d)) {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if overflow || value > MAX_ID {
        return Err(Error::range_error(
            Code::InvalidId,
            what,
            &encoding.expected(),
            &format!("the string {} (above 2^63 - 1)", quote(text)),
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Class;
    use crate::core::testing::Rng;

    fn edges() -> Vec<u64> {
        let mut v = vec![0, 1, 9, 10, 15, 16, 35, 36, 61, 62, MAX_ID, MAX_ID - 1];
        for bits in 1..63 {
            v.extend([(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 1]);
        }
        for e in Encoding::ALL {
            let mut p = 1u64;
            while let Some(next) = p.checked_mul(e.radix()) {
                p = next;
                if p <= MAX_ID {
                    v.extend([p - 1, p]);
                }
            }
        }
        v
    }

    #[test]
    fn widths_are_the_fewest_that_hold_every_id() {
        for e in Encoding::ALL {
            let w = e.width() as u32;
            assert!(e.radix().checked_pow(w).is_none_or(|p| p > MAX_ID), "{e:?}");
            assert!(e.radix().pow(w - 1) <= MAX_ID, "{e:?}");
        }
        assert_eq!(Text::new(MAX_ID, Encoding::Hex).as_str(), "7fffffffffffffff");
        assert_eq!(Text::new(MAX_ID, Encoding::Base36).as_str(), "1y2p0ij32e8e7");
        assert_eq!(Text::new(MAX_ID, Encoding::Base62).as_str(), "AzL8n0Y58m7");
        assert_eq!(Text::new(0, Encoding::Base62).as_str(), "00000000000");
        assert_eq!(Text::new(61, Encoding::Base62).as_str(), "0000000000z");
        assert_eq!(Text::new(62, Encoding::Base62).as_str(), "00000000010");
    }

    #[test]
    fn alphabets_are_in_ascii_order() {
        for e in Encoding::ALL {
            assert!(e.alphabet().windows(2).all(|w| matches!(w, [a, b] if a < b)), "{e:?}");
        }
    }

    #[test]
    fn every_id_round_trips_and_texts_sort_as_ids() {
        let mut rng = Rng::new(0x5eed);
        let mut ids = edges();
        ids.extend((0..20_000).map(|_| rng.id()));
        for e in Encoding::ALL {
            for &id in &ids {
                let text = Text::new(id, e);
                assert_eq!(text.as_bytes().len(), e.width());
                assert_eq!(parse(text.as_str(), e, "text"), Ok(id), "{e:?} {id}");
                if e != Encoding::Base62 {
                    assert_eq!(parse(&text.as_str().to_uppercase(), e, "text"), Ok(id), "{e:?} {id}");
                    assert_eq!(u64::from_str_radix(text.as_str(), e.radix() as u32), Ok(id), "{e:?}: as std reads it");
                }
            }
            for pair in ids.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let (ta, tb) = (Text::new(a, e), Text::new(b, e));
                assert_eq!(ta.as_bytes().cmp(tb.as_bytes()), a.cmp(&b), "{e:?} {a} {b}");
            }
        }
    }

    #[test]
    fn bad_text_is_refused() {
        let cases: &[(Encoding, &str, Class, &str)] = &[
            (Encoding::Base62, "", Class::TypeError, "0 characters"),
            (Encoding::Base62, "1", Class::TypeError, "1 characters"),
            (Encoding::Base62, "AzL8n0Y58m", Class::TypeError, "10 characters"),
            (Encoding::Base62, "AzL8n0Y58m70", Class::TypeError, "12 characters"),
            (Encoding::Base62, "AzL8n0Y58m8", Class::RangeError, "above 2^63 - 1"),
            (Encoding::Base62, "zzzzzzzzzzz", Class::RangeError, "above 2^63 - 1"),
            (Encoding::Base62, "0000000000-", Class::TypeError, "\"-\" at position 10"),
            (Encoding::Base62, " 0000000000", Class::TypeError, "position 0"),
            (Encoding::Base62, "0000000000é", Class::TypeError, "\"é\" at position 10"),
            (Encoding::Hex, "8000000000000000", Class::RangeError, "above 2^63 - 1"),
            (Encoding::Hex, "ffffffffffffffff", Class::RangeError, "above 2^63 - 1"),
            (Encoding::Hex, "000000000000000g", Class::TypeError, "\"g\" at position 15"),
            (Encoding::Hex, "0x00000000000001", Class::TypeError, "\"x\" at position 1"),
            (Encoding::Hex, "7fffffffffffffff0", Class::TypeError, "17 characters"),
            (Encoding::Base36, "1y2p0ij32e8e8", Class::RangeError, "above 2^63 - 1"),
            (Encoding::Base36, "zzzzzzzzzzzzz", Class::RangeError, "above 2^63 - 1"),
            (Encoding::Base36, "+000000000001", Class::TypeError, "position 0"),
        ];
        for &(e, text, class, why) in cases {
            let err = parse(text, e, "text").unwrap_err();
            assert_eq!((err.code(), err.class()), (Code::InvalidId, class), "{e:?} {text:?}: {err}");
            assert!(err.message().contains(why), "{e:?} {text:?}: {err}");
            assert!(err.message().starts_with(&format!("text: expected {} {}", e.width(), e.name())), "{err}");
        }
    }

    #[test]
    fn encoding_names() {
        for e in Encoding::ALL {
            assert_eq!(Encoding::parse(e.name()), Some(e));
        }
        assert_eq!(Encoding::parse("Base62"), None);
        assert_eq!(Encoding::parse("decimal"), None);
    }
}
