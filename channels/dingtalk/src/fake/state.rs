//! The fake's state behind one lock, the dispatch of pushes to connections, and the reply
//! helpers its routes share.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rand::seq::IndexedRandom;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::FakeConfig;
use super::records::*;
use crate::call::Call;

/// What a connection's writer is told.
#[derive(Debug)]
pub(crate) enum ConnCmd {
    /// Send this text frame (a push).
    Text(String),
    /// Send a SYSTEM `disconnect`, stop delivering, close after the configured delay.
    Disconnect,
    /// Go silent but keep the socket (and WebSocket pongs) alive.
    Zombie,
    /// Stop reading and writing altogether, socket kept (no pongs: a hung peer).
    Freeze,
    /// Close with a close frame.
    Close,
    /// Drop the TCP connection without a close frame.
    Reset,
    /// Send one text frame even when it is not a valid push (hostile input tests).
    Raw(String),
}

pub(crate) struct Conn {
    pub tx: mpsc::UnboundedSender<ConnCmd>,
    pub topics: Vec<String>,
    pub retiring: bool,
    pub zombie: bool,
}

impl Conn {
    /// Whether the platform would dispatch a push to it.
    pub fn takes_pushes(&self) -> bool {
        !self.retiring && !self.zombie
    }
}

/// A push waiting for its ACK.
pub(crate) struct Inflight {
    pub topic: String,
    pub key: String,
    pub data: String,
    pub sent_at: Instant,
    pub repushed: bool,
}

/// Everything the fake holds.
#[derive(Default)]
pub(crate) struct State {
    pub seq: u64,
    pub tokens: HashMap<String, Instant>,
    pub current_token: Option<(String, Instant)>,
    pub token_requests: usize,
    pub opens: Vec<OpenRecord>,
    pub tickets: HashMap<String, (Instant, bool, Vec<String>)>,
    pub refused_handshakes: usize,
    pub conns: BTreeMap<u64, Conn>,
    pub connections: Vec<ConnectionRecord>,
    pub pushes: Vec<PushRecord>,
    pub inflight: HashMap<String, Inflight>,
    pub acks: Vec<AckRecord>,
    pub pings: HashMap<String, (u64, String)>,
    pub ping_replies: usize,
    pub bad_ping_replies: usize,
    pub protocol_errors: usize,
    pub sent: Vec<SentRecord>,
    pub rate: HashMap<Call, VecDeque<Instant>>,
    pub faults: HashMap<Call, VecDeque<Fault>>,
    pub webhooks: HashMap<String, Instant>,
    pub cards: BTreeMap<String, CardRecord>,
    pub card_guids: HashSet<String>,
    pub quota_left: Option<usize>,
    pub media: HashMap<String, (Vec<u8>, String)>,
    pub download_urls: HashMap<String, (String, Instant)>,
    pub uploads: Vec<UploadRecord>,
    pub emotions: Vec<EmotionRecord>,
    pub calls: HashMap<Call, usize>,
    /// Every pushed payload by key (`msgId` / `outTrackId`), for re-pushes: (topic, data).
    pub payloads: HashMap<String, (String, String)>,
}

impl State {
    pub fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Sends a push to one random live connection subscribed to `topic` (spec §1.8: several
    /// connections get random dispatch); records it, lost when none takes it.
    pub fn dispatch(&mut self, topic: &str, key: &str, data: String, repush: bool) -> PushRecord {
        let n = self.next();
        let message_id = format!("{:08x}-push-{n}", rand::random::<u32>());
        let live: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.takes_pushes() && c.topics.iter().any(|t| t == topic))
            .map(|(id, _)| *id)
            .collect();
        let target = live.choose(&mut rand::rng()).copied();
        self.payloads
            .insert(key.to_string(), (topic.to_string(), data.clone()));
        if let Some(id) = target {
            let frame = push_frame(&message_id, topic, id, &data);
            if let Some(c) = self.conns.get(&id) {
                let _ = c.tx.send(ConnCmd::Text(frame));
            }
            self.inflight.insert(
                message_id.clone(),
                Inflight {
                    topic: topic.to_string(),
                    key: key.to_string(),
                    data,
                    sent_at: Instant::now(),
                    repushed: false,
                },
            );
        }
        let record = PushRecord {
            message_id,
            topic: topic.to_string(),
            key: key.to_string(),
            connection: target,
            repush,
        };
        self.pushes.push(record.clone());
        record
    }

    /// Counts a call that reached its route.
    pub fn count(&mut self, call: Call) {
        *self.calls.entry(call).or_default() += 1;
    }

