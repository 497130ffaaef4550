//! Replies a crash may have cut off: held, announced, and sent again when the chat asks.
//!
//! A send whose record still says `sending` at the next attempt was in flight when the process
//! died. WeChat may have shown it (it takes a send before it answers, and the answer died with
//! the process), and sending it again under the same `client_id` relies on WeChat dropping a
//! repeated id, which is unconfirmed (spec §5: a reused id was seen refused once, in another
//! case). Nor does the time the send began say anything: the crash may have come at any moment
//! after it. So such an item is never sent again on its own. It is held here (its text, and its
//! file if it carries one), the chat gets a short note in its place saying how it began and
//! that `/again` brings it, and the outbox counts it as done so the chat's next replies are not
//! held up behind it.
//!
//! `/again` from that chat moves its held replies into a request, in the same commit that stores
//! the poll batch it came in (the message itself is not passed on: it is counted as dropped,
//! `resend_request`, and answered by the replies). [`release`] then queues each reply in the
//! outbox under a new key (so a new `client_id`), and forgets the request. A reply is therefore
//! never shown twice by the bridge's own choice, and never lost: the chat can always fetch it,
//! for as long as send records are kept.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::conversation::body::MediaOut;
use crate::conversation::{Body, ChatId, Outbound, OutboxKey, PlatformMsgId};
use crate::port::AccountPort;
use crate::store::{AccountState, StateError, StateTxn, StoreError};
use crate::words::{AGAIN, Lang, Resend};

/// Names of held replies: `wechat_held/<client_id>`.
const HELD: &str = "wechat_held/";
/// Names of requests to send them again: `wechat_again/<message key of the /again>`.
const AGAIN_REQUEST: &str = "wechat_again/";
/// How many characters of a held reply its note quotes.
const PREVIEW_CHARS: usize = 40;

/// One held reply, as stored (field names are stored; keep them stable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct HeldReply {
    /// The chat (peer) it was for.
    pub peer: String,
    /// The `client_id` it was held under: names its copy when sent again.
    pub client_id: String,
    /// Its text, as the outbox had it.
    pub text: String,
    /// The file it carried, if any.
    pub media: Option<MediaOut>,
    /// When it was held, Unix ms.
    pub at_ms: i64,
}

impl HeldReply {
    /// The outbox item `msg` for `peer`, held under `client_id` at `now`.
    pub(super) fn of(peer: &str, client_id: &str, msg: &Outbound, now: i64) -> Self {
        HeldReply {
            peer: peer.to_string(),
            client_id: client_id.to_string(),
            text: msg.text.clone(),
            media: match &msg.body {
                Body::Media(m) => Some(m.clone()),
                _ => None,
            },
            at_ms: now,
        }
    }
}

/// A chat's `/again`, stored with the poll batch it came in: the replies it releases.
#[derive(Serialize, Deserialize)]
struct Request {
    peer: String,
    msg_id: String,
    held: Vec<HeldReply>,
}

/// Whether `text` (a message's whole text) asks for the held replies again.
pub(super) fn is_request(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case(AGAIN)
}

/// The note sent in a held reply's place, in `lang`.
pub(super) fn note(lang: Lang, reply: &str) -> String {
    let flat: String = reply.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut preview: String = flat.chars().take(PREVIEW_CHARS).collect();
    if flat.chars().count() > PREVIEW_CHARS {
        preview.push('…');
    }
    Resend::MayBeCutOff { preview }.text(lang).into_owned()
}

/// Holds `reply`: its send record says `held` (never attempted again) and the reply is kept, in
/// one commit.
pub(super) async fn hold(state: &AccountState, reply: HeldReply) -> Result<(), StoreError> {
    state
        .call(move |s| {
            super::state::mark_held_in(s, &reply.client_id, reply.at_ms)?;
            s.put_json(&format!("{HELD}{}", reply.client_id), &reply)
        })
        .await
}

/// Which of `peers` have replies held.
pub(super) async fn peers_holding(
    state: &AccountState,
    peers: Vec<String>,
) -> Result<HashSet<String>, StoreError> {
    state
        .call(move |s| {
            Ok(held_in(s)?
                .into_iter()
                .map(|(_, h)| h.peer)
                .filter(|p| peers.contains(p))
                .collect())
        })
        .await
}

/// Every held reply, with its name, oldest first; unreadable ones are skipped (and purged).
fn held_in(s: &StateTxn<'_>) -> Result<Vec<(String, HeldReply)>, StateError> {
    let mut all: Vec<(String, HeldReply)> = s
        .scan(HELD)?
        .into_iter()
        .filter_map(|(n, v)| Some((n, serde_json::from_str(&v).ok()?)))
        .collect();
    all.sort_by_key(|(_, h)| h.at_ms);
    Ok(all)
}

/// Inside `s` (the commit that stores the poll batch): each `(peer, message key)` request takes
/// that peer's held replies.
pub(super) fn request_in(
    s: &StateTxn<'_>,
    requests: &[(String, String)],
) -> Result<(), StateError> {
    for (peer, msg_id) in requests {
        let mut held = Vec::new();
        for (name, h) in held_in(s)? {
            if h.peer == *peer {
                s.delete(&name)?;
                held.push(h);
            }
        }
        let request = Request {
            peer: peer.clone(),
            msg_id: msg_id.clone(),
            held,
        };
        s.put_json(&format!("{AGAIN_REQUEST}{msg_id}"), &request)?;
    }
    Ok(())
}

/// Queues the replies of every stored request in the outbox, then forgets the request. Each
/// goes under a key of its own (the request's message and the held `client_id`), so queueing
/// again after a crash changes nothing, and the copy gets a new `client_id`.
pub(super) async fn release(port: &AccountPort) -> Result<(), StoreError> {
    let pending: Vec<(String, Option<Request>)> = port
        .state()
        .call(|s| {
            Ok(s.scan(AGAIN_REQUEST)?
                .into_iter()
                .map(|(n, v)| (n, serde_json::from_str(&v).ok()))
                .collect())
        })
        .await?;
    for (name, request) in pending {
        if let Some(r) = request {
            let (chat, msg) = (ChatId::new(r.peer), PlatformMsgId::new(r.msg_id));
            for h in r.held {
                let what = format!("again/{}", h.client_id);
                let key = OutboxKey::reply(&port.spec().key, &msg, &what);
                let body = h.media.map(Body::Media);
                port.announce_body(&chat, &h.text, body.as_ref(), key)
                    .await?;
            }
        } else {
            tracing::warn!(account = %port.spec().key, "dropped a resend request this build cannot read");
        }
        port.state().call(move |s| s.delete(&name)).await?;
    }
    Ok(())
}

/// Forgets replies held longer than the send records are kept (they go with them).
pub(super) async fn purge(state: &AccountState, now: i64) -> Result<(), StoreError> {
    let cutoff = now - super::state::SEND_RECORD_KEEP_MS;
    state.call(move |s| purge_in(s, cutoff)).await
}

/// Inside `s`: forgets replies held before `cutoff` (Unix ms), and unreadable ones.
pub(super) fn purge_in(s: &StateTxn<'_>, cutoff: i64) -> Result<(), StateError> {
    for (name, value) in s.scan(HELD)? {
        let old = serde_json::from_str::<HeldReply>(&value)
            .map(|h| h.at_ms < cutoff)
            .unwrap_or(true);
        if old {
            s.delete(&name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
