//! The bit layout of an id: `0 | timestamp | datacenterId | workerId | clockBack | sequence`, high bits to low.

use super::error::{Code, Error, Result};
use super::time::format_iso;

/// The JS article's epoch, 2020-02-01T00:00:00+08:00.
pub const DEFAULT_EPOCH: u64 = 1_580_486_400_000;
/// A layout must be able to encode timestamps for at least this long from now: 10 Julian years.
pub const MIN_LIFE_MS: u64 = 315_576_000_000;
/// Every timestamp a layout can encode must be an exact JS number, and `epoch + 2^52` is below 2^53 for any epoch
/// up to the year 144,000, so the timestamp field is at most 52 bits wide.
pub const MAX_TIMESTAMP_BITS: u32 = 52;
/// Ids are positive signed 64-bit integers: bit 63 is never set.
pub const MAX_ID: u64 = i64::MAX as u64;
/// The most bits a field other than the timestamp may have: its values are `u32`.
pub const MAX_FIELD_BITS: u32 = 32;

/// Widths in bits of the fields below the timestamp, which gets what is left of 63 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Widths {
    pub datacenter: u32,
    pub worker: u32,
    pub clock_back: u32,
    pub sequence: u32,
}

impl Default for Widths {
    /// The JS article's layout: 41-bit timestamp, 3 datacenter, 5 worker, 2 clock-back and 12 sequence bits.
    fn default() -> Self {
        Widths { datacenter: 3, worker: 5, clock_back: 2, sequence: 12 }
    }
}

/// The fields of one id. `timestamp` is in ms since the layout's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub timestamp: u64,
    pub datacenter_id: u32,
    pub worker_id: u32,
    pub clock_back: u32,
    pub sequence: u32,
}

/// Field widths and epoch, validated as one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    widths: Widths,
    epoch: u64,
    timestamp_bits: u32,
}

/// The widths and their sum, for messages.
fn sum_text(w: Widths) -> String {
    let sum = u64::from(w.datacenter) + u64::from(w.worker) + u64::from(w.clock_back) + u64::from(w.sequence);
    format!(
        "datacenterBits {} + workerBits {} + clockBackBits {} + sequenceBits {} = {sum}",
        w.datacenter, w.worker, w.clock_back, w.sequence
    )
}

