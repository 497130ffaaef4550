//! Outbox keys, question ids and delivery states: built here only, so their stored spellings
//! cannot drift apart between the places that write and the places that look them up.

use std::fmt;

use super::{AccountKey, PlatformMsgId};

/// A confirm question's id as people and the protocol see it: `q-<seq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuestionId(pub i64);

impl QuestionId {
    /// Parses `q-<seq>`.
    pub fn parse(s: &str) -> Option<QuestionId> {
        s.strip_prefix("q-")?.parse().ok().map(QuestionId)
    }
}

impl fmt::Display for QuestionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "q-{}", self.0)
    }
}

/// The idempotency key of one outbox item: unique per thing said, reused by every retry and
/// every restart, and handed to the platform as its dedupe key where it has one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxKey(String);

impl OutboxKey {
    /// The answer to inbound message `msg` of `account`.
    pub fn answer(account: &AccountKey, msg: &PlatformMsgId) -> OutboxKey {
        OutboxKey(format!("{account}/{msg}"))
    }

    /// Another reply to `msg` than its answer, told apart by `what` ("status", "paired", ...).
    pub fn reply(account: &AccountKey, msg: &PlatformMsgId, what: &str) -> OutboxKey {
        OutboxKey(format!("{account}/{msg}/{what}"))
    }

    /// The message that asks question `q`.
    pub fn question(q: QuestionId) -> OutboxKey {
        OutboxKey(format!("confirm/{q}/ask"))
    }

    /// The question whose message's first piece `piece` is (the piece carrying its card).
    pub fn question_of_first_piece(piece: &str) -> Option<QuestionId> {
        let key = Self::first_piece_of(piece)?;
        QuestionId::parse(key.strip_prefix("confirm/")?.strip_suffix("/ask")?)
    }

    /// The message (or card update) that says how question `q` ended.
    pub fn question_closed(q: QuestionId) -> OutboxKey {
        OutboxKey(format!("confirm/{q}/closed"))
    }

    /// The message of `scv-bridge send` number `id` (`owner_sends`' row).
    pub fn owner_send(id: i64) -> OutboxKey {
        OutboxKey(format!("owner/send/{id}"))
    }

    /// The owner's alert that route `route` stopped, for the stretch of the failure that began
    /// at `since` (Unix seconds): one alert per stretch (`owner/alerts.rs`).
    pub fn owner_alert(route: &AccountKey, since: u64) -> OutboxKey {
        OutboxKey(format!("owner/alert/{route}/{since}"))
    }

    /// The owner's alert that route `route`'s messages have waited too long, for the stretch of
    /// waiting first seen at `since_ms` (daemon clock), for reason `why` (`owner/stuck.rs`): one
    /// per stretch and reason, so a worse reason is told again and a repeat queues nothing.
    pub fn owner_alert_wait(route: &AccountKey, since_ms: u64, why: &str) -> OutboxKey {
        OutboxKey(format!("owner/alert/{route}/wait/{since_ms}/{why}"))
    }

    /// The owner's notice that route `route` delivers again after the stretch `stretch` it was
    /// told about (`owner/stuck.rs`).
    pub fn owner_alert_back(route: &AccountKey, stretch: &str) -> OutboxKey {
        OutboxKey(format!("owner/alert/{route}/back/{stretch}"))
    }

    /// The copy of the message queued under `key` that moved to the owner's next route `to`
    /// (`owner/mover.rs`): a key of its own, outside `key`'s pieces.
    pub fn moved(key: &str, to: &AccountKey) -> OutboxKey {
        OutboxKey(format!("moved/{to}/{key}"))
    }

    /// The key a [`OutboxKey::moved`] copy copies; `None` for a key that is no copy.
    pub fn moved_original(copy: &str) -> Option<&str> {
        copy.strip_prefix("moved/")?
            .split_once('/')
            .map(|(_, key)| key)
    }

    /// The reply to an answer of a confirm question, inbound message `msg` of `account`.
    pub fn confirm_reply(account: &AccountKey, msg: &PlatformMsgId) -> OutboxKey {
        OutboxKey(format!("confirm/reply/{account}/{msg}"))
    }

    /// The reply to a command in the mail chat, inbound message `msg` of `account`.
    pub fn mail_chat(account: &AccountKey, msg: &PlatformMsgId) -> OutboxKey {
        OutboxKey(format!("mail-chat:{account}/{msg}"))
    }

    /// Piece `i` of what is queued under `key`: the core splits every text it queues into
    /// pieces of the platform's size, each its own outbox item (`<key>/<i>`).
    pub fn piece(key: &str, i: usize) -> OutboxKey {
        OutboxKey(format!("{key}/{i}"))
    }

    /// Piece `i` of an answer queued while the agent was still writing it, keeping how far
    /// the pieces so far reach (`upto` non-blank characters, their FNV-1a `digest`), because
    /// an item forgets its text once sent: `<key>/<i>.<upto>.<digest>`.
    pub fn streamed_piece(key: &str, i: usize, upto: usize, digest: u64) -> OutboxKey {
        OutboxKey(format!("{key}/{i}.{upto}.{digest:016x}"))
    }