    /// Takes the next fault set for `call`, if any.
    pub fn fault(&mut self, call: Call) -> Option<Fault> {
        self.faults.get_mut(&call).and_then(VecDeque::pop_front)
    }

    /// True when `call` is over `qps` calls in the last second (the call is then not counted).
    pub fn over_qps(&mut self, call: Call, qps: u32) -> bool {
        let now = Instant::now();
        let window = self.rate.entry(call).or_default();
        while window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            window.pop_front();
        }
        if window.len() >= qps as usize {
            return true;
        }
        window.push_back(now);
        false
    }
}

/// A downstream push frame: `data` a string, `time` a string, plus an unknown header.
pub(crate) fn push_frame(message_id: &str, topic: &str, conn: u64, data: &str) -> String {
    json!({
        "specVersion": "1.0",
        "type": "CALLBACK",
        "headers": {
            "appId": "fake-app",
            "connectionId": format!("conn-{conn}"),
            "contentType": "application/json",
            "messageId": message_id,
            "time": now_ms().to_string(),
            "topic": topic,
            "x-fake-unknown": "kept",
        },
        "data": data,
    })
    .to_string()
}

/// A SYSTEM frame.
pub(crate) fn system_frame(message_id: &str, topic: &str, data: &Value) -> String {
    json!({
        "specVersion": "1.0",
        "type": "SYSTEM",
        "headers": {"contentType": "application/json", "messageId": message_id,
                    "time": now_ms().to_string(), "topic": topic},
        "data": data.to_string(),
    })
    .to_string()
}

/// Wall-clock ms (the platform's unit in payloads).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The fake's shared half: settings, state, and a change signal for `wait_until`.
pub(crate) struct Shared {
    pub config: FakeConfig,
    pub base_url: String,
    state: Mutex<State>,
    pub changed: Notify,
}

impl Shared {
    pub fn new(config: FakeConfig, base_url: String) -> Self {
        Self {
            config,
            base_url,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        }
    }

    /// Locks the state. A guard that was written through wakes `wait_until` on unlock; a
    /// read-only one does not (else a waiter's own check would wake it, for ever).
    pub fn lock(&self) -> Guard<'_> {
        Guard {
            inner: self.state.lock().unwrap_or_else(|p| p.into_inner()),
            changed: &self.changed,
            wrote: false,
        }
    }
}

/// The state, locked; wakes `wait_until` when dropped after a write.
pub(crate) struct Guard<'a> {
    inner: MutexGuard<'a, State>,
    changed: &'a Notify,
    wrote: bool,
}

impl std::ops::Deref for Guard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.inner
    }
}

impl std::ops::DerefMut for Guard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.wrote = true;
        &mut self.inner
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.wrote {
            self.changed.notify_waiters();
        }
    }
}

/// A new-API refusal a check returns: status, code, message (small, unlike a `Response`).
pub(crate) struct Refusal(pub u16, pub &'static str, pub &'static str);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        api_error(self.0, self.1, self.2)
    }
}

/// HTTP 200 with a JSON body.
pub(crate) fn ok(body: Value) -> Response {
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// A new-API error: `{code, message, requestid}` with `status`.
pub(crate) fn api_error(status: u16, code: &str, message: &str) -> Response {
    api_error_scopes(status, code, message, &[])
}

/// A new-API error naming required scopes.
pub(crate) fn api_error_scopes(
    status: u16,
    code: &str,
    message: &str,
    scopes: &[String],
) -> Response {
    let mut body = json!({"code": code, "message": message, "requestid": "fake-req"});
    if !scopes.is_empty() {
        body["accessdenieddetail"] = json!({"requiredScopes": scopes});
    }
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(body)).into_response()
}

/// An old-API / webhook refusal: 200 with `errcode`.
pub(crate) fn errcode(code: i64, msg: &str) -> Response {
    ok(json!({"errcode": code, "errmsg": msg}))
}

/// The response a generic fault makes, or `None` for faults the route handles itself.
pub(crate) async fn fault_response(fault: &Fault) -> Option<Response> {
    match fault {
        Fault::Status(s) => Some(
            (
                StatusCode::from_u16(*s).unwrap_or(StatusCode::BAD_GATEWAY),
                "<html>gateway error</html>",
            )
                .into_response(),
        ),
        Fault::Api {
            status,
            code,
            scopes,
        } => Some(api_error_scopes(
            *status,
            code,
            "refused by the test",
            scopes,
        )),
        Fault::Errcode(c) => Some(errcode(*c, "refused by the test")),
        Fault::Hang => {
            std::future::pending::<()>().await;
            None
        }
        Fault::FlowControlled | Fault::NotDelivered => None,
    }
}