/// The largest value a field of `bits` bits holds (`bits` <= 63).
pub fn max_value(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

impl Layout {
    /// A layout to generate ids with: one [`Layout::for_reading`] accepts whose timestamp field also lasts at least
    /// [`MIN_LIFE_MS`] from `now` (Unix ms).
    pub fn new(widths: Widths, epoch: u64, now: u64) -> Result<Layout> {
        let layout = Layout::for_reading(widths, epoch, now)?;
        let needed = now + MIN_LIFE_MS;
        if layout.expires_at() < needed {
            return Err(Error::range_error(
                Code::InvalidConfig,
                "layout",
                &format!("a timestamp field that lasts at least 10 years, until {}", format_iso(needed)),
                &format!(
                    "{}, leaving {} timestamp bits that run out at {} with epoch {epoch}",
                    sum_text(widths),
                    layout.timestamp_bits,
                    format_iso(layout.expires_at())
                ),
            ));
        }
        Ok(layout)
    }

    /// A layout to read ids with, which may be another system's: widths and epoch validated together against the
    /// time `now` (Unix ms). The epoch is not in the future, and the timestamp field that is left has from 1 to
    /// [`MAX_TIMESTAMP_BITS`] bits. How long it lasts does not matter for reading.
    pub fn for_reading(widths: Widths, epoch: u64, now: u64) -> Result<Layout> {
        let Widths { datacenter, worker, clock_back, sequence } = widths;
        let sum = u64::from(datacenter) + u64::from(worker) + u64::from(clock_back) + u64::from(sequence);
        // Made only for a message.
        let parts = || sum_text(widths);
        if [datacenter, worker, clock_back, sequence].iter().any(|&w| w > MAX_FIELD_BITS) {
            return Err(Error::range_error(
                Code::InvalidConfig,
                "layout",
                &format!("fields other than the timestamp of at most {MAX_FIELD_BITS} bits each"),
                &parts(),
            ));
        }
        if sum > 62 {
            return Err(Error::range_error(
                Code::InvalidConfig,
                "layout",
                "field widths that add up to at most 62 bits, leaving the rest (at least 1 bit) to the timestamp",
                &parts(),
            ));
        }
        let timestamp_bits = 63 - sum as u32;
        if timestamp_bits > MAX_TIMESTAMP_BITS {
            return Err(Error::range_error(
                Code::InvalidConfig,
                "layout",
                &format!(
                    "at most {MAX_TIMESTAMP_BITS} timestamp bits, so that every timestamp is an exact JS number \
                     (give the other fields at least {} bits)",
                    63 - MAX_TIMESTAMP_BITS
                ),
                &format!("{}, leaving {timestamp_bits}", parts()),
            ));
        }
        if epoch > now {
            return Err(Error::range_error(
                Code::InvalidConfig,
                "epoch",
                &format!("a time no later than now ({now}, {})", format_iso(now)),
                &format!("{epoch} ({})", format_iso(epoch)),
            ));
        }
        Ok(Layout { widths, epoch, timestamp_bits })
    }

    pub fn widths(&self) -> Widths {
        self.widths
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn timestamp_bits(&self) -> u32 {
        self.timestamp_bits
    }

    /// The largest timestamp offset (ms since the epoch) the layout encodes.
    pub fn max_timestamp(&self) -> u64 {
        max_value(self.timestamp_bits)
    }

    /// The last Unix ms the layout encodes.
    pub fn expires_at(&self) -> u64 {
        self.epoch + self.max_timestamp()
    }

    pub fn sequence_shift(&self) -> u32 {
        0
    }

    pub fn clock_back_shift(&self) -> u32 {
        self.widths.sequence
    }

    pub fn worker_shift(&self) -> u32 {
        self.clock_back_shift() + self.widths.clock_back
    }

    pub fn datacenter_shift(&self) -> u32 {
        self.worker_shift() + self.widths.worker
    }

    pub fn timestamp_shift(&self) -> u32 {
        self.datacenter_shift() + self.widths.datacenter
    }

    /// Packs fields into an id, or `None` when a field does not fit its width.
    pub fn pack(&self, f: &Fields) -> Option<u64> {
        let w = self.widths;
        let fits = |v: u64, bits: u32| v <= max_value(bits);
        if !(fits(f.timestamp, self.timestamp_bits)
            && fits(f.datacenter_id.into(), w.datacenter)
            && fits(f.worker_id.into(), w.worker)
            && fits(f.clock_back.into(), w.clock_back)
            && fits(f.sequence.into(), w.sequence))
        {
            return None;
        }
        Some(
            (f.timestamp << self.timestamp_shift())
                | (u64::from(f.datacenter_id) << self.datacenter_shift())
                | (u64::from(f.worker_id) << self.worker_shift())
                | (u64::from(f.clock_back) << self.clock_back_shift())
                | u64::from(f.sequence),
        )
    }

    /// The Unix ms of an id's timestamp field.
    #[inline]
    pub fn unix_ms_of(&self, id: u64) -> u64 {
        self.epoch + ((id & MAX_ID) >> self.timestamp_shift())
    }

    /// The smallest id any generator with this layout can make in the Unix ms `at`: its timestamp and zeros below.
    pub fn min_id_at(&self, at: u64, what: &str) -> Result<u64> {
        Ok(self.offset_of(at, what)? << self.timestamp_shift())
    }

    /// The largest id any generator with this layout can make in the Unix ms `at`: its timestamp and ones below.
    pub fn max_id_at(&self, at: u64, what: &str) -> Result<u64> {
        Ok((self.offset_of(at, what)? << self.timestamp_shift()) | max_value(self.timestamp_shift()))
    }

    /// `at` as ms since the epoch, when the layout can encode it.
    fn offset_of(&self, at: u64, what: &str) -> Result<u64> {
        if at < self.epoch || at > self.expires_at() {
            return Err(Error::range_error(
                Code::InvalidArgument,
                what,
                &format!(
                    "a time from the epoch {} ({}) to expiresAt {} ({})",
                    self.epoch,
                    format_iso(self.epoch),
                    self.expires_at(),
                    format_iso(self.expires_at())
                ),
                &format!("{at} ({})", format_iso(at)),
            ));
        }
        Ok(at - self.epoch)
    }

    /// Splits an id (at most [`MAX_ID`]) into its fields.
    pub fn unpack(&self, id: u64) -> Fields {
        let w = self.widths;
        let field = |shift: u32, bits: u32| ((id >> shift) & max_value(bits)) as u32;
        Fields {
            timestamp: (id & MAX_ID) >> self.timestamp_shift(),
            datacenter_id: field(self.datacenter_shift(), w.datacenter),
            worker_id: field(self.worker_shift(), w.worker),
            clock_back: field(self.clock_back_shift(), w.clock_back),
            sequence: field(self.sequence_shift(), w.sequence),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::Rng;

    const NOW: u64 = 1_795_000_000_000; // 2026-11-18

    fn widths(datacenter: u32, worker: u32, clock_back: u32, sequence: u32) -> Widths {
        Widths { datacenter, worker, clock_back, sequence }
    }

    #[test]
    fn default_layout_matches_the_article() {
        let l = Layout::new(Widths::default(), DEFAULT_EPOCH, NOW).unwrap();
        assert_eq!(l.timestamp_bits(), 41);
        assert_eq!(l.clock_back_shift(), 12);
        assert_eq!(l.worker_shift(), 14);
        assert_eq!(l.datacenter_shift(), 19);
        assert_eq!(l.timestamp_shift(), 22);
        assert_eq!(l.expires_at(), DEFAULT_EPOCH + (1 << 41) - 1);
    }

    #[test]
    fn pack_and_unpack_every_field_at_its_extremes() {
        let layouts = [
            widths(3, 5, 2, 12),
            widths(0, 0, 0, 12),
            widths(5, 5, 0, 12),
            widths(0, 10, 3, 10),
            widths(1, 1, 1, 8),
            widths(0, 0, 0, 24),
            widths(8, 8, 8, 0),
        ];
        for w in layouts {
            let l = Layout::new(w, DEFAULT_EPOCH, NOW).unwrap_or_else(|e| panic!("{w:?}: {e}"));
            let maxes = [
                max_value(l.timestamp_bits()),
                max_value(w.datacenter),
                max_value(w.worker),
                max_value(w.clock_back),
                max_value(w.sequence),
            ];
            for pick in 0..32u32 {
                let v = |i: u32| if pick & (1 << i) != 0 { maxes[i as usize] } else { 0 };
                let f = Fields {
                    timestamp: v(0),
                    datacenter_id: v(1) as u32,
                    worker_id: v(2) as u32,
                    clock_back: v(3) as u32,
                    sequence: v(4) as u32,
                };
                let id = l.pack(&f).unwrap();
                assert!(id <= MAX_ID, "{w:?} {f:?}");
                assert_eq!(l.unpack(id), f, "{w:?}");
            }
            let all = l.pack(&Fields {
                timestamp: maxes[0],
                datacenter_id: maxes[1] as u32,
                worker_id: maxes[2] as u32,
                clock_back: maxes[3] as u32,
                sequence: maxes[4] as u32,
            });
            assert_eq!(all, Some(MAX_ID), "{w:?}: all fields at max fill the 63 bits");
            let too_big =
                Fields { timestamp: maxes[0] + 1, datacenter_id: 0, worker_id: 0, clock_back: 0, sequence: 0 };
            assert_eq!(l.pack(&too_big), None);
            if w.worker < 32 {
                let f = Fields { worker_id: (maxes[2] + 1) as u32, ..too_big };
                assert_eq!(l.pack(&Fields { timestamp: 0, ..f }), None);
            }
        }
    }

    /// Layouts at the extremes: the widest timestamp, the narrowest, no low fields, no sequence, wide fields.
    fn extreme_layouts() -> Vec<Layout> {
        let young = NOW - 1000;
        [
            (Widths::default(), DEFAULT_EPOCH),
            (widths(0, 0, 0, 11), DEFAULT_EPOCH),
            (widths(0, 0, 0, 11), 0),
            (widths(8, 8, 8, 0), DEFAULT_EPOCH),
            (widths(3, 10, 3, 8), young),
            (widths(0, 0, 0, 24), young),
            (widths(0, 11, 0, 0), DEFAULT_EPOCH),
        ]
        .into_iter()
        .filter_map(|(w, epoch)| Layout::new(w, epoch, NOW).ok())
        .collect()
    }

    #[test]
    fn id_ranges_bracket_every_id_of_their_ms() {
        let layouts = extreme_layouts();
        assert_eq!(layouts.len(), 7, "one of the layouts above no longer validates");
        let mut rng = Rng::new(42);
        for l in layouts {
            let (first, last) = (l.epoch(), l.expires_at());
            assert_eq!(l.min_id_at(first, "t"), Ok(0), "{l:?}");
            assert_eq!(l.max_id_at(last, "t"), Ok(MAX_ID), "{l:?}");
            assert_eq!(l.max_id_at(first, "t"), Ok(max_value(l.timestamp_shift())), "{l:?}");
            assert_eq!(l.min_id_at(last, "t"), Ok(MAX_ID - max_value(l.timestamp_shift())), "{l:?}");
            for bad in [first.wrapping_sub(1), last + 1, 0, u64::MAX].into_iter().filter(|&t| t < first || t > last) {
                for e in [l.min_id_at(bad, "t").unwrap_err(), l.max_id_at(bad, "t").unwrap_err()] {
                    assert_eq!((e.code(), e.class()), (Code::InvalidArgument, super::super::error::Class::RangeError));
                    assert!(e.message().starts_with("t: expected a time from the epoch"), "{e}");
                }
            }
            for _ in 0..20_000 {
                let id = rng.id();
                let at = l.unix_ms_of(id);
                assert_eq!(at, l.epoch() + l.unpack(id).timestamp);
                let (lo, hi) = (l.min_id_at(at, "t").unwrap(), l.max_id_at(at, "t").unwrap());
                assert!(lo <= id && id <= hi, "{l:?} {id}");
                assert_eq!((l.unix_ms_of(lo), l.unix_ms_of(hi)), (at, at));
                if at < last {
                    assert_eq!(l.min_id_at(at + 1, "t"), Ok(hi + 1), "ranges of adjacent ms touch");
                }
                if at > first {
                    assert_eq!(l.max_id_at(at - 1, "t"), Ok(lo - 1), "ranges of adjacent ms touch");
                }
            }
        }
    }

    #[test]
    fn refuses_layouts_that_do_not_fit() {
        let err = |w, epoch| Layout::new(w, epoch, NOW).unwrap_err();
        let e = err(widths(20, 20, 20, 20), DEFAULT_EPOCH);
        assert_eq!((e.code(), e.class()), (Code::InvalidConfig, super::super::error::Class::RangeError));
        assert!(e.message().contains("= 80"), "{e}");
        assert!(err(widths(0, 0, 0, 0), DEFAULT_EPOCH).message().contains("leaving 63"));
        assert!(err(widths(3, 5, 2, 16), DEFAULT_EPOCH).message().contains("10 years"));
        let e = err(Widths::default(), NOW + 1);
        assert!(e.message().starts_with("epoch: expected a time no later than now"), "{e}");
        assert!(Layout::new(widths(0, 0, 0, 11), DEFAULT_EPOCH, NOW).is_ok());
        assert!(Layout::new(widths(0, 0, 0, 10), DEFAULT_EPOCH, NOW).is_err());
    }

    #[test]
    fn reading_needs_no_ten_years_left() {
        // Instagram's public scheme: 40 bits of ms since 2011-08-24T21:07:01.721Z, a 13-bit shard and a 10-bit
        // sequence (here datacenterId and sequence). It runs out in 2046: generating with it is refused from 2036,
        // reading never.
        let instagram = widths(13, 0, 0, 10);
        let epoch = 1_314_220_021_721;
        let in_2040 = 2_208_988_800_000;
        assert!(Layout::new(instagram, epoch, NOW).is_ok());
        let e = Layout::new(instagram, epoch, in_2040).unwrap_err();
        assert!(e.message().contains("10 years"), "{e}");
        let l = Layout::for_reading(instagram, epoch, in_2040).unwrap();
        assert_eq!(l.timestamp_bits(), 40);
        // Reading still needs a timestamp bit and an epoch in the past.
        let e = Layout::for_reading(widths(20, 20, 20, 3), epoch, NOW).unwrap_err();
        assert!(e.message().contains("= 63"), "{e}");
        assert!(Layout::for_reading(widths(20, 20, 20, 2), epoch, NOW).is_ok());
        // And fields of at most 32 bits, which read whole wherever they sit.
        let e = Layout::for_reading(widths(0, 0, 0, 33), epoch, NOW).unwrap_err();
        assert!(
            e.message().starts_with("layout: expected fields other than the timestamp of at most 32 bits each"),
            "{e}"
        );
        let wide = Layout::for_reading(widths(0, 0, 30, 32), epoch, NOW).unwrap();
        let f = wide.unpack(MAX_ID);
        assert_eq!((f.timestamp, f.clock_back, f.sequence), (1, (1 << 30) - 1, u32::MAX));
        assert!(Layout::for_reading(instagram, NOW + 1, NOW).is_err());
    }
}
