//! What the owner reads: the question, the replies to answers, the closing notices (as text; each
//! platform renders the typed bodies its own way, see `conversation::body`). The words are in the
//! catalogue (`words::Ask`); these are the calls the service makes, in the chat's language.

use chrono::{DateTime, TimeZone, Utc};

use crate::protocol::ConfirmState;
use crate::words::{Ask, Lang};

/// `14:30` in `tz` (the system's zone when `None`), with ` tomorrow` when that is not today there.
pub fn deadline_text(deadline_unix: u64, now_unix: u64, tz: Option<chrono_tz::Tz>) -> String {
    deadline_in(deadline_unix, now_unix, tz, Lang::En)
}

/// [`deadline_text`] in `lang`.
pub fn deadline_in(
    deadline_unix: u64,
    now_unix: u64,
    tz: Option<chrono_tz::Tz>,
    lang: Lang,
) -> String {
    let at = DateTime::<Utc>::from_timestamp(deadline_unix as i64, 0).unwrap_or_default();
    let now = DateTime::<Utc>::from_timestamp(now_unix as i64, 0).unwrap_or_default();
    let ask = match tz {
        Some(tz) => hh_mm(at.with_timezone(&tz), now.with_timezone(&tz)),
        None => hh_mm(
            at.with_timezone(&chrono::Local),
            now.with_timezone(&chrono::Local),
        ),
    };
    ask.text(lang).into_owned()
}

fn hh_mm<Z: TimeZone>(at: DateTime<Z>, now: DateTime<Z>) -> Ask
where
    Z::Offset: std::fmt::Display,
{
    Ask::Deadline {
        hm: at.format("%H:%M").to_string(),
        days: (at.date_naive() - now.date_naive()).num_days(),
        date: at.format("%Y-%m-%d %H:%M").to_string(),
    }
}

/// The text message asking the question (on every platform; the plain fallback on Feishu),
/// with "always" beside yes and no when `always`.
pub fn question(q: &str, code: &str, deadline: &str, always: bool, lang: Lang) -> String {
    Ask::Question {
        question: q.to_string(),
        code: code.to_string(),
        deadline: deadline.to_string(),
        always,
    }
    .text(lang)
    .into_owned()
}

/// The spelling of an answer state in logs and the store (English, never shown translated).
pub fn answer_word(state: ConfirmState) -> &'static str {
    crate::words::answer_word(state, Lang::En)
}

/// The reply to an answer that was recorded.
pub fn recorded(state: ConfirmState, code: &str, lang: Lang) -> String {
    let code = code.to_string();
    Ask::Recorded { state, code }.text(lang).into_owned()
}

/// The reply to an answer for a question that is already closed.
pub fn already_closed(state: ConfirmState, code: &str, lang: Lang) -> String {
    let code = code.to_string();
    Ask::AlreadyClosed { state, code }.text(lang).into_owned()
}

/// The reply to a bare answer when several questions wait in the chat: `(code, question)` each.
pub fn which(pending: &[(String, String)], lang: Lang) -> String {
    let pending = pending.to_vec();
    Ask::Which { pending }.text(lang).into_owned()
}

/// The notice sent to the chat when a question closes (where the question cannot show it in
/// place, or as the new message when updating it in place is refused).
pub fn closed_notice(state: ConfirmState, q: &str, code: &str, lang: Lang) -> String {
    Ask::Closed {
        state,
        question: q.to_string(),
        code: code.to_string(),
    }
    .text(lang)
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::quote;

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
        assert_eq!(
            deadline_in(now + 16 * 3600 + 60, now, tz, Lang::ZhCn),
            "明天 00:01"
        );
    }

    #[test]
    fn the_question_names_code_and_deadline() {
        assert_eq!(
            question("Deploy?", "7F", "14:30", false, Lang::En),
            "Deploy?\nReply Y 7F or N 7F before 14:30"
        );
    }

    #[test]
    fn long_questions_are_quoted_short_on_one_line() {
        let q = format!("line one\n{}", "x".repeat(100));
        let quoted = quote(&q);
        assert_eq!(quoted.chars().count(), crate::words::QUOTE_CHARS + 2);
        assert!(!quoted.contains('\n'));
        assert!(quoted.ends_with("…”"));
    }
}
