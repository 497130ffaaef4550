//! A fake WeCom AI bot platform for tests (feature `fake`), served on `127.0.0.1:0`: the long
//! connection at `ws://127.0.0.1:PORT` (no path, like the real one) and a media host.
//!
//! It refuses what the platform refuses (spec §7): commands before subscribe (`846609`), wrong
//! credentials (`93019`/`853000`, then a close), a second subscribe (the old socket gets
//! `disconnected_event` and is closed), replies on the wrong or an expired handle
//! (`846605`/`846604`/`846608`), stream frames over 20480 bytes or after finish, sends to an
//! unknown chat (`93006`) or of a bad type (`40008`), sends over the rate (`45009`), bad
//! cards, bad uploads, too many chunks at once; media URLs expire (404). Knobs inject codes,
//! silence pings, delay or withhold answers, close or drop sockets. Times are `tokio::time`,
//! so tests run it on a paused clock. Everything sent is recorded.

mod answer;
mod host;
mod push;
mod rules;
mod send;
mod state;
mod ws;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub use push::Pushed;
pub use state::{Bubble, Fault, FrameRecord, Sent};
use state::{Ctl, Shared};

use crate::frame::cmd;
use crate::secret::Credentials;

/// The fake's settings; the defaults mirror the platform.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The accepted bot id (exact case).
    pub bot_id: String,
    /// The accepted secret.
    pub secret: String,
    /// Code for a wrong bot id (the real one is unconfirmed).
    pub bad_id_code: i64,
    /// Code for a wrong secret (the real one is unconfirmed).
    pub bad_secret_code: i64,
    /// Stream (and reply) window from the callback.
    pub stream_window: Duration,
    /// Welcome and card-update window from the event.
    pub event_window: Duration,
    /// Sends allowed per chat per `send_window`.
    pub sends_per_window: usize,
    /// The send-rate window.
    pub send_window: Duration,
    /// How long a pushed media URL works.
    pub media_url_ttl: Duration,
    /// Strip the `=` padding from `aeskey`s.
    pub strip_key_padding: bool,
    /// Chat ids known before any push (userids and group chatids).
    pub known_chats: Vec<String>,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            bot_id: "aibFakeBot01".into(),
            secret: "fake-bot-secret".into(),
            bad_id_code: crate::classify::INVALID_BOT_ID,
            bad_secret_code: crate::classify::BAD_SECRET,
            stream_window: crate::limits::STREAM_WINDOW,
            event_window: crate::limits::EVENT_REPLY_WINDOW,
            sends_per_window: crate::limits::SEND_PER_MINUTE as usize,
            send_window: Duration::from_secs(60),
            media_url_ttl: crate::limits::MEDIA_URL_VALIDITY,
            strip_key_padding: false,
            known_chats: Vec::new(),
        }
    }
}

/// Seconds since the epoch, for `create_time`.
pub(crate) fn epoch_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One part of a pushed `mixed` message.
#[derive(Debug, Clone)]
pub enum MixedPart {
    /// Text.
    Text(String),
    /// A picture (hosted encrypted).
    Image(Vec<u8>),
}

