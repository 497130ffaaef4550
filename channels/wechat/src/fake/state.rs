//! The fake's platform state and rules: inbound queue and cursor, the send window, typing.
//! Pure functions of the state and a clock reading, so each rule is easy to follow.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::FakeConfig;
use super::qr::QrBook;
use super::records::{Fault, RecordedRequest, RejectedSend, SentMessage, TypingCall};
use crate::endpoint::Endpoint;
use crate::message::{
    MESSAGE_STATE_FINISH, MESSAGE_TYPE_BOT, MESSAGE_TYPE_USER, MessageItem, WeixinMessage,
};

/// The latest inbound state of one peer.
struct Peer {
    latest_token: String,
}

/// One context token the fake issued with an inbound message.
struct ContextToken {
    user: String,
    issued: Instant,
    sends: u32,
}

/// Everything the fake knows; guarded by one mutex, never held across an await.
pub(crate) struct State {
    pub(crate) config: FakeConfig,
    pub(crate) base_url: String,
    clock_offset: Duration,
    pub(crate) tokens: HashSet<String>,
    pub(crate) last_issued_token: Option<String>,
    queue: Vec<WeixinMessage>,
    consumed: usize,
    next_message_id: u64,
    next_seq: i64,
    peers: HashMap<String, Peer>,
    context_tokens: HashMap<String, ContextToken>,
    used_client_ids: HashSet<String>,
    recent_sends: VecDeque<Instant>,
    typing_tickets: HashMap<String, String>,
    pub(crate) faults: HashMap<Endpoint, VecDeque<Fault>>,
    pub(crate) qr: QrBook,
    pub(crate) sent: Vec<SentMessage>,
    /// When each of `sent` was accepted, by the wall-clock monotonic clock (not tokio's).
    pub(crate) sent_at: Vec<std::time::Instant>,
    /// Each delivered message's id and when its poll response was made (the response is written
    /// with no wait after), by the wall-clock monotonic clock: where a crash starts losing it.
    pub(crate) handed_out: Vec<(u64, std::time::Instant)>,
    pub(crate) rejected: Vec<RejectedSend>,
    pub(crate) typing: Vec<TypingCall>,
    pub(crate) notifies: Vec<Endpoint>,
    pub(crate) requests: Vec<RecordedRequest>,
    /// Calls carried out whose answers are held back by `answer_delay` (one entry per call,
    /// gone when the answer goes or the client hangs up).
    pub(crate) answers_waiting: Vec<Endpoint>,
    /// The media CDN.
    pub(crate) cdn: super::cdn::CdnBook,
}

impl State {
    /// Calls to `endpoint` whose held-back answers their clients still wait for.
    pub(crate) fn answers_waiting_for(&self, endpoint: Endpoint) -> usize {
        self.answers_waiting
            .iter()
            .filter(|e| **e == endpoint)
            .count()
    }

    pub(crate) fn new(config: FakeConfig, base_url: String) -> State {
        let tokens = config.initial_token.iter().cloned().collect();
        State {
            last_issued_token: config.initial_token.clone(),
            next_message_id: config.first_message_id,
            config,
            base_url,
            clock_offset: Duration::ZERO,
            tokens,
            queue: Vec::new(),
            consumed: 0,
            next_seq: 1,
            peers: HashMap::new(),
            context_tokens: HashMap::new(),
            used_client_ids: HashSet::new(),
            recent_sends: VecDeque::new(),
            typing_tickets: HashMap::new(),
            faults: HashMap::new(),
            qr: QrBook::default(),
            sent: Vec::new(),
            sent_at: Vec::new(),
            handed_out: Vec::new(),
            cdn: Default::default(),
            rejected: Vec::new(),
            typing: Vec::new(),
            notifies: Vec::new(),
            requests: Vec::new(),
            answers_waiting: Vec::new(),
        }
    }

    /// The fake's clock: tokio time (so a paused runtime drives it) plus test advances.
    pub(crate) fn now(&self) -> Instant {
        Instant::now() + self.clock_offset
    }

    pub(crate) fn advance_clock(&mut self, by: Duration) {
        self.clock_offset += by;
    }

    pub(crate) fn next_fault(&mut self, endpoint: Endpoint) -> Option<Fault> {
        self.faults.get_mut(&endpoint).and_then(VecDeque::pop_front)
    }

    /// Issues a bot token; with `revoke_others`, earlier tokens stop working (binding the
    /// bot elsewhere makes the old instance get -14, issue #69).
    pub(crate) fn issue_bot_token(&mut self, revoke_others: bool) -> String {
        if revoke_others {
            self.tokens.clear();
        }
        let token = format!(
            "{}@im.bot:{}",
            super::random::hex(8),
            super::random::hex(16)
        );
        self.tokens.insert(token.clone());
        self.last_issued_token = Some(token.clone());
        token
    }

