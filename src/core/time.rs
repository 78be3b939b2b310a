//! Time: the clock the generator and the lease read (injected, so tests drive it), and Unix ms <-> ISO-8601 (UTC),
//! for epochs given as dates and for readable messages.

/// Where the generator reads the time, and how it sleeps. Injected so tests can drive it.
pub trait Clock: Send + Sync {
    /// Unix time in ms.
    fn now_ms(&self) -> u64;
    fn sleep_ms(&self, ms: u64);
    /// Waits for the clock's next ms: sleeps the rest of the current one. The caller reads the clock again after,
    /// so waking early or late only costs another look.
    fn sleep_to_next_ms(&self);
}

/// The system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// `CLOCK_REALTIME`, the clock `SystemTime::now()` reads, without its `Duration` arithmetic. A time before 1970
    /// (or a failed read) is 0, which the generator refuses as before its epoch.
    #[cfg(unix)]
    #[inline]
    fn now_ms(&self) -> u64 {
        let mut ts = std::mem::MaybeUninit::<libc::timespec>::uninit();
        // SAFETY: `ts` is a valid out-pointer for the call.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, ts.as_mut_ptr()) } != 0 {
            return 0;
        }
        // SAFETY: the call returned 0, so it wrote `ts` (left unset before: this is every id's clock read).
        let ts = unsafe { ts.assume_init() };
        match u64::try_from(ts.tv_sec) {
            Ok(secs) => secs * 1000 + ts.tv_nsec as u64 / 1_000_000,
            Err(_) => 0,
        }
    }

    #[cfg(not(unix))]
    #[inline]
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }

    fn sleep_ms(&self, ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }

    /// The rest of the current ms of the clock `now_ms` reads (at most 1 ms), from the ns of the same clock.
    fn sleep_to_next_ms(&self) {
        let into_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() % 1_000_000)
            .unwrap_or(0);
        std::thread::sleep(std::time::Duration::from_nanos(u64::from(1_000_000 - into_ms)));
    }
}

const MS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Formats Unix ms as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_iso(ms: u64) -> String {
    let ms = ms as i64;
    let (days, rem) = (ms.div_euclid(MS_PER_DAY), ms.rem_euclid(MS_PER_DAY));
    let (y, m, d) = civil_from_days(days);
    let (h, rem) = (rem / 3_600_000, rem % 3_600_000);
    let (min, rem) = (rem / 60_000, rem % 60_000);
    let (s, milli) = (rem / 1000, rem % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// A cursor over ASCII input that reads fixed-width decimal fields.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, n: usize) -> Option<i64> {
        let field = self.bytes.get(self.pos..self.pos + n)?;
        let mut v = 0i64;
        for &b in field {
            if !b.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(b - b'0');
        }
        self.pos += n;
        Some(v)
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn done(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

/// Parses `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDTHH:MM[:SS[.mmm]]` followed by `Z` or `±HH:MM`.
///
/// A date-time without a zone is refused rather than read in some local time zone, and a fraction finer than a
/// millisecond is refused rather than truncated. Returns Unix ms, or `None` when the text is not such a date or
/// names a time before 1970.
pub fn parse_iso(text: &str) -> Option<u64> {
    let mut c = Cursor { bytes: text.as_bytes(), pos: 0 };
    let y = c.digits(4)?;
    if !c.eat(b'-') {
        return None;
    }
    let mo = c.digits(2)?;
    if !c.eat(b'-') {
        return None;
    }
    let d = c.digits(2)?;
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    let mut ms = days_from_civil(y, mo, d) * MS_PER_DAY;
    if c.done() {
        return u64::try_from(ms).ok();
    }
    if !c.eat(b'T') {
        return None;
    }
    let h = c.digits(2)?;
    if !c.eat(b':') {
        return None;
    }
    let mi = c.digits(2)?;
    let (mut s, mut frac) = (0, 0);
    if c.eat(b':') {
        s = c.digits(2)?;
        if c.eat(b'.') {
            let start = c.pos;
            while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                c.pos += 1;
            }
            let n = c.pos - start;
            if !(1..=3).contains(&n) {
                return None;
            }
            c.pos = start;
            frac = c.digits(n)? * 10i64.pow(3 - n as u32);
        }
    }
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    ms += h * 3_600_000 + mi * 60_000 + s * 1000 + frac;
    let offset = match c.peek()? {
        b'Z' => {
            c.pos += 1;
            0
        }
        sign @ (b'+' | b'-') => {
            c.pos += 1;
            let oh = c.digits(2)?;
            if !c.eat(b':') {
                return None;
            }
            let om = c.digits(2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3_600_000 + om * 60_000;
            if sign == b'+' {
                off
            } else {
                -off
            }
        }
        _ => return None,
    };
    if !c.done() {
        return None;
    }
    u64::try_from(ms - offset).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dates_and_date_times() {
        assert_eq!(parse_iso("2020-02-01"), Some(1_580_515_200_000));
        assert_eq!(parse_iso("2020-01-31T16:00:00Z"), Some(1_580_486_400_000));
        assert_eq!(parse_iso("2020-02-01T00:00:00+08:00"), Some(1_580_486_400_000));
        assert_eq!(parse_iso("2020-01-31T12:00-04:00"), Some(1_580_486_400_000));
        assert_eq!(parse_iso("1970-01-01"), Some(0));
        assert_eq!(parse_iso("2024-02-29T23:59:59.5Z"), Some(1_709_251_199_500));
        assert_eq!(parse_iso("2024-02-29T23:59:59.123Z"), Some(1_709_251_199_123));
    }

    #[test]
    fn refuses_what_it_cannot_read_exactly() {
        for bad in [
            "",
            "2020",
            "2020-1-01",
            "2023-02-29",
            "2020-13-01",
            "2020-00-10",
            "2020-02-01T00:00:00",
            "2020-02-01T24:00Z",
            "2020-02-01T00:00:00.1234Z",
            "2020-02-01T00:00:00.Z",
            "2020-02-01 00:00Z",
            "2020-02-01Z",
            " 2020-02-01",
            "2020-02-01T00:00Zx",
            "1969-12-31",
            "1970-01-01T00:00+01:00",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for ms in [0u64, 1_580_486_400_000, 1_709_251_199_123, 4_102_444_799_999] {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms));
        }
        assert_eq!(format_iso(1_580_486_400_000), "2020-01-31T16:00:00.000Z");
    }

    #[test]
    fn the_system_clock_reads_the_same_time_as_system_time() {
        for _ in 0..1000 {
            let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
            let ours = SystemClock.now_ms();
            let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
            assert!(before <= ours && ours <= after, "{before} <= {ours} <= {after}");
        }
    }
}
