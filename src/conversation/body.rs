//! What an outbound message means, before a platform renders it.
//!
//! The core says "a question with this id, text, code and deadline"; each adapter decides how it
//! looks (Feishu a card with buttons, WeChat the plain text with the code). The outbox stores a
//! body in its `rich` column as versioned JSON (`{"v":1,"body":...}`); a plain text body stores
//! nothing there. Rows written before typed bodies hold a platform's own JSON in that column
//! (a Feishu card): they read back as [`Body::Legacy`] and are sent as they were stored.

use serde::{Deserialize, Serialize};

/// The version of the stored form written now.
const STORED_VERSION: u64 = 1;

/// What one outbound message is. The outbox item's `text` is always its plain-text form, split
/// to the platform's size by the core; platforms that render only text send that.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Body {
    /// Just the text.
    #[default]
    Text,
    /// An owner question to answer yes or no.
    Question(Question),
    /// How a question ended: replaces the question where the platform can edit, else a notice.
    QuestionClosed(QuestionClosed),
    /// A file from the account's workspace, sent as an image or a file after the answer's text;
    /// `text` says what it is for platforms (or failures) that send only text.
    Media(MediaOut),
    /// Stored by a release before typed bodies: the platform's own rich content (a Feishu card
    /// as JSON), opaque to the core and sent as stored. Never written by this release.
    #[serde(skip)]
    Legacy(String),
}

/// An owner question, as the platform shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The question's id (`q-7`), carried by answer buttons.
    pub id: String,
    /// The question as asked.
    pub text: String,
    /// The short code the owner answers with by text (`7F`).
    pub code: String,
    /// When it closes, as people read it in the configured zone (`14:30`, `09:00 tomorrow`).
    pub deadline: String,
    /// Offer yes/no buttons (the account declared `buttons`); otherwise the owner answers by text.
    pub buttons: bool,
}

/// A question that closed, as the platform shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionClosed {
    /// The question's id (`q-7`).
    pub id: String,
    /// How it ended.
    pub ended: Ending,
    /// The question as asked.
    pub text: String,
    /// Its short code.
    pub code: String,
    /// When it ended, as people read it (`14:30`).
    pub at: String,
}

/// A workspace file to send, checked by the core to lie inside the workspace before it is
/// queued (the adapter re-checks nothing but the platform's own limits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaOut {
    /// Image (sent as a picture where the platform can) or any other file.
    pub kind: crate::agent::MediaKind,
    /// The file, absolute, inside the workspace, symlinks resolved.
    pub path: std::path::PathBuf,
    /// The name the recipient sees.
    pub name: String,
}

/// How a question ended.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The owner said yes.
    Approved,
    /// The owner said no.
    Declined,
    /// Nobody answered before the deadline.
    Expired,
    /// The asker no longer needs an answer.
    Withdrawn,
    /// It could not be delivered in time.
    Failed,
}

/// The stored form of a typed body.
#[derive(Serialize, Deserialize)]
struct Stored {
    v: u64,
    body: Body,
}

impl Body {
    /// What the outbox's `rich` column holds for this body (`None` for plain text).
    pub fn to_stored(&self) -> Option<String> {
        match self {
            Body::Text => None,
            Body::Legacy(raw) => Some(raw.clone()),
            typed => serde_json::to_string(&Stored {
                v: STORED_VERSION,
                body: typed.clone(),
            })
            .ok(),
        }
    }

    /// Reads the outbox's `rich` column: nothing is text, a versioned object a typed body, and
    /// anything else what an earlier release stored (platform JSON) as [`Body::Legacy`].
    pub fn from_stored(rich: Option<&str>) -> Body {
        let Some(raw) = rich else {
            return Body::Text;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(raw) else {
            return Body::Legacy(raw.to_string());
        };
        let Some(v) = value.get("v").and_then(serde_json::Value::as_u64) else {
            return Body::Legacy(raw.to_string());
        };
        match serde_json::from_value::<Stored>(value) {
            Ok(s) if v == STORED_VERSION => s.body,
            // A newer release's body this one cannot read (after a downgrade): its text still
            // says everything, so it goes out as text rather than as something misread.
            _ => Body::Text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question() -> Body {
        Body::Question(Question {
            id: "q-7".into(),
            text: "Deploy?".into(),
            code: "7F".into(),
            deadline: "14:30".into(),
            buttons: true,
        })
    }

    #[test]
    fn typed_bodies_round_trip_through_the_rich_column() {
        let closed = Body::QuestionClosed(QuestionClosed {
            id: "q-7".into(),
            ended: Ending::Expired,
            text: "Deploy?".into(),
            code: "7F".into(),
            at: "14:30".into(),
        });
        for body in [question(), closed] {
            let stored = body.to_stored().expect("stored");
            assert!(stored.starts_with(r#"{"v":1,"body":"#), "{stored}");
            assert_eq!(Body::from_stored(Some(&stored)), body);
        }
        assert_eq!(Body::Text.to_stored(), None);
        assert_eq!(Body::from_stored(None), Body::Text);
    }

    #[test]
    fn what_an_earlier_release_stored_reads_as_legacy() {
        let card = r#"{"schema":"2.0","header":{"template":"orange"}}"#;
        assert_eq!(
            Body::from_stored(Some(card)),
            Body::Legacy(card.to_string())
        );
        assert_eq!(Body::Legacy(card.into()).to_stored().as_deref(), Some(card));
        assert_eq!(
            Body::from_stored(Some("not json")),
            Body::Legacy("not json".into())
        );
    }

    #[test]
    fn a_newer_version_goes_out_as_text() {
        assert_eq!(
            Body::from_stored(Some(r#"{"v":2,"body":{"poll":{}}}"#)),
            Body::Text
        );
    }
}
