//! The record a slot file keeps: the slot's marks, for the holders that come after (version 1).
//!
//! Two records of [`RECORD_SIZE`] bytes, at offsets 0 and [`RECORD_SIZE`]. Each is one ASCII line padded with
//! spaces and ended by `\n`:
//!
//! ```text
//! snowid-lease v1 seq=7 pid=4242 marks=0:1795316461930,1:1795316460210 sum=14128d3577de609c
//! ```
//!
//! - `seq` counts writes; record `seq % 2` is the one written, so the other always holds the previous state.
//! - `pid` is the holder that wrote it.
//! - `marks` lists, per clockBack value, a Unix ms up to which ids under that value may have been issued.
//!   Marks are kept while the record has room (a mark in the past still bounds its value's ids should the clock
//!   step back); when it has none, those already past are dropped.
//! - `sum` is the FNV-1a 64-bit hash, in hex, of the text before ` sum=`.
//!
//! The valid record with the highest `seq` wins. A torn write damages only the record being written, and it was
//! written before any id past its old mark was issued, so the other record is still a correct bound. An empty
//! file is a slot with no history. A file in which no record is valid is refused with `ERR_SNOWID_LEASE_CORRUPT`.

use std::path::Path;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::super::fence::{mark_of, Marks};
use super::super::hash::fnv1a;

pub const RECORD_SIZE: usize = 1024;
const MAGIC: &str = "snowid-lease v1 ";
/// A record holds at most this many marks: one per clockBack value still reserved in the future.
pub const MAX_MARKS: usize = 32;

/// The contents of one lease record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub pid: u32,
    /// (clockBack, Unix ms) pairs, at most one per clockBack value.
    pub marks: Marks,
}

impl Record {
    pub fn mark(&self, clock_back: u32) -> u64 {
        mark_of(&self.marks, clock_back)
    }

    /// Where this record is written in its file: the other record keeps the previous one.
    pub fn offset(&self) -> u64 {
        (self.seq % 2) * RECORD_SIZE as u64
    }

    /// The record as its padded line, or `None` when it does not fit.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let marks: Vec<String> = self.marks.iter().map(|(c, m)| format!("{c}:{m}")).collect();
        let body = format!("{MAGIC}seq={} pid={} marks={}", self.seq, self.pid, marks.join(","));
        let mut line = format!("{body} sum={:016x}", fnv1a(body.as_bytes())).into_bytes();
        if line.len() >= RECORD_SIZE {
            return None;
        }
        line.resize(RECORD_SIZE - 1, b' ');
        line.push(b'\n');
        Some(line)
    }

    /// Parses one record, or `None` when it is not a valid version-1 record.
    pub fn decode(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?.trim_end_matches(['\n', ' ', '\0']);
        let (body, sum) = text.rsplit_once(" sum=")?;
        if sum.len() != 16 || u64::from_str_radix(sum, 16).ok()? != fnv1a(body.as_bytes()) {
            return None;
        }
        let rest = body.strip_prefix(MAGIC)?;
        let mut parts = rest.split(' ');
        let seq = parts.next()?.strip_prefix("seq=")?.parse().ok()?;
        let pid = parts.next()?.strip_prefix("pid=")?.parse().ok()?;
        let marks_text = parts.next()?.strip_prefix("marks=")?;
        if parts.next().is_some() {
            return None;
        }
        let mut marks = Vec::new();
        for pair in marks_text.split(',').filter(|p| !p.is_empty()) {
            let (c, m) = pair.split_once(':')?;
            let c: u32 = c.parse().ok()?;
            if marks.iter().any(|(seen, _)| *seen == c) || marks.len() == MAX_MARKS {
                return None;
            }
            marks.push((c, m.parse().ok()?));
        }
        Some(Record { seq, pid, marks })
    }

    /// Sets the mark of `clock_back` to at least `until`, dropping marks before `now` only when the record has no
    /// room for them all. Refused when more clockBack values are reserved ahead of the clock than a record holds.
    pub fn reserve(&mut self, clock_back: u32, until: u64, now: u64) -> Result<()> {
        let kept = until.max(self.mark(clock_back));
        self.marks.retain(|(c, _)| *c != clock_back);
        self.marks.push((clock_back, kept));
        // A mark in the past still bounds the ids of its value should the clock step back behind it, so marks
        // are kept while the record has room; only when it has none are those already past dropped.
        if self.marks.len() > MAX_MARKS {
            self.marks.retain(|(c, m)| *m >= now || *c == clock_back);
        }
        self.marks.sort_unstable();
        if self.marks.len() > MAX_MARKS {
            return Err(Error::new(
                Code::ClockBackwards,
                Class::Error,
                format!(
                    "clock: expected at most {MAX_MARKS} clockBack values reserved ahead of the clock at once (what a \
                     lease record holds), found {}: the clock stepped back that many times within the marks' reach",
                    self.marks.len()
                ),
            ));
        }
        Ok(())
    }

    /// Whether a mark reaches `now` or past it: the only time marks constrain anyone.
    pub fn reaches(&self, now: u64) -> bool {
        self.marks.iter().any(|(_, m)| *m >= now)
    }
}

