//! AI cards (spec §4.6 A): create and deliver a card from the account's template, stream the
//! full text into its content key, finish it. Every call checks `success` and each
//! `deliverResults[].success`: HTTP 200 is not delivery.
//!
//! Pacing is the caller's: at most one update per [`crate::limits::CARD_UPDATE_INTERVAL`],
//! one in flight, latest text wins; past [`crate::limits::CARD_CONTENT_MAX_CHARS`] finish the
//! card and start a new one. Journal the `out_track_id` of every open card and call
//! [`AnswerCard::resume`] + [`AnswerCard::finish`] for each after a restart.

use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::call::Call;
use crate::client::Client;
use crate::error::{Error, NotSent};
use crate::limits::{CARD_CONTENT_MAX_CHARS, CARD_PARAM_KEY_MAX_BYTES, CARD_PARAM_VALUE_MAX_BYTES};

/// `POST` path creating and delivering a card.
pub const CREATE_PATH: &str = "/v1.0/card/instances/createAndDeliver";
/// `PUT` path streaming into a card.
pub const STREAM_PATH: &str = "/v1.0/card/streaming";
/// `PUT` path updating a card's parameters.
pub const INSTANCE_PATH: &str = "/v1.0/card/instances";
/// The streaming variable most AI-card templates use (spec §4.6); the documented default of
/// the account's `card_content_key`.
pub const DEFAULT_CONTENT_KEY: &str = "content";

/// The account's AI-card template. Without one configured, answers go as whole markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardTemplate {
    /// `card_template_id` (`….schema`).
    pub template_id: String,
    /// `card_content_key`, usually [`DEFAULT_CONTENT_KEY`].
    pub content_key: String,
}

/// Where a card goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardSpace {
    /// A one-to-one chat with this staff id.
    Direct {
        /// The recipient's staff id.
        staff_id: String,
    },
    /// A group by its open conversation id.
    Group {
        /// `openConversationId`.
        open_conversation_id: String,
    },
}

/// `flowStatus` values (spec §4.6, official SDK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowStatus {
    /// 1.
    Processing,
    /// 2.
    Inputting,
    /// 3.
    Finished,
    /// 5.
    Failed,
}

impl FlowStatus {
    /// The wire value (a string, as every card parameter).
    pub fn as_str(self) -> &'static str {
        match self {
            FlowStatus::Processing => "1",
            FlowStatus::Inputting => "2",
            FlowStatus::Finished => "3",
            FlowStatus::Failed => "5",
        }
    }
}

/// A fresh `outTrackId` (ours; a new card needs a new one) or `guid`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}

