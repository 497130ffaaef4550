//! Sending (spec §4.1–4.3): the reply webhook while it lives, else the robot API one-to-one
//! (`oToMessages/batchSend`) or to a group (`groupMessages/send`). HTTP 200 is not success
//! until the recipient lists say so.

use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::Method;
use serde_json::{Value, json};

use crate::call::Call;
use crate::client::Client;
use crate::error::{Error, NotSent};
use crate::http;
use crate::limits::{BATCH_SEND_MAX_USERS, WEBHOOK_MARGIN};
use crate::message::SessionWebhook;

/// Path of one-to-one sends.
pub const BATCH_SEND_PATH: &str = "/v1.0/robot/oToMessages/batchSend";
/// Path of group sends.
pub const GROUP_SEND_PATH: &str = "/v1.0/robot/groupMessages/send";

/// A message to send, one `msgKey` each (spec §4.3). The daemon's renderer makes these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// `sampleText`.
    Text {
        /// The text.
        content: String,
    },
    /// `sampleMarkdown` (DingTalk's subset, spec §4.4; see [`crate::markdown`]).
    Markdown {
        /// Notification preview (about 15 characters show).
        title: String,
        /// The markdown.
        text: String,
    },
    /// `sampleImageMsg`: a `media_id` from [`Client::upload`] or an https URL.
    Image {
        /// `photoURL`.
        photo_url: String,
    },
    /// `sampleFile`.
    File {
        /// `media_id` from [`Client::upload`].
        media_id: String,
        /// Shown file name.
        file_name: String,
        /// Extension, e.g. `pdf`.
        file_type: String,
    },
    /// `sampleActionCard2`: markdown with two URL buttons side by side (e.g. the `dtmd://`
    /// links of [`crate::confirm::yes_no_buttons`]; URL-only, spec §4.3).
    ActionCard2 {
        /// Notification preview.
        title: String,
        /// The markdown above the buttons.
        text: String,
        /// (label, URL) of each button.
        buttons: [(String, String); 2],
    },
    /// `sampleAudio`.
    Audio {
        /// `media_id` of a voice upload.
        media_id: String,
        /// Duration in ms.
        duration_ms: u64,
    },
}

impl Outgoing {
    /// The `msgKey`.
    pub fn msg_key(&self) -> &'static str {
        match self {
            Outgoing::Text { .. } => "sampleText",
            Outgoing::Markdown { .. } => "sampleMarkdown",
            Outgoing::Image { .. } => "sampleImageMsg",
            Outgoing::File { .. } => "sampleFile",
            Outgoing::ActionCard2 { .. } => "sampleActionCard2",
            Outgoing::Audio { .. } => "sampleAudio",
        }
    }

    /// The `msgParam`: a JSON *string*.
    pub fn msg_param(&self) -> String {
        match self {
            Outgoing::Text { content } => json!({"content": content}),
            Outgoing::Markdown { title, text } => json!({"title": title, "text": text}),
            Outgoing::Image { photo_url } => json!({"photoURL": photo_url}),
            Outgoing::File {
                media_id,
                file_name,
                file_type,
            } => json!({"mediaId": media_id, "fileName": file_name, "fileType": file_type}),
            Outgoing::Audio {
                media_id,
                duration_ms,
            } => json!({"mediaId": media_id, "duration": duration_ms.to_string()}),
            Outgoing::ActionCard2 {
                title,
                text,
                buttons: [(t1, u1), (t2, u2)],
            } => json!({"title": title, "text": text, "actionTitle1": t1, "actionURL1": u1,
                        "actionTitle2": t2, "actionURL2": u2}),
        }
        .to_string()
    }

    /// The session-webhook body; only text and markdown go that way (spec §4.2).
    fn webhook_body(&self) -> Option<Value> {
        match self {
            Outgoing::Text { content } => {
                Some(json!({"msgtype": "text", "text": {"content": content}}))
            }
            Outgoing::Markdown { title, text } => {
                Some(json!({"msgtype": "markdown", "markdown": {"title": title, "text": text}}))
            }
            _ => None,
        }
    }
}

/// A message the platform took. `process_query_key` is the outbound id (recall, logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// `processQueryKey`; empty for webhook replies (the webhook returns none).
    pub process_query_key: String,
}

/// The recipient lists of a batch send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// `processQueryKey`.
    pub process_query_key: String,
    /// Never deliverable.
    pub invalid: Vec<String>,
    /// Throttled: retry later.
    pub flow_controlled: Vec<String>,
    /// Filtered (e.g. outside the app's visibility).
    pub filtered: Vec<String>,
}

