//! The fake's shared state and the event envelopes it pushes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::FakeConfig;
use super::records::*;
use crate::frame::{Frame, FrameType};

/// A command to one live WebSocket connection.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ConnCtl {
    /// Drain the push queue.
    Wake,
    /// Close the socket (server-initiated close).
    Close,
    /// Stop sending anything, pongs included.
    Stall,
}

/// An event waiting to be pushed (or re-pushed).
#[derive(Debug, Clone)]
pub(crate) struct PendingPush {
    pub event_id: String,
    pub event_type: String,
    pub event: Value,
    pub im_message_id: Option<String>,
    pub options: PushOptions,
    pub attempt: u32,
}

/// A pushed event waiting for its ACK.
#[derive(Debug, Clone)]
pub(crate) struct Inflight {
    pub push: PendingPush,
    /// The last fragment sent: the ACK must echo it.
    pub last_frame: Frame,
    pub deadline: Instant,
}

/// A stored chat message (pushed or sent).
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub chat_id: String,
    pub msg_type: String,
    pub content: Value,
    /// Sent by the app (only those can be patched), not pushed from a user.
    pub by_bot: bool,
    /// When it was created (the 14-day patch window counts from here).
    pub created: Instant,
    /// Extra age a test gave it ([`super::FakeFeishu::age_message`]).
    pub aged: std::time::Duration,
    /// Recalled or deleted: no patch, no reply.
    pub recalled: bool,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub counter: u64,
    pub token: Option<(String, Instant)>,
    pub valid_tokens: HashMap<String, Instant>,
    pub token_requests: usize,
    pub reject_all_tokens: bool,
    pub secret_refused: bool,
    pub endpoint_requests: usize,
    pub endpoint_failure: Option<EndpointFailure>,
    pub handshake_failure: Option<HandshakeFailure>,
    pub tickets: HashMap<String, bool>,
    pub refused_handshakes: usize,
    pub conns: HashMap<u64, mpsc::UnboundedSender<ConnCtl>>,
    pub connections: Vec<ConnectionRecord>,
    pub pings: usize,
    pub rejected_frames: usize,
    pub pong_config: Option<Value>,
    pub queue: VecDeque<PendingPush>,
    pub inflight: HashMap<String, Inflight>,
    pub pushes: Vec<PushRecord>,
    pub acks: Vec<AckRecord>,
    pub messages: HashMap<String, Stored>,
    pub sent: Vec<SentRecord>,
    pub patches: Vec<PatchRecord>,
    pub uuids: HashMap<String, (Value, Instant)>,
    pub rate: HashMap<String, VecDeque<Instant>>,
    pub click_tokens: HashMap<String, String>,
    /// ACKs still to be ignored as if lost on the wire.
    pub drop_acks: usize,
    /// PATCH requests received, whatever their outcome.
    pub patch_requests: usize,
    /// PATCH requests still to be answered with HTTP 500.
    pub fail_patches: usize,
    /// Message sends and replies still to be answered with HTTP 500.
    pub fail_sends: usize,
    /// Accepted sends and replies get no response (as if it was lost with the connection).
    pub withhold_send_responses: bool,
    /// Uploads, message resources and their knobs.
    pub media: super::media::MediaState,
    /// Reactions on messages (the typing sign) and their knobs.
    pub reactions: super::reaction::Reactions,
    /// CardKit card entities and their knobs.
    pub cardkit: super::cardkit::CardKit,
}

/// Everything the routes and connections share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: FakeConfig,
    pub base_url: String,
    state: Mutex<State>,
    /// Woken whenever the state was held, so a test waits on changes, not on the clock.
    changed: tokio::sync::Notify,
}

/// The locked state; unlocking it after a change wakes whoever waits in [`Shared::changed`]
/// (a read alone wakes nobody, so a waiter's own check does not wake it).
pub(crate) struct Locked<'a> {
    guard: MutexGuard<'a, State>,
    changed: &'a tokio::sync::Notify,
    written: bool,
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.written = true;
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if self.written {
            self.changed.notify_waiters();
        }
    }
}