    /// Reads a key [`OutboxKey::streamed_piece`] wrote under `key`: `(i, upto, digest)`.
    pub fn read_streamed_piece(key: &str, piece: &str) -> Option<(usize, usize, u64)> {
        let suffix = piece.strip_prefix(key)?.strip_prefix('/')?;
        let mut it = suffix.split('.');
        let i = it.next()?.parse().ok()?;
        let upto = it.next()?.parse().ok()?;
        let digest = u64::from_str_radix(it.next()?, 16).ok()?;
        it.next().is_none().then_some((i, upto, digest))
    }

    /// The stored keys `[lo, hi)` between which every piece of `key` sorts ('0' follows '/').
    pub fn pieces_range(key: &str) -> (String, String) {
        (format!("{key}/"), format!("{key}0"))
    }

    /// The key that `piece` is the first piece of, when it is one (`<key>/0`): what the core
    /// tells a platform that shows an answer while it is written, whose first piece finishes it.
    pub fn first_piece_of(piece: &str) -> Option<&str> {
        piece.strip_suffix("/0")
    }

    /// A name derived from `key` for a platform's own dedupe (`<key>/<what>`, e.g. the Feishu
    /// card message of a streamed answer), which never collides with a piece of it.
    pub fn derived(key: &str, what: &str) -> String {
        debug_assert!(
            what.parse::<usize>().is_err(),
            "a piece index is not a derived name"
        );
        format!("{key}/{what}")
    }

    /// The stored spelling.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OutboxKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<OutboxKey> for String {
    fn from(k: OutboxKey) -> String {
        k.0
    }
}

/// Where an outbox item stands, as the journal stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryState {
    /// Waiting to be sent (or being sent).
    Pending,
    /// The platform took it.
    Sent,
    /// It can never be sent; not retried.
    Failed,
    /// It waited too long on its route and a copy went to the owner's next route
    /// (`OutboxKey::moved`); never sent here.
    Moved,
}

impl DeliveryState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Sent => "sent",
            DeliveryState::Failed => "failed",
            DeliveryState::Moved => "moved",
        }
    }

    /// Reads a stored spelling; an unknown one is `None`.
    pub fn parse(s: &str) -> Option<DeliveryState> {
        [
            DeliveryState::Pending,
            DeliveryState::Sent,
            DeliveryState::Failed,
            DeliveryState::Moved,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Channel;

    #[test]
    fn stored_spellings_never_change() {
        let a = AccountKey::new(Channel::Wechat, "phone");
        let m = PlatformMsgId::new("42");
        let q = QuestionId(7);
        assert_eq!(OutboxKey::answer(&a, &m).as_str(), "wechat:phone/42");
        assert_eq!(
            OutboxKey::reply(&a, &m, "status").as_str(),
            "wechat:phone/42/status"
        );
        assert_eq!(OutboxKey::question(q).as_str(), "confirm/q-7/ask");
        assert_eq!(OutboxKey::question_closed(q).as_str(), "confirm/q-7/closed");
        let f = AccountKey::new(Channel::Feishu, "work");
        assert_eq!(
            OutboxKey::moved("confirm/q-7/ask", &f).as_str(),
            "moved/feishu:work/confirm/q-7/ask"
        );
        assert_eq!(
            OutboxKey::moved_original("moved/feishu:work/confirm/q-7/ask"),
            Some("confirm/q-7/ask")
        );
        assert_eq!(OutboxKey::moved_original("confirm/q-7/ask"), None);
        assert_eq!(OutboxKey::owner_send(3).as_str(), "owner/send/3");
        assert_eq!(
            OutboxKey::confirm_reply(&a, &m).as_str(),
            "confirm/reply/wechat:phone/42"
        );
        assert_eq!(
            OutboxKey::mail_chat(&a, &m).as_str(),
            "mail-chat:wechat:phone/42"
        );
        assert_eq!(QuestionId::parse("q-7"), Some(q));
        assert_eq!(QuestionId::parse("7"), None);
        for d in [
            DeliveryState::Pending,
            DeliveryState::Sent,
            DeliveryState::Failed,
            DeliveryState::Moved,
        ] {
            assert_eq!(DeliveryState::parse(d.as_str()), Some(d));
        }
        assert_eq!(DeliveryState::parse("lost"), None);
    }

    #[test]
    fn pieces_and_streamed_pieces_read_back_and_sort_under_their_key() {
        let key = "wechat:phone/id:1";
        assert_eq!(OutboxKey::piece(key, 0).as_str(), "wechat:phone/id:1/0");
        assert_eq!(OutboxKey::first_piece_of("wechat:phone/id:1/0"), Some(key));
        assert_eq!(OutboxKey::first_piece_of("wechat:phone/id:1/1"), None);
        let s = OutboxKey::streamed_piece(key, 3, 250, 0xabc);
        assert_eq!(
            OutboxKey::read_streamed_piece(key, s.as_str()),
            Some((3, 250, 0xabc))
        );
        assert_eq!(OutboxKey::read_streamed_piece(key, "other/3.250.abc"), None);
        assert_eq!(
            OutboxKey::read_streamed_piece(key, OutboxKey::piece(key, 3).as_str()),
            None
        );
        let (lo, hi) = OutboxKey::pieces_range(key);
        for k in [OutboxKey::piece(key, 12), s] {
            assert!(lo.as_str() <= k.as_str() && k.as_str() < hi.as_str(), "{k}");
        }
        assert_eq!(OutboxKey::derived(key, "card"), "wechat:phone/id:1/card");
    }
}
