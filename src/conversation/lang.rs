//! Which language the bridge writes to a chat in: the account's fixed `language`, else what the
//! chat's messages show (remembered in the store, so a restart keeps it), else English.

use super::message::Inbound;
use super::{AccountRuntime, Conversation};
use crate::config::AccountKey;
use crate::ids::ChatId;
use crate::words::{self, Lang};

/// The language for answering `m`; under `auto` a message that shows a language (see
/// [`words::detect`]) changes the chat's remembered one.
pub(super) async fn of_chat(conv: &Conversation, rt: &AccountRuntime, m: &Inbound) -> Lang {
    if let Some(fixed) = rt.link.language.fixed() {
        return fixed;
    }
    let (a, c, seen) = (m.account.clone(), m.chat.clone(), words::detect(&m.text));
    conv.store
        .call(move |t| Ok(chosen_in(t, &a, &c, seen)))
        .await
        .unwrap_or_else(|_| seen.unwrap_or_default())
}

/// [`of_chat`] under `auto`, inside a store call (the turn worker reads it with the chat's next
/// message): `seen` is what [`words::detect`] found in the message.
pub(super) fn chosen_in(
    t: &rusqlite::Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
    seen: Option<Lang>,
) -> Lang {
    let chosen = match seen {
        Some(lang) => words::remember(t, account, chat, lang).map(|()| Some(lang)),
        None => words::remembered(t, account, chat),
    };
    match chosen {
        Ok(lang) => lang.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(account = %account, error = %e, "cannot read or keep a chat's language");
            seen.unwrap_or_default()
        }
    }
}
