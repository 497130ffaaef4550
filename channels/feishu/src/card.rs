//! Interactive cards (JSON 2.0): the yes/no question card, its resolved variants, and the
//! callback response (toast + replacement card) returned to a click.

use serde_json::{Value, json};

/// Key of the question id in a button's callback value.
pub const VALUE_QUESTION: &str = "q";
/// Key of the answer (`yes` / `no`) in a button's callback value.
pub const VALUE_ANSWER: &str = "a";

/// The answer a yes/no button carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The "yes" button.
    Yes,
    /// The "no" button.
    No,
}

impl Answer {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Yes => "yes",
            Answer::No => "no",
        }
    }

    /// Parses `yes` / `no`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "yes" => Some(Answer::Yes),
            "no" => Some(Answer::No),
            _ => None,
        }
    }
}

/// A yes/no question card; [`YesNoCard::build`] gives the card JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YesNoCard {
    /// Carried in both buttons' values as `q`.
    pub question_id: String,
    /// Card header title.
    pub title: String,
    /// The question, as card markdown.
    pub question: String,
    /// Label of the yes button.
    pub yes_label: String,
    /// Label of the no button.
    pub no_label: String,
}

/// How a question ended, for the card that replaces the buttons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Someone answered; `by` is who to name ("you"), `at` a caller-formatted time ("14:03").
    Answered {
        /// The answer.
        answer: Answer,
        /// Who answered, as shown.
        by: String,
        /// When, as shown.
        at: String,
    },
    /// The deadline passed; `at` is the caller-formatted deadline.
    Expired {
        /// When, as shown.
        at: String,
    },
    /// The asker withdrew the question.
    Withdrawn,
}

impl YesNoCard {
    /// A card with "Yes" / "No" buttons.
    pub fn new(
        question_id: impl Into<String>,
        title: impl Into<String>,
        question: impl Into<String>,
    ) -> Self {
        Self {
            question_id: question_id.into(),
            title: title.into(),
            question: question.into(),
            yes_label: "Yes".into(),
            no_label: "No".into(),
        }
    }

    /// Replaces the button labels.
    pub fn labels(mut self, yes: impl Into<String>, no: impl Into<String>) -> Self {
        self.yes_label = yes.into();
        self.no_label = no.into();
        self
    }

    /// The schema 2.0 card with two buttons in a column set (2.0 forbids `action` containers).
    pub fn build(&self) -> Value {
        let button = |label: &str, kind: &str, answer: Answer| {
            json!({
                "tag": "button",
                "text": {"tag": "plain_text", "content": label},
                "type": kind,
                "behaviors": [{
                    "type": "callback",
                    "value": {VALUE_QUESTION: self.question_id, VALUE_ANSWER: answer.as_str()}
                }]
            })
        };
        let columns = json!({
            "tag": "column_set",
            "columns": [
                {"tag": "column", "elements": [button(&self.yes_label, "primary", Answer::Yes)]},
                {"tag": "column", "elements": [button(&self.no_label, "danger", Answer::No)]}
            ]
        });
        card(
            &self.title,
            "orange",
            vec![markdown(&self.question), columns],
        )
    }

    /// The same card with the buttons removed and a line saying how it ended.
    pub fn resolved(&self, how: &Resolution) -> Value {
        let (template, line) = match how {
            Resolution::Answered {
                answer: Answer::Yes,
                by,
                at,
            } => ("green", format!("✅ Approved by {by} at {at}")),
            Resolution::Answered {
                answer: Answer::No,
                by,
                at,
            } => ("red", format!("❌ Declined by {by} at {at}")),
            Resolution::Expired { at } => ("grey", format!("⌛ Expired at {at} without an answer")),
            Resolution::Withdrawn => ("grey", "↩️ Withdrawn by the asker".to_string()),
        };
        card(
            &self.title,
            template,
            vec![markdown(&self.question), markdown(&line)],
        )
    }
}

fn markdown(content: &str) -> Value {
    json!({"tag": "markdown", "content": content})
}

fn card(title: &str, template: &str, elements: Vec<Value>) -> Value {
    json!({
        "schema": "2.0",
        // Required before and after a PATCH, and for a callback to replace the card.
        "config": {"update_multi": true},
        "header": {"title": {"tag": "plain_text", "content": title}, "template": template},
        "body": {"elements": elements}
    })
}