/// What a slot file holds (`bytes`, its first two records' worth): nothing yet, or its newest valid record.
pub fn read_file(bytes: &[u8], path: &Path) -> Result<Option<Record>> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let best = bytes.chunks(RECORD_SIZE).take(2).filter_map(Record::decode).max_by_key(|r| r.seq);
    match best {
        Some(r) => Ok(Some(r)),
        None => Err(Error::new(
            Code::LeaseCorrupt,
            Class::Error,
            format!(
                "lease file {}: expected a snowid lease record (version 1), found {} bytes that are not one \
                     (their content is not shown), so which ids were issued from this slot is unknown. Remove the \
                     file only when no process uses the slot and the clock is past every id issued from it",
                quote_path(path),
                bytes.len()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_refuse_damage() {
        let r = Record { seq: 7, pid: 4242, marks: vec![(0, 1_795_316_461_930), (3, 1_795_316_460_210)] };
        let bytes = r.encode().unwrap();
        assert_eq!(bytes.len(), RECORD_SIZE);
        assert_eq!(Record::decode(&bytes), Some(r.clone()));
        let empty = Record::default();
        assert_eq!(Record::decode(&empty.encode().unwrap()), Some(empty));
        for i in [0, 20, 40, 60] {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert_eq!(Record::decode(&bad), None, "flipped byte {i}");
        }
        assert_eq!(Record::decode(b"garbage"), None);
        assert_eq!(Record::decode(&bytes[..30]), None);
        let too_many = Record { seq: 1, pid: 1, marks: (0..200).map(|c| (c, 1_795_316_461_930)).collect() };
        assert_eq!(too_many.encode(), None);
    }

    #[test]
    fn the_documented_record_is_one_snowid_reads() {
        let line = "snowid-lease v1 seq=7 pid=4242 marks=0:1795316461930,1:1795316460210 sum=14128d3577de609c";
        assert!(include_str!("../../../docs/one-host.md").contains(line), "docs/one-host.md shows this record");
        let r = Record::decode(line.as_bytes()).unwrap();
        assert_eq!(r, Record { seq: 7, pid: 4242, marks: vec![(0, 1_795_316_461_930), (1, 1_795_316_460_210)] });
        assert_eq!(r.encode().unwrap().trim_ascii_end(), line.as_bytes());
    }

    #[test]
    fn the_newest_valid_record_wins_and_a_torn_one_falls_back() {
        let p = Path::new("/x");
        let a = Record { seq: 4, pid: 1, marks: vec![(0, 100)] }.encode().unwrap();
        let b = Record { seq: 5, pid: 2, marks: vec![(0, 200)] }.encode().unwrap();
        let both = [a.clone(), b.clone()].concat();
        assert_eq!(read_file(&both, p).unwrap().unwrap().seq, 5);
        let mut torn = both.clone();
        torn[RECORD_SIZE + 50] = b'#';
        assert_eq!(read_file(&torn, p).unwrap().unwrap().seq, 4);
        assert_eq!(read_file(&[], p).unwrap(), None);
        let e = read_file(b"hello, world", p).unwrap_err();
        assert_eq!(e.code(), Code::LeaseCorrupt);
        assert!(e.message().contains("lease file \"/x\""), "{e}");
        assert!(!e.message().contains("hello"), "file content is never echoed: {e}");
    }

    #[test]
    fn marks_are_kept_while_there_is_room_then_those_past_are_dropped() {
        let mut r = Record::default();
        r.reserve(0, 5_000, 1_000).unwrap();
        r.reserve(1, 7_000, 1_000).unwrap();
        r.reserve(0, 6_000, 1_000).unwrap();
        r.reserve(0, 2_000, 1_000).unwrap();
        assert_eq!(r.marks, vec![(0, 6_000), (1, 7_000)], "a mark never goes down");
        for c in 2..MAX_MARKS as u32 {
            r.reserve(c, 500, 1_000).unwrap();
        }
        assert_eq!(r.marks.len(), MAX_MARKS, "marks in the past kept while there is room");
        r.reserve(40, 9_000, 1_000).unwrap();
        assert_eq!(r.marks, vec![(0, 6_000), (1, 7_000), (40, 9_000)], "then those past are dropped");
        assert!(r.reaches(9_000) && !r.reaches(9_001));
    }
}
