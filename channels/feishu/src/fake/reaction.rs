//! The fake's reaction routes: add an emoji to a message, remove the bot's own (231007 for
//! anyone else's), with a knob that refuses adds, for best-effort tests.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::FakeFeishu;
use super::reply::{authorize, err, ok};
use super::state::Shared;

/// One reaction as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReactionRecord {
    /// The message it is on.
    pub message_id: String,
    /// Its id, as returned by the add.
    pub reaction_id: String,
    /// The emoji type (`Typing`).
    pub emoji: String,
    /// `app` (the bot) or `user`.
    pub operator: String,
    /// Removed by a DELETE.
    pub removed: bool,
}

/// The reactions and their knobs.
#[derive(Debug, Default)]
pub(crate) struct Reactions {
    list: Vec<ReactionRecord>,
    /// Adds still to be refused with this code (a recalled message: 231003).
    refuse_adds: Option<(i64, usize)>,
    requests: usize,
}

pub(crate) async fn add(
    State(sh): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    sh.lock().reactions.requests += 1;
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(emoji) = v
        .pointer("/reaction_type/emoji_type")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
    else {
        return err(231001, "invalid emoji type");
    };
    let mut st = sh.lock();
    if let Some((code, left)) = st.reactions.refuse_adds.as_mut()
        && *left > 0
    {
        *left -= 1;
        let code = *code;
        return err(code, "message not found or recalled");
    }
    let reaction_id = format!("re_fake{}", st.next());
    st.reactions.list.push(ReactionRecord {
        message_id: id,
        reaction_id: reaction_id.clone(),
        emoji: emoji.to_string(),
        operator: "app".into(),
        removed: false,
    });
    ok(json!({
        "reaction_id": reaction_id,
        "operator": {"operator_id": "cli_fake", "operator_type": "app"},
        "action_time": "0",
        "reaction_type": {"emoji_type": emoji},
    }))
}

pub(crate) async fn remove(
    State(sh): State<Arc<Shared>>,
    Path((id, rid)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    sh.lock().reactions.requests += 1;
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let mut st = sh.lock();
    let Some(r) = st
        .reactions
        .list
        .iter_mut()
        .find(|r| r.reaction_id == rid && !r.removed)
    else {
        return err(231011, "invalid reaction_id");
    };
    if r.message_id != id {
        return err(231010, "reaction does not belong to this message");
    }
    if r.operator != "app" {
        return err(231007, "a bot may delete only its own reactions");
    }
    r.removed = true;
    let emoji = r.emoji.clone();
    ok(json!({
        "reaction_id": rid,
        "operator": {"operator_id": "cli_fake", "operator_type": "app"},
        "action_time": "0",
        "reaction_type": {"emoji_type": emoji},
    }))
}

impl FakeFeishu {
    /// Every reaction added so far, in order, with whether it was removed.
    pub fn reactions(&self) -> Vec<ReactionRecord> {
        self.shared.lock().reactions.list.clone()
    }

    /// How many reaction requests (adds and removes) arrived, whatever their outcome.
    pub fn reaction_requests(&self) -> usize {
        self.shared.lock().reactions.requests
    }

    /// Refuses the next `n` reaction adds with `code` (231003: message recalled).
    pub fn refuse_reactions(&self, code: i64, n: usize) {
        self.shared.lock().reactions.refuse_adds = Some((code, n));
    }

    /// A user's reaction on `message_id` (the bot may not remove it: 231007); returns its id.
    pub fn add_user_reaction(&self, message_id: &str, emoji: &str) -> String {
        let mut st = self.shared.lock();
        let reaction_id = format!("re_user{}", st.next());
        st.reactions.list.push(ReactionRecord {
            message_id: message_id.into(),
            reaction_id: reaction_id.clone(),
            emoji: emoji.into(),
            operator: "user".into(),
            removed: false,
        });
        reaction_id
    }
}
