//! Template cards for yes/no questions (§4.7): a `button_interaction` card checked against the
//! platform's rules before it is sent, and the `text_notice` that replaces it once answered.

use serde_json::{Value, json};

use crate::error::Error;
use crate::limits::{CARD_BUTTONS_MAX, CARD_KEY_MAX_BYTES, TASK_ID_MAX_BYTES};

/// One button: its label, style (1–4) and the key a click reports as `event_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    /// Label.
    pub text: String,
    /// 1–4.
    pub style: u8,
    /// Reported back on a click; unique on the card, ≤ 1024 bytes.
    pub key: String,
}

/// A `button_interaction` card. Made by the daemon per question: `task_id` carries the
/// question id and must stay unique per bot; button keys carry the answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ButtonCard {
    /// `main_title.title`.
    pub title: String,
    /// `main_title.desc`.
    pub desc: Option<String>,
    /// The buttons, 1–6.
    pub buttons: Vec<Button>,
    /// `[0-9A-Za-z_\-@]`, ≤ 128 bytes, unique per bot.
    pub task_id: String,
}

/// Whether `task_id` is one the platform takes (§4.7).
pub fn valid_task_id(task_id: &str) -> bool {
    !task_id.is_empty()
        && task_id.len() <= TASK_ID_MAX_BYTES
        && task_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'@'))
}

impl ButtonCard {
    /// Checks the platform's rules; an `Err` is [`Error::Invalid`] (the card is never sent).
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |why: &str| Err(Error::Invalid(format!("card: {why}")));
        if self.buttons.is_empty() || self.buttons.len() > CARD_BUTTONS_MAX {
            return bad("1 to 6 buttons");
        }
        if !valid_task_id(&self.task_id) {
            return bad("task_id must be 1-128 bytes of [0-9A-Za-z_-@]");
        }
        let mut keys = std::collections::HashSet::new();
        for b in &self.buttons {
            if b.key.is_empty() || b.key.len() > CARD_KEY_MAX_BYTES || !keys.insert(&b.key) {
                return bad("button keys must be unique, 1-1024 bytes");
            }
            if !(1..=4).contains(&b.style) {
                return bad("button style must be 1-4");
            }
        }
        Ok(())
    }

    /// The `template_card` object.
    pub fn to_json(&self) -> Value {
        let mut title = json!({"title": self.title});
        if let Some(d) = &self.desc {
            title["desc"] = Value::from(d.as_str());
        }
        let buttons: Vec<Value> = self
            .buttons
            .iter()
            .map(|b| json!({"text": b.text, "style": b.style, "key": b.key}))
            .collect();
        json!({"card_type": "button_interaction", "main_title": title,
               "button_list": buttons, "task_id": self.task_id})
    }
}

/// The card that replaces an answered one: a `text_notice` with only `main_title` and the same
/// `task_id`, as the SDK's example does (the doc-derived schema also wants `card_action`:
/// conflicting sources, unconfirmed; the SDK's shape is the one seen to work).
pub fn answered_card(title: &str, task_id: &str) -> Value {
    json!({"card_type": "text_notice", "main_title": {"title": title}, "task_id": task_id})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(keys: &[&str], task_id: &str) -> ButtonCard {
        ButtonCard {
            title: "Run it?".into(),
            desc: None,
            buttons: keys
                .iter()
                .map(|k| Button {
                    text: k.to_string(),
                    style: 1,
                    key: k.to_string(),
                })
                .collect(),
            task_id: task_id.into(),
        }
    }

    #[test]
    fn platform_rules() {
        assert!(card(&["yes", "no"], "q-1@x_2").validate().is_ok());
        assert!(card(&[], "q").validate().is_err());
        assert!(
            card(&["a", "b", "c", "d", "e", "f", "g"], "q")
                .validate()
                .is_err()
        );
        assert!(card(&["a", "a"], "q").validate().is_err());
        assert!(card(&["a"], "q 1").validate().is_err());
        assert!(card(&["a"], &"q".repeat(129)).validate().is_err());
        assert!(card(&[&"k".repeat(1025)], "q").validate().is_err());
        let v = card(&["yes"], "q").to_json();
        assert_eq!(v["button_list"][0]["key"], "yes");
        assert_eq!(v["card_type"], "button_interaction");
    }
}
