//! How Feishu shows what the core means: a question is a yes/no card, a closed question the
//! card without buttons saying how it ended, anything else text (or a markdown post).
//!
//! The cards have the JSON shape of `scv_feishu::card::YesNoCard` (schema 2.0); their bytes are
//! pinned by a test, since a card stored before an upgrade and one built after must look alike.

use serde_json::{Value, json};

use crate::conversation::Body;
use crate::conversation::body::{Ending, Question, QuestionClosed};

/// Key of the question id in a card button's callback value (as in `scv_feishu::card`).
pub const CARD_VALUE_QUESTION: &str = "q";
/// Key of the answer (`yes` / `no`) in a card button's callback value (as in `scv_feishu::card`).
pub const CARD_VALUE_ANSWER: &str = "a";

/// What the card of `body` is, when it has one (`None`: it goes out as text). A body stored by
/// an earlier release is its card already; an error is one that is not valid JSON.
pub fn card(body: &Body) -> Result<Option<Value>, serde_json::Error> {
    Ok(match body {
        Body::Question(q) if q.buttons => Some(question_card(q)),
        Body::QuestionClosed(c) => Some(closed_card(c)),
        Body::Legacy(raw) => Some(serde_json::from_str(raw)?),
        _ => None,
    })
}

/// The yes/no card.
fn question_card(q: &Question) -> Value {
    let button = |label: &str, kind: &str, answer: &str| {
        json!({
            "tag": "button",
            "text": {"tag": "plain_text", "content": label},
            "type": kind,
            "behaviors": [{
                "type": "callback",
                "value": {CARD_VALUE_QUESTION: q.id, CARD_VALUE_ANSWER: answer}
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
    let (code, deadline) = (&q.code, &q.deadline);
    let hint = format!("Answer before {deadline} (or reply Y {code} / N {code}).");
    card_json("orange", vec![answer_md(&q.text), markdown(&hint), columns])
}

/// The card without buttons, saying how the question ended (as `YesNoCard::resolved`).
fn closed_card(c: &QuestionClosed) -> Value {
    let at = &c.at;
    let (template, line) = match c.ended {
        Ending::Approved => ("green", format!("✅ Approved at {at}")),
        Ending::Declined => ("red", format!("❌ Declined at {at}")),
        Ending::Expired => ("grey", format!("⌛ Expired at {at} without an answer")),
        Ending::Withdrawn => ("grey", "↩️ Withdrawn by the asker".to_string()),
        _ => ("grey", "⚠️ Could not be delivered in time".to_string()),
    };
    card_json(template, vec![answer_md(&c.text), markdown(&line)])
}

/// A question's own text, shaped for a card's markdown as an answer is (`markdown::for_card`).
fn answer_md(text: &str) -> Value {
    markdown(&super::markdown::for_card(text))
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

    fn card(id: &str, text: &str, code: &str, deadline: &str) -> Value {
        super::card(&Body::Question(Question {
            id: id.into(),
            text: text.into(),
            code: code.into(),
            deadline: deadline.into(),
            buttons: true,
        }))
        .expect("valid")
        .expect("a card")
    }

    fn resolved_card(text: &str, ended: Ending, at: &str) -> Value {
        super::card(&Body::QuestionClosed(QuestionClosed {
            id: "q-7".into(),
            ended,
            text: text.into(),
            code: "7F".into(),
            at: at.into(),
        }))
        .expect("valid")
        .expect("a card")
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
            (Ending::Approved, "green", "✅ Approved at 14:30"),
            (Ending::Declined, "red", "❌ Declined at 14:30"),
            (
                Ending::Expired,
                "grey",
                "⌛ Expired at 14:30 without an answer",
            ),
            (Ending::Withdrawn, "grey", "↩️ Withdrawn by the asker"),
            (Ending::Failed, "grey", "⚠️ Could not be delivered in time"),
        ];
        for (state, template, line) in cases {
            assert_eq!(
                resolved_card(q, state, "14:30").to_string(),
                resolved(template, line),
                "{state:?}"
            );
        }
    }

    #[test]
    fn a_question_is_rendered_as_an_answer_is_in_a_card() {
        let q = "看 ![图](https://x.io/a.png) 完\n  ```sh  \nrm -rf build_dir\n```";
        let want = "看  完\n```sh\nrm -rf build_dir\n```";
        assert_eq!(
            card("q-7", q, "7F", "14:30")["body"]["elements"][0]["content"],
            want
        );
        assert_eq!(
            resolved_card(q, Ending::Approved, "14:30")["body"]["elements"][0]["content"],
            want
        );
    }

    #[test]
    fn cards_carry_the_question_id_in_both_buttons() {
        let c = card("q-7", "Deploy?", "7F", "14:30");
        let cols = &c["body"]["elements"][2]["columns"];
        assert_eq!(cols[0]["elements"][0]["behaviors"][0]["value"]["q"], "q-7");
        assert_eq!(cols[0]["elements"][0]["behaviors"][0]["value"]["a"], "yes");
        assert_eq!(cols[1]["elements"][0]["behaviors"][0]["value"]["a"], "no");
    }

    #[test]
    fn text_and_buttonless_questions_have_no_card_and_legacy_ones_are_their_card() {
        assert_eq!(super::card(&Body::Text).expect("valid"), None);
        let text_only = Body::Question(Question {
            id: "q-7".into(),
            text: "Deploy?".into(),
            code: "7F".into(),
            deadline: "14:30".into(),
            buttons: false,
        });
        assert_eq!(super::card(&text_only).expect("valid"), None);
        let legacy = r#"{"schema":"2.0","header":{"template":"grey"}}"#;
        let c = super::card(&Body::Legacy(legacy.into()))
            .expect("valid")
            .expect("a card");
        // As the release that stored it sent it: the stored JSON, parsed.
        assert_eq!(c, serde_json::from_str::<Value>(legacy).expect("json"));
        assert!(super::card(&Body::Legacy("{not json".into())).is_err());
    }
}
