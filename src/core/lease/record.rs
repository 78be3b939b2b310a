//! The record a slot file keeps: the slot's marks, for the holders that come after, and who wrote them (version 2;
//! version 1 is still read).
//!
//! Two records of [`RECORD_SIZE`] bytes, at offsets 0 and [`RECORD_SIZE`]. Each is one ASCII line padded with
//! spaces and ended by `\n`:
//!
//! ```text
//! snowid-lease v2 seq=7 pid=4242 since=1795316400000 marks=0:1795316461930,1:1795316460210 host=web-1 cmd=node server.js sum=36aa5ef00b3421da
//! ```
//!
//! - `seq` counts writes; record `seq % 2` is the one written, so the other always holds the previous state.
//! - `pid` is the holder that wrote it; `since`, the Unix ms at which it took the slot; `host`, its host name;
//!   `cmd`, its command line (arguments joined by spaces), last on the line. Both are cut to at most
//!   [`MAX_HOST`] and [`MAX_COMMAND`] bytes on a character boundary, and the command is cut further when the marks
//!   need its room. A byte outside printable ASCII, and `%`, is written `%XX` (a space too in `host`).
//! - `marks` lists, per clockBack value, a Unix ms up to which ids under that value may have been issued.
//!   Marks are kept while the record has room (a mark in the past still bounds its value's ids should the clock
//!   step back); when it has none, those already past are dropped.
//! - `sum` is the FNV-1a 64-bit hash, in hex, of the text before ` sum=`.
//!
//! Version 1 (`snowid-lease v1 seq=7 pid=4242 marks=... sum=...`) has no `since`, `host` or `cmd`: it reads as a
//! record with `since` 0 and both empty. Snowid versions that know only version 1 refuse a version-2 record as not
//! one of theirs (`ERR_SNOWID_LEASE_CORRUPT`), so their automatic lease skips slots a newer version has written.
//!
//! The valid record with the highest `seq` wins. A torn write damages only the record being written, and it was
//! written before any id past its old mark, so the other record is still a correct bound. An empty file is a slot
//! with no history. A file in which no record is valid is refused with `ERR_SNOWID_LEASE_CORRUPT`.

use std::path::Path;

use super::super::error::{quote_path, Class, Code, Error, Result};
use super::super::fence::{mark_of, Marks};
use super::super::hash::fnv1a;

pub const RECORD_SIZE: usize = 1024;
const MAGIC_V1: &str = "snowid-lease v1 ";
const MAGIC: &str = "snowid-lease v2 ";
/// The most bytes of a holder's command line a record keeps.
pub const MAX_COMMAND: usize = 256;
/// The most bytes of a holder's host name a record keeps.
pub const MAX_HOST: usize = 255;
/// A record holds at most this many marks: one per clockBack value still reserved in the future.
pub const MAX_MARKS: usize = 32;

/// The contents of one lease record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub pid: u32,
    /// (clockBack, Unix ms) pairs, at most one per clockBack value.
    pub marks: Marks,
    /// Unix ms at which the holder took the slot (0: not recorded, a version-1 record).
    pub since: u64,
    /// The holder's host name (empty: not recorded).
    pub host: String,
    /// The holder's command line, at most [`MAX_COMMAND`] bytes (empty: not recorded).
    pub command: String,
}

impl Record {
    pub fn mark(&self, clock_back: u32) -> u64 {
        mark_of(&self.marks, clock_back)
    }

    /// Where this record is written in its file: the other record keeps the previous one.
    pub fn offset(&self) -> u64 {
        (self.seq % 2) * RECORD_SIZE as u64
    }

    /// The record as its padded line, or `None` when its marks do not fit (the command line, then the host name,
    /// is cut to make room for them).
    pub fn encode(&self) -> Option<Vec<u8>> {
        let marks: Vec<String> = self.marks.iter().map(|(c, m)| format!("{c}:{m}")).collect();
        let head = format!("{MAGIC}seq={} pid={} since={} marks={}", self.seq, self.pid, self.since, marks.join(","));
        let mut host = escape(bounded(&self.host, MAX_HOST), true);
        let mut command = escape(bounded(&self.command, MAX_COMMAND), false);
        // The line without host and command: " host=", " cmd=", " sum=" and 16 hex digits, then the newline.
        let fixed = head.len() + 6 + 5 + 5 + 16 + 1;
        let room = RECORD_SIZE.checked_sub(fixed)?;
        cut_escaped(&mut command, room.saturating_sub(host.len()));
        cut_escaped(&mut host, room);
        let body = format!("{head} host={host} cmd={command}");
        let mut line = format!("{body} sum={:016x}", fnv1a(body.as_bytes())).into_bytes();
        if line.len() >= RECORD_SIZE {
            return None;
        }
        line.resize(RECORD_SIZE - 1, b' ');
        line.push(b'\n');
        Some(line)
    }