/// Checks card parameters against spec §6 (key ≤ 100 B, value ≤ 1 KB).
fn param_map(params: &[(&str, &str)]) -> Result<Map<String, Value>, Error> {
    let mut map = Map::new();
    for (k, v) in params {
        if k.is_empty() || k.len() > CARD_PARAM_KEY_MAX_BYTES {
            return Err(Error::Invalid(
                "a card parameter key is empty or too long".into(),
            ));
        }
        if v.len() > CARD_PARAM_VALUE_MAX_BYTES {
            return Err(Error::TooLarge {
                what: "a card parameter value",
                limit: CARD_PARAM_VALUE_MAX_BYTES as u64,
            });
        }
        map.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(map)
}

/// `success:false` anywhere, or a refused delivery, as [`Error::NotSent`].
fn check_success(call: Call, v: &Value) -> Result<(), Error> {
    let refused = |detail: &str| Error::NotSent {
        call,
        reason: NotSent::CardRefused {
            detail: detail.chars().take(200).collect(),
        },
    };
    if v.get("success").and_then(Value::as_bool) == Some(false) {
        return Err(refused("success:false"));
    }
    let results = v
        .pointer("/result/deliverResults")
        .and_then(Value::as_array);
    for r in results.into_iter().flatten() {
        if r.get("success").and_then(Value::as_bool) != Some(true) {
            let msg = r
                .get("errorMsg")
                .and_then(Value::as_str)
                .unwrap_or("not delivered");
            return Err(refused(msg));
        }
    }
    Ok(())
}

impl Client {
    /// Creates and delivers a card (`callbackType: STREAM`, so its buttons come back on this
    /// app's Stream connection).
    pub async fn create_card(
        &self,
        template_id: &str,
        out_track_id: &str,
        space: &CardSpace,
        params: &[(&str, &str)],
    ) -> Result<(), Error> {
        let mut body = json!({
            "cardTemplateId": template_id,
            "outTrackId": out_track_id,
            "cardData": {"cardParamMap": param_map(params)?},
            "callbackType": "STREAM",
            "userIdType": 1,
        });
        let robot = self.robot_code();
        let extra = match space {
            CardSpace::Direct { staff_id } => json!({
                "openSpaceId": format!("dtv1.card//IM_ROBOT.{staff_id}"),
                "imRobotOpenSpaceModel": {"supportForward": true},
                "imRobotOpenDeliverModel": {"spaceType": "IM_ROBOT", "robotCode": robot},
            }),
            CardSpace::Group {
                open_conversation_id,
            } => json!({
                "openSpaceId": format!("dtv1.card//IM_GROUP.{open_conversation_id}"),
                "imGroupOpenSpaceModel": {"supportForward": true},
                "imGroupOpenDeliverModel": {"robotCode": robot},
            }),
        };
        if let (Some(b), Value::Object(e)) = (body.as_object_mut(), extra) {
            b.extend(e);
        }
        let v = self
            .api(Call::CardCreate, Method::POST, CREATE_PATH, &body)
            .await?;
        check_success(Call::CardCreate, &v)
    }

    /// Streams the full text into `key` (`isFull`, a fresh `guid` per call, spec §4.6).
    pub async fn stream_card(
        &self,
        out_track_id: &str,
        key: &str,
        content: &str,
        finalize: bool,
        failed: bool,
    ) -> Result<(), Error> {
        let body = json!({
            "outTrackId": out_track_id,
            "guid": new_id(""),
            "key": key,
            "content": content,
            "isFull": true,
            "isFinalize": finalize,
            "isError": failed,
        });
        let v = self
            .api(Call::CardStream, Method::PUT, STREAM_PATH, &body)
            .await?;
        check_success(Call::CardStream, &v)
    }

    /// Updates card parameters by key (e.g. `flowStatus`).
    pub async fn update_card(
        &self,
        out_track_id: &str,
        params: &[(&str, &str)],
    ) -> Result<(), Error> {
        let body = json!({
            "outTrackId": out_track_id,
            "cardData": {"cardParamMap": param_map(params)?},
            "cardUpdateOptions": {"updateCardDataByKey": true},
        });
        let v = self
            .api(Call::CardUpdate, Method::PUT, INSTANCE_PATH, &body)
            .await?;
        check_success(Call::CardUpdate, &v)
    }
}

/// One answer written into an AI card. Refuses to stream after it is finished (streaming
/// into a finished card reopens it, spec §4.6).
#[derive(Debug)]
pub struct AnswerCard {
    client: Client,
    content_key: String,
    out_track_id: String,
    finished: bool,
}

impl AnswerCard {
    /// Creates and delivers an empty card in "processing" state.
    pub async fn start(
        client: &Client,
        template: &CardTemplate,
        space: &CardSpace,
    ) -> Result<Self, Error> {
        let out_track_id = new_id("scv-");
        let params = [
            (template.content_key.as_str(), ""),
            ("flowStatus", FlowStatus::Processing.as_str()),
        ];
        client
            .create_card(&template.template_id, &out_track_id, space, &params)
            .await?;
        Ok(Self::resume(client, template, out_track_id))
    }

    /// A card created earlier (its id from the journal), to finish after a restart.
    pub fn resume(client: &Client, template: &CardTemplate, out_track_id: String) -> Self {
        Self {
            client: client.clone(),
            content_key: template.content_key.clone(),
            out_track_id,
            finished: false,
        }
    }

    /// The card's `outTrackId`: journal it while the card is open.
    pub fn out_track_id(&self) -> &str {
        &self.out_track_id
    }

    /// True when `full_text` is past what one card should hold ([`CARD_CONTENT_MAX_CHARS`]):
    /// finish this card and go on in a new one.
    pub fn is_full(full_text: &str) -> bool {
        full_text.chars().count() > CARD_CONTENT_MAX_CHARS
    }

    /// Shows `full_text` (the whole answer so far).
    pub async fn update(&self, full_text: &str) -> Result<(), Error> {
        self.open()?;
        self.client
            .stream_card(
                &self.out_track_id,
                &self.content_key,
                full_text,
                false,
                false,
            )
            .await
    }

    /// Shows the final text and marks the card finished (or failed).
    pub async fn finish(&mut self, full_text: &str, failed: bool) -> Result<(), Error> {
        self.open()?;
        self.client
            .stream_card(
                &self.out_track_id,
                &self.content_key,
                full_text,
                true,
                failed,
            )
            .await?;
        let status = if failed {
            FlowStatus::Failed
        } else {
            FlowStatus::Finished
        };
        self.client
            .update_card(&self.out_track_id, &[("flowStatus", status.as_str())])
            .await?;
        self.finished = true;
        Ok(())
    }

    fn open(&self) -> Result<(), Error> {
        if self.finished {
            return Err(Error::Invalid(
                "the card is finished; start a new one".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_results_are_checked() {
        assert!(
            check_success(
                Call::CardCreate,
                &json!({"success": true, "result": {"deliverResults": [{"success": true}]}})
            )
            .is_ok()
        );
        let e = check_success(
            Call::CardCreate,
            &json!({"success": true, "result": {"deliverResults": [{"success": false, "errorMsg": "robot not in space"}]}}),
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::NotSent {
                    reason: NotSent::CardRefused { .. },
                    ..
                }
            ),
            "{e}"
        );
        assert!(check_success(Call::CardStream, &json!({"success": false})).is_err());
        assert!(param_map(&[("k", &"x".repeat(1025))]).is_err());
        assert!(param_map(&[(&"k".repeat(101), "v")]).is_err());
        assert!(!AnswerCard::is_full(&"字".repeat(3000)));
        assert!(AnswerCard::is_full(&"字".repeat(3001)));
    }
}
