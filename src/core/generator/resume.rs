//! Restarts: a state for a slot whose earlier holders left marks. A new holder starts past the marks they left, so
//! it never issues an id an earlier holder may have issued.

use std::sync::Arc;

use super::super::error::{Class, Code, Error, Result};
use super::super::fence::{mark_of, Fence, Marks};
use super::super::layout::max_value;
use super::super::time::{format_iso, Clock};
use super::sequencer::{ClockBackPolicy, Settings, State, WaitKind};

impl State {
    /// A state for a slot whose earlier holders left `earlier` marks, writing its own marks to `fence`.
    ///
    /// Invariant: no id is issued under a clockBack value `c` at a time at or before `earlier[c]`, so no id an
    /// earlier holder may have issued is issued again. When the configured clockBack's mark is ahead of the clock
    /// (a restart right after the previous holder), under `Bits` the state starts at once from the next clockBack
    /// value whose mark is already past, so that the first id does not wait. Otherwise (under `Wait` and `Throw`,
    /// or when every other value's mark is ahead too) it waits for the clock to pass the mark, within
    /// `max_wait_ms`. Beyond that, under `Bits` it starts from the next clockBack value whose mark is past by then;
    /// under `Wait` and `Throw` it fails.
    pub fn resume(
        settings: &Settings,
        clock_back: u32,
        earlier: Marks,
        fence: Arc<dyn Fence>,
        clock: &dyn Clock,
    ) -> Result<State> {
        let mut st = State { earlier, reserved_until: 0, fence: Some(fence), ..State::new(clock_back) };
        let mask = max_value(settings.layout.widths().clock_back) as u32;
        let mut now = clock.now_ms();
        if settings.policy == ClockBackPolicy::Bits && st.earlier_mark(clock_back) >= now {
            if let Some(c) = st.next_free_clock_back(mask, now) {
                st.move_start(c);
                return Ok(st);
            }
        }
        let mut waited = 0;
        while st.earlier_mark(clock_back) >= now {
            let need = st.earlier_mark(clock_back) - now + 1;
            if waited + need > settings.max_wait_ms {
                break;
            }
            if waited == 0 {
                st.stats.began(WaitKind::Mark);
            }
            clock.sleep_ms(need);
            waited += need;
            now = clock.now_ms();
        }
        if waited > 0 {
            st.stats.ended(WaitKind::Mark, waited);
        }
        let mark = st.earlier_mark(clock_back);
        if mark < now {
            return Ok(st);
        }
        let ahead = format!(
            "clock: expected a time past {mark} ({}), the mark an earlier holder of this slot left for clockBack \
             {clock_back}, found {now} ({}), {} ms behind it after waiting {waited} ms (maxWaitMs {})",
            format_iso(mark),
            format_iso(now),
            mark - now,
            settings.max_wait_ms
        );
        if settings.policy != ClockBackPolicy::Bits {
            let why = format!("{ahead}; onClockBack is '{}'", settings.policy.as_str());
            return Err(Error::new(Code::ClockBackwards, Class::Error, why));
        }
        let Some(c) = st.next_free_clock_back(mask, now) else {
            let why = format!("{ahead}; every clockBack value is reserved past the clock");
            return Err(Error::new(Code::ClockBackwards, Class::Error, why));
        };
        st.move_start(c);
        Ok(st)
    }

    /// Starts the state on clockBack value `c` instead of the configured one (whose mark is ahead of the clock).
    fn move_start(&mut self, c: u32) {
        self.clock_back = c;
        self.start_clock_back = c;
        self.stats.clock_back_events += 1;
    }

    /// Whether `resume` could start on a slot whose earlier holders left `earlier` marks, at `now`: the configured
    /// clockBack's mark is passed within `max_wait_ms`, or, under `Bits`, another clockBack value is free.
    pub fn usable(settings: &Settings, clock_back: u32, earlier: &[(u32, u64)], now: u64) -> bool {
        let mark = mark_of(earlier, clock_back);
        if mark < now || mark - now < settings.max_wait_ms {
            return true;
        }
        if settings.policy != ClockBackPolicy::Bits {
            return false;
        }
        let values = max_value(settings.layout.widths().clock_back) + 1;
        let reserved = earlier.iter().filter(|(_, m)| *m >= now).count() as u64;
        values > reserved
    }
}
