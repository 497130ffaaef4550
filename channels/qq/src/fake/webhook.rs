//! The fake's webhook side (§8.11): it signs frames with the AppSecret's Ed25519 key and POSTs
//! them to a callback URL the test serves, resending on non-200 (the real retry policy is
//! unconfirmed: the number of resends is the caller's knob), and sends the op 13 validation,
//! checking the answer's signature.

use std::time::Duration;

use serde_json::{Value, json};

use super::FakeQq;
use crate::secret::Secret;
use crate::webhook::WebhookKey;

/// One signed webhook request.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    /// `X-Signature-Timestamp`.
    pub timestamp: String,
    /// `X-Signature-Ed25519`.
    pub signature: String,
    /// The raw body.
    pub body: Vec<u8>,
}

impl FakeQq {
    fn webhook_key(&self) -> WebhookKey {
        WebhookKey::from_secret(&Secret::new(self.shared.lock().cfg.app_secret.clone()))
    }

    /// Signs `frame` at `timestamp` (unix seconds) with the bot's key.
    pub fn sign_frame(&self, frame: &Value, timestamp: u64) -> SignedRequest {
        let body = frame.to_string().into_bytes();
        let timestamp = timestamp.to_string();
        let signature = self
            .webhook_key()
            .sign_hex(&[timestamp.as_bytes(), &body].concat());
        SignedRequest {
            timestamp,
            signature,
            body,
        }
    }

    /// POSTs a signed request as the platform does; returns the HTTP status and body.
    pub async fn post_signed(
        &self,
        url: &str,
        req: &SignedRequest,
    ) -> Result<(u16, Vec<u8>), String> {
        let resp = reqwest::Client::new()
            .post(url)
            .header("User-Agent", "QQBot-Callback")
            .header("X-Bot-Appid", self.credentials().app_id)
            .header("X-Signature-Ed25519", &req.signature)
            .header("X-Signature-Timestamp", &req.timestamp)
            .header("Content-Type", "application/json")
            .timeout(Duration::from_secs(5))
            .body(req.body.clone())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(|e| e.to_string())?.to_vec();
        Ok((status, body))
    }

    /// Sends the op 13 validation and checks the callback signed `event_ts ‖ plain_token`.
    pub async fn validate_callback(&self, url: &str, now_unix: u64) -> Result<bool, String> {
        let (token, ts) = ("FakePlainToken0123", now_unix.to_string());
        let frame = json!({"op": 13, "d": {"plain_token": token, "event_ts": ts}});
        let (status, body) = self
            .post_signed(url, &self.sign_frame(&frame, now_unix))
            .await?;
        let v: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let want = self
            .webhook_key()
            .sign_hex(format!("{ts}{token}").as_bytes());
        Ok(status == 200 && v["plain_token"] == token && v["signature"] == want.as_str())
    }

    /// A C2C message from `user` as a webhook frame (op 0), its `msg_id` registered as a reply
    /// trigger as a gateway push's is; sign it with [`FakeQq::sign_frame`] and POST it.
    pub fn webhook_c2c(&self, user: &str, content: &str) -> (Value, super::Pushed) {
        let id = self.message_id();
        let d = json!({"id": id, "content": content, "timestamp": "2026-01-01T00:00:00+08:00",
            "author": {"id": user, "user_openid": user, "union_openid": ""}});
        let frame_id = {
            let mut st = self.shared.lock();
            st.add_trigger(&id, super::state::Scope::User(user.into()), false);
            format!("C2C_MESSAGE_CREATE:FAKE_WEBHOOK_{}", st.next())
        };
        let frame = json!({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": d, "id": frame_id});
        let pushed = super::Pushed {
            id,
            frame_id,
            kind: "C2C_MESSAGE_CREATE".into(),
        };
        (frame, pushed)
    }

    /// Delivers a dispatch to `url`, resending up to `resends` times while the answer is not
    /// 200. Returns the statuses seen, in order.
    pub async fn deliver_webhook(
        &self,
        url: &str,
        t: &str,
        d: Value,
        now_unix: u64,
        resends: u32,
    ) -> Result<Vec<u16>, String> {
        let frame_id = format!("{t}:FAKE_WEBHOOK_{}", self.shared.lock().next());
        let frame = json!({"op": 0, "t": t, "d": d, "id": frame_id});
        let req = self.sign_frame(&frame, now_unix);
        let mut statuses = Vec::new();
        for _ in 0..=resends {
            let (status, _) = self.post_signed(url, &req).await?;
            statuses.push(status);
            if status == 200 {
                break;
            }
        }
        Ok(statuses)
    }
}
