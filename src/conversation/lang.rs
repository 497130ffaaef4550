//! Which language the bridge writes to a chat in: the account's fixed `language`, else what the
//! chat's messages show (remembered in the store, so a restart keeps it), else English.

use super::message::Inbound;
use super::{AccountRuntime, Conversation};
use crate::words::{self, Lang};

/// The language for answering `m`; under `auto` a message that shows a language (see
/// [`words::detect`]) changes the chat's remembered one.
pub(super) async fn of_chat(conv: &Conversation, rt: &AccountRuntime, m: &Inbound) -> Lang {
    if let Some(fixed) = rt.link.language.fixed() {
        return fixed;
    }
    let (a, c, seen) = (m.account.clone(), m.chat.clone(), words::detect(&m.text));
    let chosen = conv
        .store
        .call(move |t| match seen {
            Some(lang) => words::remember(t, &a, &c, lang).map(|()| Some(lang)),
            None => words::remembered(t, &a, &c),
        })
        .await;
    match chosen {
        Ok(lang) => lang.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(account = %m.account, error = %e, "cannot read or keep a chat's language");
            seen.unwrap_or_default()
        }
    }
}
