//! Which agent answers a chat: the one the chat picked with `/agent NAME` (kept in the
//! account's state, so a restart keeps it), else for a stranger the account's
//! `stranger_agent`, else the account's `agent`, else `default`.
//!
//! The pipeline owns the per-chat choice; the agents themselves are the registry's
//! (`backend.rs`), built from `[agent]` and `[agents.NAME]` by the composition root.

use std::sync::Arc;

use super::backend::Backend;
use super::message::Inbound;
use super::{AccountRuntime, Conversation};
use crate::config::{AccountKey, DEFAULT_AGENT};
use crate::ids::ChatId;
use crate::words::AgentWords;

/// The account-state name of a chat's choice.
fn state_name(chat: &ChatId) -> String {
    format!("chat_agent/{}", chat.as_str())
}

/// The agent `chat` picked, inside a store call (the turn worker reads it with the chat's next
/// message).
pub(super) fn chosen_in(
    t: &rusqlite::Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
) -> rusqlite::Result<Option<String>> {
    crate::store::state_within(t, &account.to_string(), |s| s.get(&state_name(chat)))
}

/// The agent that answers `m` (from the owner or not), and its name: a choice naming an agent
/// that is no longer configured falls back to the account's.
pub(super) fn answering(
    conv: &Conversation,
    rt: &AccountRuntime,
    m: &Inbound,
    chosen: Option<&str>,
) -> (String, Arc<Backend>) {
    let choice = conv.backends.choice(&rt.link.account);
    let owner = rt.link.owner.as_ref().is_some_and(|o| o == &m.sender);
    let stranger = (!owner)
        .then_some(choice.stranger_agent.as_deref())
        .flatten();
    // A stranger never reaches the owner's pick: `/agent` is the owner's command.
    let picked = if owner { chosen } else { None };
    for name in [stranger, picked, Some(choice.agent.as_str())]
        .into_iter()
        .flatten()
    {
        if let Some(b) = conv.backends.named(name) {
            return (name.to_string(), b);
        }
    }
    (DEFAULT_AGENT.to_string(), conv.backends.current())
}

/// The agent `m`'s chat picked, read on its own (a store error reads as none: the account's
/// agent answers).
pub(super) async fn chosen(conv: &Conversation, m: &Inbound) -> Option<String> {
    let (a, c) = (m.account.clone(), m.chat.clone());
    conv.store
        .call(move |t| chosen_in(t, &a, &c))
        .await
        .ok()
        .flatten()
}

/// The name of the agent that answers `m`'s sender in its chat now (`/agent`, `/status`).
pub(super) async fn now_answering(conv: &Conversation, rt: &AccountRuntime, m: &Inbound) -> String {
    let chosen = chosen(conv, m).await;
    answering(conv, rt, m, chosen.as_deref()).0
}

/// `/agent` (list) or `/agent NAME` (switch this chat): the words of the answer.
pub(super) async fn command(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    m: &Inbound,
    name: Option<&str>,
) -> AgentWords {
    let names = conv.backends.names();
    let current = now_answering(conv, rt, m).await;
    let Some(name) = name else {
        return AgentWords::List { current, names };
    };
    if !names.iter().any(|n| n == name) {
        return AgentWords::Unknown {
            name: name.to_string(),
            names,
        };
    }
    let (account, key, value) = (m.account.to_string(), state_name(&m.chat), name.to_string());
    let stored = conv
        .store
        .call(move |t| crate::store::state_within(t, &account, |s| s.put(&key, &value)))
        .await;
    match stored {
        Ok(()) => AgentWords::Switched {
            name: name.to_string(),
        },
        Err(e) => {
            tracing::error!(account = %m.account, error = %e, "cannot keep a chat's agent");
            AgentWords::NotKept {
                error: e.to_string(),
            }
        }
    }
}