    /// Queues an inbound message from `from`, issuing it a fresh context token (which also
    /// reopens that peer's send window). Fills the ids the caller left unset.
    pub(crate) fn push(&mut self, mut msg: WeixinMessage) -> WeixinMessage {
        if msg.seq.is_none() {
            msg.seq = Some(self.next_seq);
        }
        self.next_seq += 1;
        if msg.to_user_id.is_empty() {
            msg.to_user_id = self.config.bot_id.clone();
        }
        if msg.create_time_ms.is_none() {
            msg.create_time_ms = Some(wall_ms());
        }
        let token = format!("ctx-{}", super::random::hex(12));
        msg.context_token = Some(token.clone());
        if !msg.is_from_bot() {
            let issued = self.now();
            let user = msg.from_user_id.clone();
            self.context_tokens.insert(
                token.clone(),
                ContextToken {
                    user: user.clone(),
                    issued,
                    sends: 0,
                },
            );
            self.peers.insert(
                user,
                Peer {
                    latest_token: token,
                },
            );
        }
        self.queue.push(msg.clone());
        msg
    }

    /// A new text message from a user with the next (64-bit) message id.
    pub(crate) fn text_message(&mut self, from: &str, text: &str) -> WeixinMessage {
        let id = self.take_message_id();
        WeixinMessage {
            message_id: Some(id),
            from_user_id: from.to_owned(),
            message_type: Some(MESSAGE_TYPE_USER),
            message_state: Some(MESSAGE_STATE_FINISH),
            item_list: vec![MessageItem::text(text)],
            ..WeixinMessage::default()
        }
    }

    pub(crate) fn take_message_id(&mut self) -> u64 {
        let id = self.next_message_id;
        self.next_message_id = self.next_message_id.wrapping_add(1);
        id
    }

    /// A copy of an earlier pushed message, for duplicate delivery.
    pub(crate) fn find_pushed(&self, message_id: u64) -> Option<WeixinMessage> {
        self.queue
            .iter()
            .find(|m| m.message_id == Some(message_id))
            .cloned()
    }

    /// Whether a `getupdates` from this cursor would answer at once.
    pub(crate) fn has_pending(&self, cursor: &str) -> bool {
        self.queue.len() > self.start_index(cursor)
    }

    fn start_index(&self, cursor: &str) -> usize {
        // Real-server mode: what was delivered is consumed, whatever cursor comes back.
        decode_cursor(cursor).unwrap_or(0).max(self.consumed)
    }

    /// Answers a `getupdates`: everything pending (consuming it), or an empty batch with the
    /// caller's cursor.
    pub(crate) fn take_updates(&mut self, cursor: &str) -> Value {
        let start = self.start_index(cursor);
        let suggested = self
            .config
            .suggested_hold_ms
            .unwrap_or(self.config.hold.as_millis() as u64);
        if start >= self.queue.len() {
            let cursor = if decode_cursor(cursor).is_some() || cursor.is_empty() {
                cursor.to_owned()
            } else {
                encode_cursor(self.consumed)
            };
            return json!({"ret": 0, "msgs": [], "get_updates_buf": cursor, "longpolling_timeout_ms": suggested});
        }
        let msgs: Vec<WeixinMessage> = self.queue[start..].to_vec();
        self.consumed = self.queue.len();
        let now = std::time::Instant::now();
        self.handed_out
            .extend(msgs.iter().filter_map(|m| m.message_id).map(|id| (id, now)));
        json!({
            "ret": 0,
            "msgs": msgs,
            "get_updates_buf": encode_cursor(self.consumed),
            "longpolling_timeout_ms": suggested,
        })
    }

