//! What the connection hands the account task: one callback, its raw frame for the journal,
//! and — only once it is journaled — the handle replies go out on.
//!
//! WeCom has no acknowledgement and (as far as known) no redelivery for a lost callback
//! (§2.1): "journal before ack" means the raw frame is in the journal before anything is
//! done about it, replies included. [`Delivery::journaled`] is the one way to the
//! [`ReplyHandle`], so the order is in the types.

use serde_json::Value;
use tokio::time::Instant;

use crate::frame::cmd;
use crate::message::{Callback, CallbackKind, ChatTarget, Event, ParseError, parse_callback};

/// One callback as it arrived.
#[derive(Debug)]
pub struct Delivery {
    cmd: String,
    req_id: String,
    raw: String,
    received_at: Instant,
    callback: Result<Callback, ParseError>,
}

impl Delivery {
    pub(crate) fn new(cmd: String, req_id: String, body: Value, raw: String) -> Self {
        let callback = parse_callback(&cmd, &body);
        Self {
            cmd,
            req_id,
            raw,
            received_at: Instant::now(),
            callback,
        }
    }

    /// `aibot_msg_callback` or `aibot_event_callback`.
    pub fn cmd(&self) -> &str {
        &self.cmd
    }

    /// The callback's opaque `req_id`, verbatim: journal it, replies need it.
    pub fn req_id(&self) -> &str {
        &self.req_id
    }

    /// The whole frame as JSON text (control bytes removed): what the journal stores.
    /// It holds message text: never log it.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// When it arrived (reply windows count from here).
    pub fn received_at(&self) -> Instant {
        self.received_at
    }

    /// The parsed callback, or why it is unreadable (journal it anyway, then drop it).
    pub fn callback(&self) -> Result<&Callback, &ParseError> {
        self.callback.as_ref()
    }

    /// The dedupe key (`msgid`), when the callback has one (§2.7).
    pub fn dedupe_key(&self) -> Option<&str> {
        self.callback.as_ref().ok().map(Callback::dedupe_key)
    }

    /// Call once the journal holds [`Delivery::raw`] (committed): the parsed callback and,
    /// for callbacks that take a reply, the handle to reply on.
    pub fn journaled(self) -> (Result<Callback, ParseError>, Option<ReplyHandle>) {
        let handle = self.callback.as_ref().ok().and_then(|c| {
            let kind = match &c.kind {
                CallbackKind::Message { .. } if self.cmd == cmd::MSG_CALLBACK => {
                    HandleKind::Message
                }
                CallbackKind::Event(Event::EnterChat) => HandleKind::EnterChat,
                CallbackKind::Event(Event::CardClick { .. }) => HandleKind::CardEvent,
                _ => return None,
            };
            Some(ReplyHandle {
                req_id: self.req_id.clone(),
                kind,
                chat: c.chat.clone(),
                from_userid: c.from_userid.clone(),
                received_at: self.received_at,
            })
        });
        (self.callback, handle)
    }
}

/// Which reply command a handle takes (§4.1); any other gets `846605`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleKind {
    /// A message: `aibot_respond_msg` (streams, cards, media), for ~6 min.
    Message,
    /// `enter_chat`: `aibot_respond_welcome_msg`, within 5 s.
    EnterChat,
    /// A card click: `aibot_respond_update_msg`, within 5 s.
    CardEvent,
}

impl HandleKind {
    /// A stable name for the journal (`message`, `enter_chat`, `card_event`).
    pub fn as_str(self) -> &'static str {
        match self {
            HandleKind::Message => "message",
            HandleKind::EnterChat => "enter_chat",
            HandleKind::CardEvent => "card_event",
        }
    }

    /// The kind [`HandleKind::as_str`] named, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [
            HandleKind::Message,
            HandleKind::EnterChat,
            HandleKind::CardEvent,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

/// A callback's reply handle. Made by [`Delivery::journaled`]; the daemon may store its
/// fields and rebuild it after a restart (the platform will likely refuse an old `req_id`
/// with `846605`, and the reply then goes out proactively).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHandle {
    /// The callback's `req_id`.
    pub req_id: String,
    /// Which reply command it takes.
    pub kind: HandleKind,
    /// Where a proactive fallback goes.
    pub chat: ChatTarget,
    /// Who sent the callback (the clicker, for a card event).
    pub from_userid: String,
    /// When the callback arrived.
    pub received_at: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for k in [
            HandleKind::Message,
            HandleKind::EnterChat,
            HandleKind::CardEvent,
        ] {
            assert_eq!(HandleKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(HandleKind::parse("Message"), None);
    }

    #[test]
    fn only_replyable_callbacks_get_a_handle() {
        let body = serde_json::json!({"msgid": "m", "from": {"userid": "u"}, "msgtype": "event",
            "event": {"eventtype": "disconnected_event"}});
        let d = Delivery::new(cmd::EVENT_CALLBACK.into(), "r".into(), body, String::new());
        assert_eq!(d.dedupe_key(), Some("m"));
        assert!(d.journaled().1.is_none());
    }
}
