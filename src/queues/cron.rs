//! Cron schedules of recurring agents: parsed by croner (five fields, or six with seconds
//! first; no year field), evaluated in an IANA time zone (chrono-tz). Baton computes fires in
//! Rust, always after an instant of the Redis clock (the first fire after a TIME read in the
//! queue's slot at Register, each next fire after the run's start at acquire); the scripts only
//! store and use them (see `lua/queues/setCronNext-2.lua`).

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;
use croner::{
    parser::{CronParser, Seconds, Year},
    Cron,
};

/// A parsed cron expression in its time zone.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    cron: Cron,
    tz: Tz,
}

impl Schedule {
    /// Parses `expr` in `time_zone` (empty: UTC). Errors name which of the two is wrong:
    /// `Err((true, why))` for the expression, `Err((false, why))` for the time zone.
    pub(crate) fn parse(expr: &str, time_zone: &str) -> Result<Self, (bool, String)> {
        let fields = expr.split_whitespace().count();
        if !expr.trim_start().starts_with('@') && !(5..=6).contains(&fields) {
            return Err((true, format!("needs 5 fields, or 6 with seconds first; got {fields}")));
        }
        let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).build();
        let cron = parser.parse(expr).map_err(|e| (true, e.to_string()))?;
        let tz = if time_zone.is_empty() {
            Tz::UTC
        } else {
            time_zone.parse::<Tz>().map_err(|_| (false, format!("unknown time zone {time_zone:?}")))?
        };
        let schedule = Self { cron, tz };
        // An expression that never fires (e.g. 30 February) is refused here, not at its first run.
        // Without a year field whether it fires at all does not depend on the instant asked
        // about, so the host's clock serves this check (no score is computed from it).
        schedule.next_after(Utc::now().timestamp_millis()).ok_or((true, "never fires".to_string()))?;
        Ok(schedule)
    }

    /// The first fire strictly after `after_ms` (Unix ms), if any.
    pub(crate) fn next_after(&self, after_ms: i64) -> Option<i64> {
        let at = Utc.timestamp_millis_opt(after_ms).single()?.with_timezone(&self.tz);
        self.cron.find_next_occurrence(&at, false).ok().map(|t| t.timestamp_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_the_time_zone_and_strictly_after() {
        // 2023-11-14 22:13:20.123 UTC = 23:13:20 in Stockholm (CET).
        let t = 1_700_000_000_123;
        let every_five = Schedule::parse("*/5 * * * *", "Europe/Stockholm").unwrap();
        assert_eq!(every_five.next_after(t), Some(1_700_000_100_000)); // 23:15:00 CET
        let nine = Schedule::parse("0 9 * * *", "Europe/Stockholm").unwrap();
        assert_eq!(nine.next_after(t), Some(1_700_035_200_000)); // 09:00 CET = 08:00 UTC
        let secs = Schedule::parse("*/2 * * * * *", "").unwrap();
        assert_eq!(secs.next_after(1_700_000_000_000), Some(1_700_000_002_000), "strictly after");
        assert!(Schedule::parse("61 * * * *", "").unwrap_err().0);
        assert!(!Schedule::parse("* * * * *", "Mars/Olympus").unwrap_err().0);
        assert!(Schedule::parse("0 0 30 2 *", "").unwrap_err().0, "never fires");
        let year = Schedule::parse("0 0 0 1 1 * 2030", "").unwrap_err();
        assert!(year.0 && year.1.contains("got 7"), "no year field: {year:?}");
        assert!(Schedule::parse("0 0 *", "").unwrap_err().1.contains("got 3"));
        assert!(Schedule::parse("@hourly", "").is_ok());
    }
}