    /// Applies the `sendmessage` rules of spec §8.7; `Ok` records the send.
    pub(crate) fn send(&mut self, body: &Value) -> Value {
        let msg = body.get("msg");
        let field = |name: &str| {
            msg.and_then(|m| m.get(name))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (to_user, client_id) = (field("to_user_id"), field("client_id"));
        match self.check_send(msg, &to_user, &client_id) {
            Ok((text, token)) => {
                let now = self.now();
                if let Some(t) = self.context_tokens.get_mut(&token) {
                    t.sends += 1;
                }
                self.used_client_ids.insert(client_id.clone());
                self.recent_sends.push_back(now);
                self.sent_at.push(std::time::Instant::now());
                if let Some(m) = self.cdn.checked.take() {
                    self.cdn.sent_media.push(m);
                }
                self.sent.push(SentMessage {
                    to_user,
                    text,
                    client_id,
                    context_token: token,
                });
                json!({"ret": 0})
            }
            Err((reason, errmsg)) => {
                self.cdn.checked = None;
                self.rejected.push(RejectedSend {
                    to_user,
                    client_id,
                    reason: reason.to_owned(),
                });
                json!({"ret": -2, "errmsg": errmsg})
            }
        }
    }

    /// Returns the text and context token of a valid send, or (reason, errmsg).
    fn check_send(
        &mut self,
        msg: Option<&Value>,
        to_user: &str,
        client_id: &str,
    ) -> Result<(String, String), (&'static str, &'static str)> {
        let msg = msg.filter(|m| m.is_object()).ok_or(("no msg object", ""))?;
        let int = |name: &str| msg.get(name).and_then(Value::as_i64);
        if int("message_type") != Some(MESSAGE_TYPE_BOT) {
            return Err(("message_type is not 2 (bot)", ""));
        }
        if int("message_state") != Some(MESSAGE_STATE_FINISH) {
            return Err(("message_state is not 2 (finish)", ""));
        }
        let items = msg
            .get("item_list")
            .and_then(Value::as_array)
            .ok_or(("no item_list", ""))?;
        if items.len() != 1 {
            return Err(("not exactly one item", ""));
        }
        let item = &items[0];
        let text = item
            .pointer("/text_item/text")
            .and_then(Value::as_str)
            .unwrap_or("");
        let text = if item.get("type").and_then(Value::as_i64) == Some(1) {
            if text.is_empty() {
                return Err(("the item is not a non-empty text item", ""));
            }
            text.to_string()
        } else {
            // Media items are checked against what the CDN issued (spec media §2.6).
            self.cdn.check_item(item, to_user).map_err(|r| (r, ""))?
        };
        if to_user.is_empty() {
            return Err(("no to_user_id", ""));
        }
        if client_id.is_empty() {
            return Err(("no client_id", ""));
        }
        if self.config.refuse_reused_client_ids && self.used_client_ids.contains(client_id) {
            return Err(("client_id reused", "unknown error"));
        }
        let token = msg
            .get("context_token")
            .and_then(Value::as_str)
            .unwrap_or("");
        if token.is_empty() {
            return Err(("no context_token", ""));
        }
        let now = self.now();
        let window = self.config.window;
        let limit = self.config.sends_per_inbound;
        let ctx = self
            .context_tokens
            .get(token)
            .ok_or(("unknown context_token", ""))?;
        if ctx.user != to_user {
            return Err(("context_token belongs to another user", ""));
        }
        if now.saturating_duration_since(ctx.issued) > window {
            return Err((
                "send window closed (context_token older than the window)",
                "",
            ));
        }
        if ctx.sends >= limit {
            return Err((
                "send window used up (too many sends on this inbound message)",
                "rate limited",
            ));
        }
        if self
            .config
            .max_text_chars
            .is_some_and(|max| text.chars().count() > max)
        {
            return Err(("text too long", "prepare failed"));
        }
        if let Some((max, per)) = self.config.burst {
            while self
                .recent_sends
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) > per)
            {
                self.recent_sends.pop_front();
            }
            if self.recent_sends.len() >= max as usize {
                return Err(("burst limit", "prepare failed"));
            }
        }
        Ok((text.to_owned(), token.to_owned()))
    }

    /// The latest context token the fake issued to `user`.
    pub(crate) fn latest_context_token(&self, user: &str) -> Option<String> {
        self.peers.get(user).map(|p| p.latest_token.clone())
    }

    pub(crate) fn get_config(&mut self, body: &Value) -> Value {
        let user = body
            .get("ilink_user_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        if user.is_empty() {
            return json!({"ret": -1, "errmsg": "no ilink_user_id"});
        }
        let ticket = STANDARD.encode(super::random::hex(12));
        self.typing_tickets.insert(ticket.clone(), user.to_owned());
        json!({"ret": 0, "typing_ticket": ticket})
    }

    pub(crate) fn send_typing(&mut self, body: &Value) -> Value {
        let user = body
            .get("ilink_user_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        let ticket = body
            .get("typing_ticket")
            .and_then(Value::as_str)
            .unwrap_or("");
        let status = body.get("status").and_then(Value::as_i64).unwrap_or(0);
        if self.typing_tickets.get(ticket).map(String::as_str) != Some(user)
            || !matches!(status, 1 | 2)
        {
            return json!({"ret": -1, "errmsg": "invalid typing ticket or status"});
        }
        self.typing.push(TypingCall {
            user: user.to_owned(),
            status,
        });
        json!({"ret": 0})
    }
}

/// Cursors look opaque, like the real ones, but encode the queue position.
pub(crate) fn encode_cursor(position: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("fake-cursor:{position}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("fake-cursor:")?
        .parse()
        .ok()
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        assert_eq!(decode_cursor(""), None);
        assert_eq!(decode_cursor("zzz"), None);
    }
}
