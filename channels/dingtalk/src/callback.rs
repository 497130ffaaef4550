//! Card callbacks (spec §4.7 B): a button press on a template card arrives as a push on
//! [`crate::stream::CARD_CALLBACK_TOPIC`]; the answer goes back in the push's ACK.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::message::{OwnerKey, ParseError, json_error};

/// One button press. Made by [`crate::stream::Delivery::parse`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CardCallback {
    /// The card's `outTrackId` (ours): dedupe key, first answer wins.
    pub out_track_id: String,
    /// Who pressed: the staff id when `userIdType` is 1.
    pub user_id: String,
    /// 1 = staff id.
    pub user_id_type: i64,
    /// The presser's corp.
    pub corp_id: String,
    /// `actionCallback`.
    #[serde(rename = "type")]
    pub kind: String,
    /// JSON text `{cardPrivateData:{actionIds:[…], params:{…}}}`.
    content: Value,
    /// The same as `content` on the observed wire.
    value: Value,
}

impl CardCallback {
    /// Parses a push's `data`.
    pub fn parse(data: &str) -> Result<Self, ParseError> {
        let c: CardCallback =
            serde_json::from_str(data).map_err(|e| json_error("card callback", &e))?;
        if c.out_track_id.is_empty() {
            return Err(ParseError("card callback without outTrackId".into()));
        }
        Ok(c)
    }

    /// The presser as an owner candidate (only a staff id counts, spec §4.7).
    pub fn owner_key(&self) -> Option<OwnerKey> {
        (self.user_id_type == 1 && !self.user_id.is_empty() && !self.corp_id.is_empty()).then(
            || OwnerKey {
                corp_id: self.corp_id.clone(),
                staff_id: self.user_id.clone(),
            },
        )
    }

    /// The yes or no of a question card's button ([`crate::confirm::ANSWER_PARAM`]); `None`
    /// for any other button.
    pub fn answer(&self) -> Option<crate::confirm::Answer> {
        match self.params().get(crate::confirm::ANSWER_PARAM)?.as_str()? {
            "yes" => Some(crate::confirm::Answer::Yes),
            "no" => Some(crate::confirm::Answer::No),
            _ => None,
        }
    }

    /// The button's `params` (e.g. `{answer: "yes"}`), from `content` or else `value`.
    pub fn params(&self) -> Map<String, Value> {
        [&self.content, &self.value]
            .into_iter()
            .find_map(|v| {
                let inner: Value = match v {
                    Value::String(s) => serde_json::from_str(s).ok()?,
                    other => other.clone(),
                };
                inner
                    .pointer("/cardPrivateData/params")
                    .and_then(Value::as_object)
                    .cloned()
            })
            .unwrap_or_default()
    }
}

/// The ACK `response` that updates the card by key (spec §4.7): pass it to
/// [`crate::stream::AckReply::Card`]. Values must be strings (card params are, spec §6).
pub fn card_update(params: &[(&str, &str)]) -> Value {
    let map: Map<String, Value> = params
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    json!({
        "cardData": {"cardParamMap": map},
        "cardUpdateOptions": {"updateCardDataByKey": true},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_from_the_json_string_and_owner_only_by_staff_id() {
        let c = CardCallback::parse(
            r#"{"outTrackId":"q1","userId":"staff9","userIdType":1,"corpId":"ding1","type":"actionCallback",
                "content":"{\"cardPrivateData\":{\"actionIds\":[\"yes\"],\"params\":{\"answer\":\"yes\"}}}"}"#,
        )
        .unwrap();
        assert_eq!(c.params()["answer"], "yes");
        assert_eq!(c.answer(), Some(crate::confirm::Answer::Yes));
        assert_eq!(c.owner_key().unwrap().staff_id, "staff9");
        let c = CardCallback::parse(
            r#"{"outTrackId":"q1","userId":"$:LWCP","userIdType":2,"content":"{"}"#,
        )
        .unwrap();
        assert!(c.owner_key().is_none());
        assert!(c.params().is_empty());
        assert_eq!(c.answer(), None);
        assert!(CardCallback::parse("{}").is_err());
        assert!(CardCallback::parse("[").is_err());
    }
}
