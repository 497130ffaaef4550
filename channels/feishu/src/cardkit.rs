//! CardKit card entities that fill in while an answer is written (media-and-streaming.md §5.1):
//! create one with streaming mode on, send it once by `card_id`, put the full text so far into
//! its markdown element, close streaming at the end. Every operation on one card carries a
//! sequence that must strictly increase; the caller keeps the counter.

use reqwest::Method;
use serde_json::{Value, json};

use crate::error::Error;
use crate::rest::{Client, MessageContent, path_segment};

/// The one streamed element of a card this crate builds.
pub const ANSWER_ELEMENT: &str = "answer_md";

/// The chat-list preview while streaming (the platform's own default).
const SUMMARY: &str = "[生成中...]";

/// The most characters one content update may carry.
pub const MAX_CONTENT_CHARS: usize = 100_000;

/// What a CardKit refusal asks of the caller (the spec's table, §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardFault {
    /// 230020: too frequent. Skip this frame; the next one carries the full text anyway.
    SkipFrame,
    /// 200850 (closed after 10 minutes) or 300309 (closed): reopen streaming, then retry.
    Reopen,
    /// 300317: the sequence did not increase; move the counter on and retry.
    Resync,
    /// 200810 (a user interaction in progress) or 300120 (internal): retry later.
    Later,
    /// Anything else CardKit refuses (not found, older than 14 days, not ours, too large, a
    /// table limit): this card can no longer show the answer; send the rest another way.
    Dead,
}

/// How the caller should treat `e` from a CardKit call; `None` when it is not CardKit's own
/// refusal (network, token, HTTP), which the ordinary classification handles.
pub fn card_fault(e: &Error) -> Option<CardFault> {
    let Error::Api { code, .. } = e else {
        return None;
    };
    Some(match code {
        230020 => CardFault::SkipFrame,
        200850 | 300309 => CardFault::Reopen,
        300317 => CardFault::Resync,
        200810 | 300120 => CardFault::Later,
        200740 | 200750 | 200770 | 200860 | 300301..=300313 | 230099 | 10002 | 200220 => {
            CardFault::Dead
        }
        _ => return None,
    })
}

/// A JSON 2.0 card with streaming mode on and one markdown element holding `markdown`.
///
/// The element starts with the text so far, never empty: whether create accepts an empty
/// `content` is confirmed only by one peer (spec §8), so the safe choice is to create the card
/// once there is text.
pub fn streaming_card(markdown: &str) -> Value {
    json!({
        "schema": "2.0",
        "config": {
            "streaming_mode": true,
            "update_multi": true,
            "summary": {"content": SUMMARY},
            "streaming_config": {
                "print_frequency_ms": {"default": 70},
                "print_step": {"default": 1},
                "print_strategy": "fast"
            }
        },
        "body": {"elements": [
            {"tag": "markdown", "content": markdown, "element_id": ANSWER_ELEMENT}
        ]}
    })
}

impl MessageContent {
    /// A message showing the card entity `card_id` (it can be sent only once).
    pub fn card_entity(card_id: &str) -> Self {
        MessageContent::Card(json!({"type": "card", "data": {"card_id": card_id}}))
    }
}

impl Client {
    /// Creates a card entity from `card` (JSON 2.0); returns its `card_id`.
    pub async fn create_card(&self, card: &Value) -> Result<String, Error> {
        let body = json!({"type": "card_json", "data": card.to_string()});
        let data = self
            .call(Method::POST, "/open-apis/cardkit/v1/cards", Some(body))
            .await?;
        data.get("card_id")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| Error::Decode("a created card without card_id".into()))
    }

    /// Replaces the text of `element` of card `card_id` with `content`, the FULL text so far
    /// (a longer text beginning with the old one is typed out), at `sequence`.
    pub async fn put_card_content(
        &self,
        card_id: &str,
        element: &str,
        content: &str,
        sequence: i64,
    ) -> Result<(), Error> {
        if content.is_empty() || content.chars().count() > MAX_CONTENT_CHARS {
            return Err(Error::Invalid(format!(
                "card content must have 1 to {MAX_CONTENT_CHARS} characters"
            )));
        }
        let path = format!(
            "/open-apis/cardkit/v1/cards/{}/elements/{}/content",
            path_segment(card_id)?,
            path_segment(element)?
        );
        let body = json!({"content": content, "sequence": sequence});
        self.call(Method::PUT, &path, Some(body)).await.map(|_| ())
    }

    /// Turns streaming mode of card `card_id` on or off at `sequence` (close it at the end of
    /// every answer: while it is on the card cannot be forwarded).
    pub async fn set_card_streaming(
        &self,
        card_id: &str,
        on: bool,
        sequence: i64,
    ) -> Result<(), Error> {
        let path = format!(
            "/open-apis/cardkit/v1/cards/{}/settings",
            path_segment(card_id)?
        );
        let settings = json!({"config": {"streaming_mode": on}}).to_string();
        let body = json!({"settings": settings, "sequence": sequence});
        self.call(Method::PATCH, &path, Some(body))
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: i64) -> Error {
        Error::Api {
            code,
            msg: String::new(),
            http_status: 400,
            retry_after: None,
        }
    }

    #[test]
    fn refusals_map_to_what_the_spec_says_to_do() {
        assert_eq!(card_fault(&api(230020)), Some(CardFault::SkipFrame));
        assert_eq!(card_fault(&api(200850)), Some(CardFault::Reopen));
        assert_eq!(card_fault(&api(300309)), Some(CardFault::Reopen));
        assert_eq!(card_fault(&api(300317)), Some(CardFault::Resync));
        assert_eq!(card_fault(&api(300120)), Some(CardFault::Later));
        assert_eq!(card_fault(&api(200740)), Some(CardFault::Dead));
        assert_eq!(card_fault(&api(200750)), Some(CardFault::Dead));
        assert_eq!(card_fault(&api(99991663)), None, "a token problem");
        assert_eq!(card_fault(&Error::Network("x".into())), None);
    }

    #[test]
    fn the_card_streams_one_markdown_element() {
        let c = streaming_card("hello");
        assert_eq!(c["schema"], "2.0");
        assert_eq!(c["config"]["streaming_mode"], true);
        assert_eq!(c["config"]["update_multi"], true);
        assert_eq!(c["body"]["elements"][0]["element_id"], ANSWER_ELEMENT);
        assert_eq!(c["body"]["elements"][0]["content"], "hello");
    }
}
