//! When a `send` is due: `at` read in the configured zone, or `in` seconds from now.
//!
//! chrono-tz, not jiff: the configuration already reads `timezone` with it, its IANA database
//! is compiled in (no tzdata needed on a minimal host), and `from_local_datetime` says outright
//! when a local time falls into a DST gap or overlap, which is all a send time needs; a second
//! time library would add weight and nothing here.

use chrono::{
    DateTime, Duration as ChronoDuration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime,
    TimeZone,
};

/// The furthest ahead a send may be scheduled.
pub const MAX_AHEAD_SECS: u64 = 366 * 86_400;

/// The UTC instant (Unix ms) a send is due, from `at` or `in_seconds` (neither: `now_ms`).
pub fn due_ms(
    at: Option<&str>,
    in_seconds: Option<u64>,
    now_ms: u64,
    tz: Option<chrono_tz::Tz>,
) -> Result<u64, String> {
    let due = match (at.map(str::trim).filter(|a| !a.is_empty()), in_seconds) {
        (Some(_), Some(_)) => return Err("give `at` or `in`, not both".into()),
        (None, None) => return Ok(now_ms),
        (None, Some(s)) => now_ms.saturating_add(s.saturating_mul(1000)),
        (Some(a), None) => match tz {
            Some(tz) => at_ms(a, now_ms, &tz)?,
            None => at_ms(a, now_ms, &chrono::Local)?,
        },
    };
    if due.saturating_sub(now_ms) > MAX_AHEAD_SECS * 1000 {
        return Err("that is more than a year ahead; schedule it nearer the time".into());
    }
    Ok(due)
}

/// `at` in `tz`: RFC 3339 with its own offset, a local date and time, or a local time of day
/// (its next occurrence, today or tomorrow).
fn at_ms<Z: TimeZone>(at: &str, now_ms: u64, tz: &Z) -> Result<u64, String>
where
    Z::Offset: std::fmt::Display,
{
    if let Ok(t) = DateTime::parse_from_rfc3339(at) {
        return future(t.timestamp_millis(), now_ms, at);
    }
    for f in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(at, f) {
            return future(local(n, tz, at)?, now_ms, at);
        }
    }
    for f in ["%H:%M:%S", "%H:%M"] {
        if let Ok(time) = NaiveTime::parse_from_str(at, f) {
            return next_time_of_day(time, now_ms, tz, at);
        }
    }
    Err(format!(
        "expected a time such as 09:00, 2026-03-08 09:00 or 2026-03-08T09:00:00+08:00, found '{at}'"
    ))
}

/// The next moment the local clock in `tz` shows `time`, from now on (today's when still
/// ahead, else tomorrow's: a day that DST makes 23 or 25 hours long is counted by the clock
/// on the wall, not in hours).
fn next_time_of_day<Z: TimeZone>(
    time: NaiveTime,
    now_ms: u64,
    tz: &Z,
    at: &str,
) -> Result<u64, String>
where
    Z::Offset: std::fmt::Display,
{
    let now = tz
        .timestamp_millis_opt(now_ms as i64)
        .single()
        .ok_or("the clock is out of range")?;
    let today: NaiveDate = now.date_naive();
    for day in [today, today + ChronoDuration::days(1)] {
        let t = local(day.and_time(time), tz, at)?;
        if t >= now_ms as i64 {
            return Ok(t as u64);
        }
    }
    Err(format!("'{at}' could not be placed after now"))
}

/// The instant a local date and time names in `tz`. In an overlap (clocks set back) the first
/// of the two: the earlier one is never late. In a gap (clocks set forward) it is refused
/// rather than moved, saying why, because either way of moving it guesses what was meant.
fn local<Z: TimeZone>(n: NaiveDateTime, tz: &Z, at: &str) -> Result<i64, String>
where
    Z::Offset: std::fmt::Display,
{
    match tz.from_local_datetime(&n) {
        LocalResult::Single(t) => Ok(t.timestamp_millis()),
        LocalResult::Ambiguous(first, _) => Ok(first.timestamp_millis()),
        LocalResult::None => Err(format!(
            "'{at}' does not exist in the configured time zone: the clocks jump forward over it; give a time an hour later or earlier"
        )),
    }
}

fn future(t_ms: i64, now_ms: u64, at: &str) -> Result<u64, String> {
    match u64::try_from(t_ms) {
        Ok(t) if t >= now_ms => Ok(t),
        _ => Err(format!(
            "'{at}' is in the past; give a later time, or leave it out to send now"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use chrono_tz::America::New_York;

    fn ms(s: &str) -> u64 {
        s.parse::<DateTime<Utc>>().expect("utc").timestamp_millis() as u64
    }

    #[test]
    fn nine_the_next_morning_after_the_spring_change_is_read_in_edt() {
        // Saturday 2026-03-07 12:00 EST; the clocks go forward at 02:00 on Sunday.
        let now = ms("2026-03-07T17:00:00Z");
        let due = due_ms(Some("09:00"), None, now, Some(New_York)).expect("due");
        assert_eq!(due, ms("2026-03-08T13:00:00Z"));
        let tomorrow_noon = due_ms(Some("2026-03-08 12:00"), None, now, Some(New_York));
        assert_eq!(tomorrow_noon, Ok(ms("2026-03-08T16:00:00Z")));
    }

    #[test]
    fn gaps_are_refused_and_overlaps_take_the_first() {
        let now = ms("2026-03-01T00:00:00Z");
        let gap = due_ms(Some("2026-03-08 02:30"), None, now, Some(New_York));
        assert!(gap.expect_err("gap").contains("jump forward"));
        let fall = due_ms(Some("2026-11-01 01:30"), None, now, Some(New_York));
        assert_eq!(fall, Ok(ms("2026-11-01T05:30:00Z")));
    }

    #[test]
    fn offsets_in_and_refusals() {
        let now = ms("2026-03-01T00:00:00Z");
        assert_eq!(
            due_ms(Some("2026-03-02T08:00:00+08:00"), None, now, Some(New_York)),
            Ok(ms("2026-03-02T00:00:00Z"))
        );
        assert_eq!(due_ms(None, Some(90), now, None), Ok(now + 90_000));
        assert_eq!(due_ms(None, None, now, None), Ok(now));
        assert!(due_ms(Some("09:00"), Some(5), now, None).is_err());
        assert!(due_ms(Some("2026-02-01 09:00"), None, now, Some(New_York)).is_err());
        assert!(due_ms(Some("tomorrow"), None, now, None).is_err());
        assert!(due_ms(None, Some(MAX_AHEAD_SECS + 1), now, None).is_err());
    }
}
