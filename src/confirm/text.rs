//! What the owner reads: the question, the replies to answers, the closing notices (as text; each
//! platform renders the typed bodies its own way, see `conversation::body`).

use chrono::{DateTime, TimeZone, Utc};

use crate::protocol::ConfirmState;

/// How many characters of a question a notice quotes.
const QUOTE_CHARS: usize = 60;

/// `14:30` in `tz` (the system's zone when `None`), with ` tomorrow` when that is not today there.
pub fn deadline_text(deadline_unix: u64, now_unix: u64, tz: Option<chrono_tz::Tz>) -> String {
    let at = DateTime::<Utc>::from_timestamp(deadline_unix as i64, 0).unwrap_or_default();
    let now = DateTime::<Utc>::from_timestamp(now_unix as i64, 0).unwrap_or_default();
    match tz {
        Some(tz) => hh_mm(at.with_timezone(&tz), now.with_timezone(&tz)),
        None => hh_mm(
            at.with_timezone(&chrono::Local),
            now.with_timezone(&chrono::Local),
        ),
    }
}

fn hh_mm<Z: TimeZone>(at: DateTime<Z>, now: DateTime<Z>) -> String
where
    Z::Offset: std::fmt::Display,
{
    let hm = at.format("%H:%M").to_string();
    let days = (at.date_naive() - now.date_naive()).num_days();
    match days {
        d if d <= 0 => hm,
        1 => format!("{hm} tomorrow"),
        _ => at.format("%Y-%m-%d %H:%M").to_string(),
    }
}

/// The text message asking the question (on every platform; the plain fallback on Feishu).
pub fn question(q: &str, code: &str, deadline: &str) -> String {
    format!("{q}\nReply Y {code} or N {code} before {deadline}")
}

/// A short quote of the question for notices.
pub fn quote(q: &str) -> String {
    let one_line = q.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= QUOTE_CHARS {
        return format!("“{one_line}”");
    }
    let cut: String = one_line.chars().take(QUOTE_CHARS - 1).collect();
    format!("“{cut}…”")
}

/// The spelling of an answer state in replies.
pub fn answer_word(state: ConfirmState) -> &'static str {
    match state {
        ConfirmState::Yes => "yes",
        ConfirmState::No => "no",
        ConfirmState::Pending => "pending",
        ConfirmState::Expired => "expired",
        ConfirmState::Withdrawn => "withdrawn",
        ConfirmState::Failed => "failed",
        ConfirmState::Unknown => "unknown",
    }
}

/// The reply to an answer that was recorded.
pub fn recorded(state: ConfirmState, code: &str) -> String {
    format!("Got it: {} ({code}).", answer_word(state))
}

/// The reply to an answer for a question that is already closed.
pub fn already_closed(state: ConfirmState, code: &str) -> String {
    match state {
        ConfirmState::Yes | ConfirmState::No => {
            format!("Already answered: {} ({code}).", answer_word(state))
        }
        ConfirmState::Expired => {
            format!("That question ({code}) has expired; no answer is needed.")
        }
        ConfirmState::Withdrawn => {
            format!("That question ({code}) was withdrawn; no answer is needed.")
        }
        _ => format!("That question ({code}) is closed; no answer is needed."),
    }
}

/// The reply to a bare answer when several questions wait in the chat: `(code, question)` each.
pub fn which(pending: &[(String, String)]) -> String {
    let list: Vec<String> = pending
        .iter()
        .map(|(code, q)| format!("{code} {}", quote(q)))
        .collect();
    let first = pending.first().map_or("7F", |(c, _)| c.as_str());
    format!(
        "Which question? {} are waiting: {}. Reply Y {first} or N {first} with the code.",
        pending.len(),
        list.join(", ")
    )
}

/// The notice sent to the chat when a question closes (where the question cannot show it in
/// place, or as the new message when updating it in place is refused).
pub fn closed_notice(state: ConfirmState, q: &str, code: &str) -> String {
    match state {
        ConfirmState::Yes | ConfirmState::No => {
            format!("Answered {}: {} ({code}).", answer_word(state), quote(q))
        }
        ConfirmState::Expired => format!(
            "No answer before the deadline, so it counts as no: {} ({code}).",
            quote(q)
        ),
        ConfirmState::Withdrawn => format!(
            "This no longer needs an answer (withdrawn): {} ({code}).",
            quote(q)
        ),
        _ => format!(
            "This no longer needs an answer (it could not be delivered in time): {} ({code}).",
            quote(q)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_reads_in_the_configured_zone() {
        // 2025-11-30 00:00:00 UTC = 08:00 in Shanghai.
        let now = 1_764_460_800;
        let tz = Some(chrono_tz::Asia::Shanghai);
        assert_eq!(deadline_text(now + 6 * 3600 + 1800, now, tz), "14:30");
        assert_eq!(
            deadline_text(now + 16 * 3600 + 60, now, tz),
            "00:01 tomorrow"
        );
        assert_eq!(deadline_text(now + 3 * 86_400, now, tz), "2025-12-03 08:00");
        assert_eq!(
            deadline_text(now + 1800, now, Some(chrono_tz::UTC)),
            "00:30"
        );
    }

    #[test]
    fn the_question_names_code_and_deadline() {
        assert_eq!(
            question("Deploy?", "7F", "14:30"),
            "Deploy?\nReply Y 7F or N 7F before 14:30"
        );
    }

    #[test]
    fn long_questions_are_quoted_short_on_one_line() {
        let q = format!("line one\n{}", "x".repeat(100));
        let quoted = quote(&q);
        assert_eq!(quoted.chars().count(), QUOTE_CHARS + 2);
        assert!(!quoted.contains('\n'));
        assert!(quoted.ends_with("…”"));
    }
}