impl Client {
    /// Sends to one person by staff id; a 200 that leaves them out is an error.
    pub async fn send_to_user(&self, staff_id: &str, msg: &Outgoing) -> Result<Sent, Error> {
        let out = self.send_to_users(&[staff_id.to_string()], msg).await?;
        let reason = if out.invalid.iter().any(|s| s == staff_id) {
            Some(NotSent::InvalidRecipient)
        } else if out.flow_controlled.iter().any(|s| s == staff_id) {
            Some(NotSent::FlowControlled)
        } else if out.filtered.iter().any(|s| s == staff_id) {
            Some(NotSent::Filtered)
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::NotSent {
                call: Call::BatchSend,
                reason,
            }),
            None => Ok(Sent {
                process_query_key: out.process_query_key,
            }),
        }
    }

    /// Sends to up to [`BATCH_SEND_MAX_USERS`] people; the caller reads the lists.
    pub async fn send_to_users(
        &self,
        staff_ids: &[String],
        msg: &Outgoing,
    ) -> Result<BatchOutcome, Error> {
        if staff_ids.is_empty() || staff_ids.len() > BATCH_SEND_MAX_USERS {
            return Err(Error::Invalid(format!(
                "a batch send takes 1 to {BATCH_SEND_MAX_USERS} recipients, not {}",
                staff_ids.len()
            )));
        }
        let body = json!({
            "robotCode": self.robot_code(),
            "userIds": staff_ids,
            "msgKey": msg.msg_key(),
            "msgParam": msg.msg_param(),
        });
        let v = self
            .api(Call::BatchSend, Method::POST, BATCH_SEND_PATH, &body)
            .await?;
        let list = |k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(BatchOutcome {
            process_query_key: http::field(Call::BatchSend, &v, "processQueryKey")?.to_string(),
            invalid: list("invalidStaffIdList"),
            flow_controlled: list("flowControlledStaffIdList"),
            filtered: list("filteredStaffIdList"),
        })
    }

    /// Sends to a group the robot is in (`openConversationId` = the message's conversation id).
    pub async fn send_to_group(
        &self,
        open_conversation_id: &str,
        msg: &Outgoing,
    ) -> Result<Sent, Error> {
        let body = json!({
            "robotCode": self.robot_code(),
            "openConversationId": open_conversation_id,
            "msgKey": msg.msg_key(),
            "msgParam": msg.msg_param(),
        });
        let v = self
            .api(Call::GroupSend, Method::POST, GROUP_SEND_PATH, &body)
            .await?;
        Ok(Sent {
            process_query_key: http::field(Call::GroupSend, &v, "processQueryKey")?.to_string(),
        })
    }

    /// Replies through a message's session webhook. Refused locally (as
    /// [`Error::WebhookExpired`]) within [`WEBHOOK_MARGIN`] of its expiry, and for a URL whose
    /// host is not one of the configured API bases (a forged push must not make us post
    /// anywhere). On `WebhookExpired`, send with [`Client::send_to_user`] instead.
    pub async fn reply_by_webhook(
        &self,
        hook: &SessionWebhook,
        msg: &Outgoing,
    ) -> Result<Sent, Error> {
        let body = msg.webhook_body().ok_or_else(|| {
            Error::Invalid("a session webhook takes text and markdown only".into())
        })?;
        if !webhook_usable(hook, now_ms()) {
            return Err(Error::WebhookExpired);
        }
        self.check_webhook_host(hook)?;
        let call = Call::SessionWebhook;
        let req = self
            .inner
            .http
            .post(hook.url.expose())
            .header("Accept", "application/json")
            .json(&body);
        match http::old_api(call, http::send(call, req, self.options().timeout).await?) {
            Err(Error::Errcode {
                errcode: 300001, ..
            }) => Err(Error::WebhookExpired),
            Err(e) => Err(e),
            Ok(_) => Ok(Sent {
                process_query_key: String::new(),
            }),
        }
    }

    fn check_webhook_host(&self, hook: &SessionWebhook) -> Result<(), Error> {
        let origin = |s: &str| url::Url::parse(s).ok().map(|u| u.origin());
        let hook_origin = origin(hook.url.expose());
        let o = self.options();
        let known = [o.api_base.as_str(), o.oapi_base.as_str()]
            .into_iter()
            .any(|b| hook_origin.is_some() && origin(b) == hook_origin);
        if known {
            Ok(())
        } else {
            Err(Error::Invalid(
                "the session webhook is not on a configured DingTalk host".into(),
            ))
        }
    }
}

/// True while the webhook has more than [`WEBHOOK_MARGIN`] left at `now_ms`.
pub fn webhook_usable(hook: &SessionWebhook, now_ms: i64) -> bool {
    hook.expires_at_ms.saturating_sub(now_ms) > WEBHOOK_MARGIN.as_millis() as i64
}

/// Now, in ms since the epoch (the platform's unit for expiry times).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn msg_param_is_a_json_string_per_key() {
        let m = Outgoing::Markdown {
            title: "t".into(),
            text: "**x** \"q\"".into(),
        };
        assert_eq!(m.msg_key(), "sampleMarkdown");
        let p: Value = serde_json::from_str(&m.msg_param()).unwrap();
        assert_eq!(p["text"], "**x** \"q\"");
        let a = Outgoing::Audio {
            media_id: "@m".into(),
            duration_ms: 1500,
        };
        assert_eq!(
            serde_json::from_str::<Value>(&a.msg_param()).unwrap()["duration"],
            "1500"
        );
        assert!(a.webhook_body().is_none());
    }

    #[test]
    fn webhook_margin() {
        let hook = |at| SessionWebhook {
            url: Secret::new("x"),
            expires_at_ms: at,
        };
        assert!(webhook_usable(&hook(1_000_000 + 301_000), 1_000_000));
        assert!(!webhook_usable(&hook(1_000_000 + 299_000), 1_000_000));
        assert!(!webhook_usable(&hook(0), 1_000_000));
        assert!(!webhook_usable(&hook(i64::MIN), i64::MAX));
    }
}