impl Shared {
    pub fn new(config: FakeConfig, base_url: String) -> Arc<Self> {
        Arc::new(Self {
            config,
            base_url,
            state: Mutex::new(State::default()),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// Resolves after the state is next unlocked (create it, enable it, then check).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Locks the state; a test that panicked while holding it must not wedge the others.
    pub fn lock(&self) -> Locked<'_> {
        Locked {
            guard: self.state.lock().unwrap_or_else(|p| p.into_inner()),
            changed: &self.changed,
            written: false,
        }
    }

    /// Queues a push and wakes the connections.
    pub fn enqueue(&self, push: PendingPush) {
        let mut st = self.lock();
        st.queue.push_back(push);
        st.wake_all();
    }
}

impl State {
    /// A fresh id suffix.
    pub fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    pub fn wake_all(&mut self) {
        self.conns.retain(|_, tx| tx.send(ConnCtl::Wake).is_ok());
    }

    /// Moves timed-out in-flight pushes back to the queue with a new event_id.
    pub fn repush_expired(&mut self, now: Instant) -> usize {
        let expired: Vec<String> = self
            .inflight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for id in &expired {
            if let Some(f) = self.inflight.remove(id) {
                self.requeue(f.push);
            }
        }
        if !expired.is_empty() {
            self.wake_all();
        }
        expired.len()
    }

    /// Queues a re-push: new event_id, same event (and IM message_id).
    pub fn requeue(&mut self, mut push: PendingPush) {
        push.event_id = format!("ev_{}", self.next());
        push.attempt += 1;
        self.queue.push_back(push);
    }

    /// Takes a fixed-window count for `key`; `Err(reset)` when over the limit.
    pub fn rate_check(
        &mut self,
        key: &str,
        limit: usize,
        window: Duration,
        now: Instant,
    ) -> Result<(), Duration> {
        let q = self.rate.entry(key.to_string()).or_default();
        while q.front().is_some_and(|t| *t + window <= now) {
            q.pop_front();
        }
        if q.len() >= limit {
            let reset = q
                .front()
                .map_or(window, |t| (*t + window).saturating_duration_since(now));
            return Err(reset);
        }
        q.push_back(now);
        Ok(())
    }
}

/// The v2 envelope around an event body.
pub(crate) fn envelope(push: &PendingPush, app_id: &str) -> Value {
    json!({
        "schema": "2.0",
        "header": {
            "event_id": push.event_id,
            "event_type": push.event_type,
            "create_time": now_ms().to_string(),
            "token": "fake-verification-token",
            "app_id": app_id,
            "tenant_key": "fake-tenant",
        },
        "event": push.event,
    })
}

/// An `im.message.receive_v1` body.
pub(crate) fn message_event(
    from_open_id: &str,
    message_id: &str,
    chat_id: &str,
    chat_type: &str,
    text: &str,
    mentions: Value,
) -> Value {
    json!({
        "sender": {
            "sender_id": {"open_id": from_open_id, "union_id": format!("on_{from_open_id}"), "user_id": ""},
            "sender_type": "user",
            "tenant_key": "fake-tenant",
        },
        "message": {
            "message_id": message_id,
            "chat_id": chat_id,
            "chat_type": chat_type,
            "message_type": "text",
            "content": json!({"text": text}).to_string(),
            "mentions": mentions,
            "create_time": now_ms().to_string(),
            "update_time": now_ms().to_string(),
        }
    })
}

/// A `card.action.trigger` body.
pub(crate) fn card_event(
    operator: &str,
    token: &str,
    message_id: &str,
    chat_id: &str,
    value: &Value,
) -> Value {
    json!({
        "operator": {"open_id": operator, "union_id": format!("on_{operator}"), "tenant_key": "fake-tenant"},
        "token": token,
        "action": {"tag": "button", "value": value},
        "host": "im_message",
        "delivery_type": "im_message",
        "context": {"open_message_id": message_id, "open_chat_id": chat_id},
    })
}

pub(crate) fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The frame `type` of a push, as a header value.
pub(crate) fn kind_str(kind: FrameType) -> &'static str {
    kind.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn default_ack_deadline_is_three_seconds_then_a_new_event_id() {
        let cfg = FakeConfig::default();
        let mut st = State::default();
        let push = PendingPush {
            event_id: "ev_first".into(),
            event_type: "im.message.receive_v1".into(),
            event: json!({}),
            im_message_id: Some("om_1".into()),
            options: PushOptions::default(),
            attempt: 0,
        };
        let sent = Instant::now();
        st.inflight.insert(
            "fm_1".into(),
            Inflight {
                push,
                last_frame: Frame::default(),
                deadline: sent + cfg.ack_timeout,
            },
        );
        tokio::time::advance(Duration::from_millis(2999)).await;
        assert_eq!(st.repush_expired(Instant::now()), 0);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(st.repush_expired(Instant::now()), 1);
        let again = st.queue.pop_front().unwrap();
        assert_ne!(again.event_id, "ev_first");
        assert_eq!(again.im_message_id.as_deref(), Some("om_1"));
        assert_eq!(again.attempt, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_window_slides() {
        let mut st = State::default();
        let w = Duration::from_secs(1);
        for _ in 0..5 {
            assert!(st.rate_check("oc", 5, w, Instant::now()).is_ok());
        }
        let reset = st.rate_check("oc", 5, w, Instant::now()).unwrap_err();
        assert_eq!(reset, w);
        assert!(st.rate_check("oc2", 5, w, Instant::now()).is_ok());
        tokio::time::advance(w).await;
        assert!(st.rate_check("oc", 5, w, Instant::now()).is_ok());
    }
}
