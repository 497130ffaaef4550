//! The local day (counters and the budget reset at local midnight) and token arithmetic.

use chrono::{DateTime, Days, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

/// Tokens a day when the account sets no `token_budget`.
pub const DEFAULT_BUDGET: u64 = 100_000;

/// Tokens reserved for the model's answer when estimating a call (the answer is a small JSON).
pub const ANSWER_TOKENS: u64 = 80;

/// The day `now` falls on in `tz` (the machine's zone when none is configured).
pub fn local_day(now: DateTime<Utc>, tz: Option<Tz>) -> NaiveDate {
    match tz {
        Some(tz) => now.with_timezone(&tz).date_naive(),
        None => now.with_timezone(&chrono::Local).date_naive(),
    }
}

/// The next local midnight after `now`, as UTC; an hour ahead if the zone has no such instant.
pub fn next_midnight(now: DateTime<Utc>, tz: Option<Tz>) -> DateTime<Utc> {
    let tomorrow = local_day(now, tz)
        .checked_add_days(Days::new(1))
        .and_then(|d| d.and_hms_opt(0, 0, 0));
    let fallback = now + chrono::Duration::hours(1);
    let Some(midnight) = tomorrow else {
        return fallback;
    };
    let at = match tz {
        Some(tz) => tz
            .from_local_datetime(&midnight)
            .earliest()
            .map(|t| t.with_timezone(&Utc)),
        None => chrono::Local
            .from_local_datetime(&midnight)
            .earliest()
            .map(|t| t.with_timezone(&Utc)),
    };
    at.unwrap_or(fallback)
}

/// A rough token count for text: about four characters a token, never zero.
pub fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

/// Whether a call estimated at `estimate` tokens fits the rest of the day's budget.
pub fn fits(spent: u64, estimate: u64, budget: u64) -> bool {
    spent.saturating_add(estimate) <= budget
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_follow_the_configured_zone() {
        let tz: Tz = "Asia/Shanghai".parse().expect("zone");
        let t = Utc
            .with_ymd_and_hms(2026, 3, 1, 15, 59, 0)
            .single()
            .expect("time");
        assert_eq!(local_day(t, Some(tz)).to_string(), "2026-03-01");
        let t2 = t + chrono::Duration::minutes(2);
        assert_eq!(local_day(t2, Some(tz)).to_string(), "2026-03-02");
        assert_eq!(
            next_midnight(t, Some(tz)),
            Utc.with_ymd_and_hms(2026, 3, 1, 16, 0, 0)
                .single()
                .expect("time")
        );
    }

    #[test]
    fn budget_arithmetic() {
        assert_eq!(estimate_tokens(0), 1);
        assert_eq!(estimate_tokens(9), 3);
        assert!(fits(900, 100, 1000));
        assert!(!fits(901, 100, 1000));
        assert!(!fits(u64::MAX, 1, 1000));
    }
}
