//! What the owner reads: the question, the replies to answers, the closing notices, the Feishu cards.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Value, json};

use crate::protocol::ConfirmState;

/// Key of the question id in a card button's callback value (as in `scv_feishu::card`).
pub const CARD_VALUE_QUESTION: &str = "q";
/// Key of the answer (`yes` / `no`) in a card button's callback value (as in `scv_feishu::card`).
pub const CARD_VALUE_ANSWER: &str = "a";

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

/// The notice sent to the chat when a question closes (on Feishu only when its card cannot be
/// updated: then this rides along with the resolved card).
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

/// The yes/no card; the same JSON shape as `scv_feishu::card::YesNoCard::build` (schema 2.0).
pub fn card(id: &str, q: &str, code: &str, deadline: &str) -> Value {
    let button = |label: &str, kind: &str, answer: &str| {
        json!({
            "tag": "button",
            "text": {"tag": "plain_text", "content": label},
            "type": kind,
            "behaviors": [{
                "type": "callback",
                "value": {CARD_VALUE_QUESTION: id, CARD_VALUE_ANSWER: answer}
            }]
        })
    };
    let columns = json!({
        "tag": "column_set",
        "columns": [
            {"tag": "column", "elements": [button("Yes", "primary", "yes")]},
            {"tag": "column", "elements": [button("No", "danger", "no")]}
        ]
    });
    let hint = format!("Answer before {deadline} (or reply Y {code} / N {code}).");
    card_json("orange", vec![markdown(q), markdown(&hint), columns])
}

/// The card without buttons, saying how the question ended (as `YesNoCard::resolved`).
pub fn resolved_card(q: &str, state: ConfirmState, at: &str) -> Value {
    let (template, line) = match state {
        ConfirmState::Yes => ("green", format!("✅ Approved at {at}")),
        ConfirmState::No => ("red", format!("❌ Declined at {at}")),
        ConfirmState::Expired => ("grey", format!("⌛ Expired at {at} without an answer")),
        ConfirmState::Withdrawn => ("grey", "↩️ Withdrawn by the asker".to_string()),
        _ => ("grey", "⚠️ Could not be delivered in time".to_string()),
    };
    card_json(template, vec![markdown(q), markdown(&line)])
}

fn markdown(content: &str) -> Value {
    json!({"tag": "markdown", "content": content})
}

fn card_json(template: &str, elements: Vec<Value>) -> Value {
    json!({
        "schema": "2.0",
        "config": {"update_multi": true},
        "header": {"title": {"tag": "plain_text", "content": "Confirm"}, "template": template},
        "body": {"elements": elements}
    })
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

    #[test]
    fn cards_carry_the_question_id_in_both_buttons() {
        let c = card("q-7", "Deploy?", "7F", "14:30");
        let cols = &c["body"]["elements"][2]["columns"];
        assert_eq!(cols[0]["elements"][0]["behaviors"][0]["value"]["q"], "q-7");
        assert_eq!(cols[0]["elements"][0]["behaviors"][0]["value"]["a"], "yes");
        assert_eq!(cols[1]["elements"][0]["behaviors"][0]["value"]["a"], "no");
        let r = resolved_card("Deploy?", ConfirmState::Expired, "14:30");
        assert_eq!(r["header"]["template"], "grey");
        assert!(r.to_string().contains("Expired at 14:30"));
    }

    /// The exact card JSON sent today, pinned before the builders move to the Feishu adapter.
    #[test]
    fn cards_are_pinned_byte_for_byte() {
        let q = "Deploy \"v2\"?\n**now**";
        assert_eq!(
            card("q-7", q, "7F", "14:30 tomorrow").to_string(),
            r#"{"body":{"elements":[{"content":"Deploy \"v2\"?\n**now**","tag":"markdown"},{"content":"Answer before 14:30 tomorrow (or reply Y 7F / N 7F).","tag":"markdown"},{"columns":[{"elements":[{"behaviors":[{"type":"callback","value":{"a":"yes","q":"q-7"}}],"tag":"button","text":{"content":"Yes","tag":"plain_text"},"type":"primary"}],"tag":"column"},{"elements":[{"behaviors":[{"type":"callback","value":{"a":"no","q":"q-7"}}],"tag":"button","text":{"content":"No","tag":"plain_text"},"type":"danger"}],"tag":"column"}],"tag":"column_set"}]},"config":{"update_multi":true},"header":{"template":"orange","title":{"content":"Confirm","tag":"plain_text"}},"schema":"2.0"}"#
        );
        let resolved = |template: &str, line: &str| {
            format!(
                r#"{{"body":{{"elements":[{{"content":"Deploy \"v2\"?\n**now**","tag":"markdown"}},{{"content":"{line}","tag":"markdown"}}]}},"config":{{"update_multi":true}},"header":{{"template":"{template}","title":{{"content":"Confirm","tag":"plain_text"}}}},"schema":"2.0"}}"#
            )
        };
        let cases = [
            (ConfirmState::Yes, "green", "✅ Approved at 14:30"),
            (ConfirmState::No, "red", "❌ Declined at 14:30"),
            (ConfirmState::Expired, "grey", "⌛ Expired at 14:30 without an answer"),
            (ConfirmState::Withdrawn, "grey", "↩️ Withdrawn by the asker"),
            (ConfirmState::Failed, "grey", "⚠️ Could not be delivered in time"),
        ];
        for (state, template, line) in cases {
            assert_eq!(
                resolved_card(q, state, "14:30").to_string(),
                resolved(template, line),
                "{state:?}"
            );
        }
    }
}