    /// Parses one record, or `None` when it is not a valid record of version 2 or 1.
    pub fn decode(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?.trim_end_matches(['\n', ' ', '\0']);
        let (body, sum) = text.rsplit_once(" sum=")?;
        if sum.len() != 16 || u64::from_str_radix(sum, 16).ok()? != fnv1a(body.as_bytes()) {
            return None;
        }
        if let Some(rest) = body.strip_prefix(MAGIC_V1) {
            let (seq, pid, marks) = head(rest.split(' '))?;
            return Some(Record { seq, pid, marks, ..Record::default() });
        }
        let rest = body.strip_prefix(MAGIC)?;
        // The command comes last and may hold spaces (and " cmd="): the first " cmd=" ends the fields before it.
        let (fields, command) = rest.split_once(" cmd=")?;
        let mut parts = fields.split(' ');
        let seq = parts.next()?.strip_prefix("seq=")?.parse().ok()?;
        let pid = parts.next()?.strip_prefix("pid=")?.parse().ok()?;
        let since = parts.next()?.strip_prefix("since=")?.parse().ok()?;
        let marks = marks_of(parts.next()?.strip_prefix("marks=")?)?;
        let host = unescape(parts.next()?.strip_prefix("host=")?)?;
        if parts.next().is_some() {
            return None;
        }
        Some(Record { seq, pid, marks, since, host, command: unescape(command)? })
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

/// The seq, pid and marks of a version-1 record's fields (after its magic), nothing else after them.
fn head<'a>(mut parts: impl Iterator<Item = &'a str>) -> Option<(u64, u32, Marks)> {
    let seq = parts.next()?.strip_prefix("seq=")?.parse().ok()?;
    let pid = parts.next()?.strip_prefix("pid=")?.parse().ok()?;
    let marks = marks_of(parts.next()?.strip_prefix("marks=")?)?;
    if parts.next().is_some() {
        return None;
    }
    Some((seq, pid, marks))
}

/// The marks of a `marks=` field: at most [`MAX_MARKS`], one per clockBack value.
fn marks_of(text: &str) -> Option<Marks> {
    let mut marks = Vec::new();
    for pair in text.split(',').filter(|p| !p.is_empty()) {
        let (c, m) = pair.split_once(':')?;
        let c: u32 = c.parse().ok()?;
        if marks.iter().any(|(seen, _)| *seen == c) || marks.len() == MAX_MARKS {
            return None;
        }
        marks.push((c, m.parse().ok()?));
    }
    Some(marks)
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub fn bounded(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// `text` as a record writes it: each byte outside printable ASCII, `%`, and (with `no_space`) a space as `%XX`.
fn escape(text: &str, no_space: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (b == b' ' && !no_space) || (b.is_ascii_graphic() && b != b'%') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Cuts `escaped` (as [`escape`] wrote it) to at most `max` bytes, never inside an escape or a character.
fn cut_escaped(escaped: &mut String, max: usize) {
    if escaped.len() <= max {
        return;
    }
    let bytes = escaped.as_bytes();
    let mut end = 0;
    let mut i = 0;
    while i < bytes.len() {
        // A character is one plain byte, or a lead escape followed by the escapes of its continuation bytes.
        let mut next = i + if bytes.get(i) == Some(&b'%') { 3 } else { 1 };
        while bytes.get(next) == Some(&b'%')
            && bytes.get(next + 1).is_some_and(|h| matches!(h, b'8' | b'9' | b'A' | b'B'))
        {
            next += 3;
        }
        if next > max {
            break;
        }
        end = next;
        i = next;
    }
    escaped.truncate(end);
}

/// The text [`escape`] wrote, or `None` for a bad escape or a byte that should have been one; bytes that are not
/// UTF-8 are read as U+FFFD.
fn unescape(text: &str) -> Option<String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else if b == b' ' || b.is_ascii_graphic() {
            out.push(b);
        } else {
            return None;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
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
                "lease file {}: expected a snowid lease record (version 2 or 1), found {} bytes that are not one \
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
        let r = Record {
            seq: 7,
            pid: 4242,
            marks: vec![(0, 1_795_316_461_930), (3, 1_795_316_460_210)],
            since: 1_795_316_400_000,
            host: "web-1".into(),
            command: "node server.js --name 'é%' sum=1 cmd=x".into(),
        };
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
        let too_many = Record { seq: 1, pid: 1, marks: (0..200).map(|c| (c, 1_795_316_461_930)).collect(), ..r };
        assert_eq!(too_many.encode(), None);
    }

    #[test]
    fn the_documented_records_are_ones_snowid_reads() {
        let doc = include_str!("../../../docs/one-host.md");
        let line = "snowid-lease v2 seq=7 pid=4242 since=1795316400000 marks=0:1795316461930,1:1795316460210 host=web-1 cmd=node server.js sum=36aa5ef00b3421da";
        assert!(doc.contains(line), "docs/one-host.md shows this record");
        let r = Record::decode(line.as_bytes()).unwrap();
        let marks = vec![(0, 1_795_316_461_930), (1, 1_795_316_460_210)];
        let expected = Record {
            seq: 7,
            pid: 4242,
            marks: marks.clone(),
            since: 1_795_316_400_000,
            host: "web-1".into(),
            command: "node server.js".into(),
        };
        assert_eq!(r, expected);
        assert_eq!(r.encode().unwrap().trim_ascii_end(), line.as_bytes());
        // Version 1 is still read: no since, host or command.
        let v1 = "snowid-lease v1 seq=7 pid=4242 marks=0:1795316461930,1:1795316460210 sum=14128d3577de609c";
        assert!(doc.contains(v1), "docs/one-host.md shows the version-1 record");
        assert_eq!(Record::decode(v1.as_bytes()), Some(Record { seq: 7, pid: 4242, marks, ..Record::default() }));
    }

    #[test]
    fn the_command_line_is_bounded_and_cut_for_the_marks() {
        // 300 bytes of two-byte characters: cut to 256 bytes on a character boundary, never inside one.
        let long = "é".repeat(150);
        let r = Record { seq: 1, pid: 1, command: long.clone(), host: "web-1".into(), ..Record::default() };
        assert_eq!(Record::decode(&r.encode().unwrap()).unwrap().command, "é".repeat(128));
        let r = Record { seq: 1, pid: 1, command: "node".into(), host: "h".repeat(400), ..Record::default() };
        assert_eq!(Record::decode(&r.encode().unwrap()).unwrap().host, "h".repeat(MAX_HOST));
        assert_eq!(bounded("aé", 2), "a");
        assert_eq!(bounded("", 5), "");
        // With a full record of marks, the command gives up its room to them, on a character boundary.
        let marks: Marks = (0..MAX_MARKS as u32).map(|c| (c + 1_000_000, 17_953_164_619_300)).collect();
        let full = Record { seq: u64::MAX, pid: u32::MAX, marks, since: u64::MAX, command: long, ..Record::default() };
        let back = Record::decode(&full.encode().unwrap()).unwrap();
        assert_eq!(back.marks, full.marks);
        assert!(back.command.len() < full.command.len() && full.command.starts_with(&back.command), "{back:?}");
        assert!(back.command.chars().all(|c| c == 'é'));
        // Odd bytes: control characters, newlines, a lone escape sign, read back as written.
        let odd = Record { command: "a\nb\0c\u{7f}%zz \u{fffd}".into(), host: "x y".into(), ..Record::default() };
        assert_eq!(Record::decode(&odd.encode().unwrap()), Some(odd));
    }

    #[test]
    fn garbage_is_refused_without_a_panic() {
        let sum = |body: &str| format!("{body} sum={:016x}", fnv1a(body.as_bytes()));
        for body in [
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host= cmd=%",
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host= cmd=%4",
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host= cmd=%zz",
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host=a b cmd=x",
            "snowid-lease v2 seq=1 pid=1 since=x marks= host= cmd=",
            "snowid-lease v2 seq=1 pid=1 marks= host= cmd=",
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host=",
            "snowid-lease v1 seq=1 pid=1 since=0 marks=",
            "snowid-lease v3 seq=1 pid=1 since=0 marks= host= cmd=",
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host=\u{1} cmd=",
            "snowid-lease v2 seq=1 pid=1 since=0 marks= host= cmd=\t",
        ] {
            assert_eq!(Record::decode(sum(body).as_bytes()), None, "{body:?}");
        }
        assert_eq!(Record::decode(&[0xff, 0xfe, b' ', b's']), None);
        for n in 0..64u8 {
            let bytes: Vec<u8> = (0..200u32).map(|i| (i as u8).wrapping_mul(n).wrapping_add(n)).collect();
            assert_eq!(Record::decode(&bytes), None);
        }
    }

    #[test]
    fn the_newest_valid_record_wins_and_a_torn_one_falls_back() {
        let p = Path::new("/x");
        let a = Record { seq: 4, pid: 1, marks: vec![(0, 100)], ..Record::default() }.encode().unwrap();
        let b = Record { seq: 5, pid: 2, marks: vec![(0, 200)], ..Record::default() }.encode().unwrap();
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