/// Kind of toast shown to the clicker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToastKind {
    /// Green.
    Success,
    /// Neutral.
    Info,
    /// Yellow.
    Warning,
    /// Red.
    Error,
}

impl ToastKind {
    fn as_str(self) -> &'static str {
        match self {
            ToastKind::Success => "success",
            ToastKind::Info => "info",
            ToastKind::Warning => "warning",
            ToastKind::Error => "error",
        }
    }
}

/// The answer to a card click (WS: the ACK `data`; HTTP: the 200 body).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CardResponse {
    /// A toast for the clicker.
    pub toast: Option<(ToastKind, String)>,
    /// A card replacing the clicked one.
    pub card: Option<Value>,
}

impl CardResponse {
    /// `{}`: the click is accepted, nothing changes.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A toast only (e.g. an error toast for a stranger's click; the card stays).
    pub fn toast(kind: ToastKind, text: impl Into<String>) -> Self {
        Self {
            toast: Some((kind, text.into())),
            card: None,
        }
    }

    /// Adds a replacement card.
    pub fn with_card(mut self, card: Value) -> Self {
        self.card = Some(card);
        self
    }

    /// The response JSON.
    pub fn to_json(&self) -> Value {
        let mut out = serde_json::Map::new();
        if let Some((kind, text)) = &self.toast {
            out.insert(
                "toast".into(),
                json!({"type": kind.as_str(), "content": text}),
            );
        }
        if let Some(card) = &self.card {
            out.insert("card".into(), json!({"type": "raw", "data": card}));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buttons(card: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        for el in card["body"]["elements"].as_array().unwrap() {
            for col in el["columns"].as_array().into_iter().flatten() {
                for b in col["elements"].as_array().unwrap() {
                    if b["tag"] == "button" {
                        out.push(b.clone());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn yes_no_card_shape() {
        let c = YesNoCard::new("q-17", "Confirm", "Deploy **now**?").build();
        assert_eq!(c["schema"], "2.0");
        assert_eq!(c["config"]["update_multi"], true);
        assert_eq!(c["header"]["title"]["content"], "Confirm");
        assert_eq!(
            c["body"]["elements"][0],
            json!({"tag": "markdown", "content": "Deploy **now**?"})
        );
        assert!(
            c["body"]["elements"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["tag"] != "action")
        );
        let b = buttons(&c);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0]["text"]["content"], "Yes");
        assert_eq!(b[0]["type"], "primary");
        assert_eq!(
            b[0]["behaviors"][0],
            json!({"type": "callback", "value": {"q": "q-17", "a": "yes"}})
        );
        assert_eq!(
            b[1]["behaviors"][0]["value"],
            json!({"q": "q-17", "a": "no"})
        );
        assert_eq!(b[1]["type"], "danger");
    }

    #[test]
    fn resolved_variants_have_no_buttons() {
        let q = YesNoCard::new("q1", "Confirm", "Deploy?").labels("Ship", "Hold");
        assert_eq!(buttons(&q.build())[0]["text"]["content"], "Ship");
        let cases = [
            (
                Resolution::Answered {
                    answer: Answer::Yes,
                    by: "you".into(),
                    at: "14:03".into(),
                },
                "Approved by you at 14:03",
            ),
            (
                Resolution::Answered {
                    answer: Answer::No,
                    by: "you".into(),
                    at: "09:30".into(),
                },
                "Declined by you at 09:30",
            ),
            (
                Resolution::Expired { at: "15:00".into() },
                "Expired at 15:00",
            ),
            (Resolution::Withdrawn, "Withdrawn"),
        ];
        for (how, text) in cases {
            let c = q.resolved(&how);
            assert!(buttons(&c).is_empty());
            assert_eq!(c["config"]["update_multi"], true);
            let s = c.to_string();
            assert!(s.contains(text), "{s}");
            assert!(!s.contains("\"button\""));
        }
    }

    #[test]
    fn callback_response_shape() {
        assert_eq!(CardResponse::empty().to_json(), json!({}));
        let r = CardResponse::toast(ToastKind::Error, "not yours").to_json();
        assert_eq!(
            r,
            json!({"toast": {"type": "error", "content": "not yours"}})
        );
        let r = CardResponse::toast(ToastKind::Success, "ok")
            .with_card(json!({"schema": "2.0"}))
            .to_json();
        assert_eq!(r["card"], json!({"type": "raw", "data": {"schema": "2.0"}}));
    }
}