/// A running fake; dropping it stops the server.
#[derive(Debug)]
pub struct FakeWeCom {
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Drop for FakeWeCom {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeWeCom {
    /// Binds `127.0.0.1:0` and serves.
    pub async fn start(config: FakeConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared::new(config, base_url));
        let app = Router::new()
            .route("/", get(ws::upgrade))
            .route("/media/{id}", get(host::serve))
            .with_state(shared.clone());
        // Without TCP_NODELAY a small frame after another waits for a delayed ACK (40 ms),
        // which no real server adds.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "fake wecom server stopped");
            }
        });
        Ok(Self { shared, server })
    }

    /// `ws://127.0.0.1:PORT`, the long-connection URL.
    pub fn ws_url(&self) -> String {
        self.shared.base_url.replacen("http://", "ws://", 1)
    }

    /// The credentials the fake accepts.
    pub fn credentials(&self) -> Credentials {
        Credentials::new(&self.shared.config.bot_id, &self.shared.config.secret)
    }

    /// The settings in force.
    pub fn config(&self) -> &FakeConfig {
        &self.shared.config
    }

    fn push_body(&self, command: &str, body: Value, req_id: Option<String>) -> Pushed {
        let pushed = {
            let mut st = self.shared.lock();
            push::push(&mut st, command, body, req_id)
        };
        self.shared.touch();
        pushed
    }

    fn message(
        &self,
        userid: &str,
        group: Option<&str>,
        msgtype: &str,
        fill: impl FnOnce(&Shared, &mut state::State, &mut Value),
    ) -> Pushed {
        let body = {
            let mut st = self.shared.lock();
            let mut b = push::base(&mut st, &self.shared.config.bot_id, userid, group, msgtype);
            fill(&self.shared, &mut st, &mut b);
            b
        };
        self.push_body(cmd::MSG_CALLBACK, body, None)
    }

    /// A DM text from `userid`.
    pub fn push_text(&self, userid: &str, text: &str) -> Pushed {
        self.message(userid, None, "text", |_, _, b| {
            b["text"] = json!({"content": text})
        })
    }

    /// A group text (pass the mention as typed, e.g. `"@Bot hello"`).
    pub fn push_group_text(&self, chatid: &str, userid: &str, text: &str) -> Pushed {
        self.message(userid, Some(chatid), "text", |_, _, b| {
            b["text"] = json!({"content": text})
        })
    }

    /// A DM text quoting an earlier text.
    pub fn push_quote(&self, userid: &str, text: &str, quoted: &str) -> Pushed {
        self.message(userid, None, "text", |_, _, b| {
            b["text"] = json!({"content": text});
            b["quote"] = json!({"msgtype": "text", "text": {"content": quoted}});
        })
    }

    /// A DM picture, hosted encrypted.
    pub fn push_image(&self, userid: &str, bytes: &[u8]) -> Pushed {
        self.message(userid, None, "image", |sh, st, b| {
            b["image"] = push::host(sh, st, bytes, None)
        })
    }

    /// A DM file; the name travels only in the download's `Content-Disposition`.
    pub fn push_file(&self, userid: &str, name: &str, bytes: &[u8]) -> Pushed {
        self.message(userid, None, "file", |sh, st, b| {
            b["file"] = push::host(sh, st, bytes, Some(name))
        })
    }

    /// A DM video.
    pub fn push_video(&self, userid: &str, bytes: &[u8]) -> Pushed {
        self.message(userid, None, "video", |sh, st, b| {
            b["video"] = push::host(sh, st, bytes, None)
        })
    }

    /// A DM voice message: WeCom's transcript only.
    pub fn push_voice(&self, userid: &str, transcript: &str) -> Pushed {
        self.message(userid, None, "voice", |_, _, b| {
            b["voice"] = json!({"content": transcript})
        })
    }

    /// A `mixed` message (DM, or a group when `group` is given).
    pub fn push_mixed(&self, userid: &str, group: Option<&str>, parts: &[MixedPart]) -> Pushed {
        self.message(userid, group, "mixed", |sh, st, b| {
            let items: Vec<Value> = parts
                .iter()
                .map(|p| match p {
                    MixedPart::Text(t) => json!({"msgtype": "text", "text": {"content": t}}),
                    MixedPart::Image(bytes) => {
                        json!({"msgtype": "image", "image": push::host(sh, st, bytes, None)})
                    }
                })
                .collect();
            b["mixed"] = json!({"msg_item": items});
        })
    }

    /// A message of any `msgtype` with `payload` under that key (e.g. `appmsg`).
    pub fn push_other(&self, userid: &str, msgtype: &str, payload: Value) -> Pushed {
        self.message(userid, None, msgtype, |_, _, b| b[msgtype] = payload)
    }

    /// An event from `userid`; `payload` goes under the event type's own key.
    pub fn push_event(&self, userid: &str, eventtype: &str, payload: Option<Value>) -> Pushed {
        let body = {
            let mut st = self.shared.lock();
            let mut b = push::base(&mut st, &self.shared.config.bot_id, userid, None, "event");
            b["event"] = json!({"eventtype": eventtype});
            if let Some(p) = payload {
                b["event"][eventtype] = p;
            }
            b
        };
        self.push_body(cmd::EVENT_CALLBACK, body, None)
    }

    /// `userid` presses the button `key` of the card `task_id` (a nested `template_card_event`).
    pub fn click(&self, userid: &str, task_id: &str, key: &str) -> Pushed {
        let payload =
            json!({"card_type": "button_interaction", "event_key": key, "task_id": task_id});
        self.push_event(userid, "template_card_event", Some(payload))
    }

    /// Pushes the body of an earlier push again (same `msgid`), with its old `req_id` or a
    /// new one (§7.8).
    pub fn repush(&self, earlier: &Pushed, same_req_id: bool) -> Pushed {
        let found = self
            .shared
            .lock()
            .pushes
            .iter()
            .rev()
            .find(|f| f.pointer("/body/msgid").and_then(Value::as_str) == Some(&earlier.msgid))
            .cloned();
        let Some(f) = found else {
            return Pushed {
                delivered: false,
                ..earlier.clone()
            };
        };
        let command = f["cmd"].as_str().unwrap_or(cmd::MSG_CALLBACK).to_owned();
        self.push_body(
            &command,
            f["body"].clone(),
            same_req_id.then(|| earlier.req_id.clone()),
        )
    }

    /// Sends `text` as a raw frame to the subscribed socket (junk, raw control bytes).
    pub fn push_raw(&self, text: &str) -> bool {
        let st = self.shared.lock();
        st.current
            .and_then(|c| st.conns.get(&c))
            .is_some_and(|c| c.tx.send(Ctl::Text(text.to_owned())).is_ok())
    }
}

mod knobs;
