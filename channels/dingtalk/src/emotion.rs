//! The typing reaction (spec §4.8, optional): a reaction such as "🤔Thinking" put on the
//! user's message while the answer is written, and recalled after. The body is observed, not
//! documented; failures are for the caller to ignore (it is decoration).

use reqwest::Method;
use serde_json::{Value, json};

use crate::call::Call;
use crate::client::Client;
use crate::error::{Error, NotSent};

/// `POST` path putting a reaction.
pub const REPLY_PATH: &str = "/v1.0/robot/emotion/reply";
/// `POST` path removing it.
pub const RECALL_PATH: &str = "/v1.0/robot/emotion/recall";
/// The reaction the bridge shows while it works.
pub const THINKING: &str = "🤔Thinking";

impl Client {
    /// Puts the reaction `name` on message `msg_id` in conversation `conversation_id`.
    pub async fn react(
        &self,
        msg_id: &str,
        conversation_id: &str,
        name: &str,
    ) -> Result<(), Error> {
        self.emotion(REPLY_PATH, msg_id, conversation_id, name)
            .await
    }

    /// Removes the reaction `name` put by [`Client::react`].
    pub async fn unreact(
        &self,
        msg_id: &str,
        conversation_id: &str,
        name: &str,
    ) -> Result<(), Error> {
        self.emotion(RECALL_PATH, msg_id, conversation_id, name)
            .await
    }

    async fn emotion(
        &self,
        path: &str,
        msg_id: &str,
        conversation_id: &str,
        name: &str,
    ) -> Result<(), Error> {
        let body = json!({
            "robotCode": self.robot_code(),
            "openMsgId": msg_id,
            "openConversationId": conversation_id,
            "emotionType": 2,
            "emotionName": name,
            "textEmotion": {"emotionId": "2659900", "emotionName": name, "text": name, "backgroundId": "im_bg_1"},
        });
        let v = self.api(Call::Emotion, Method::POST, path, &body).await?;
        if v.get("success").and_then(Value::as_bool) == Some(false) {
            return Err(Error::NotSent {
                call: Call::Emotion,
                reason: NotSent::Refused {
                    detail: "success:false".into(),
                },
            });
        }
        Ok(())
    }
}
