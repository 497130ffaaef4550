//! The language a question's chat reads: the account's fixed `language`, else the one the chat's
//! messages showed (remembered by the conversation), else English.

use super::ConfirmService;
use crate::config::AccountKey;
use crate::conversation::ChatId;
use crate::words::{self, Lang};

impl ConfirmService {
    /// The language to write to `chat` of `account` in.
    pub(super) async fn lang_of(&self, account: &AccountKey, chat: &str) -> Lang {
        let setting = self.settings().languages.get(account).copied();
        if let Some(fixed) = setting.unwrap_or_default().fixed() {
            return fixed;
        }
        let (a, c) = (account.clone(), ChatId::new(chat.to_string()));
        match self.store.call(move |t| words::remembered(t, &a, &c)).await {
            Ok(lang) => lang.unwrap_or_default(),
            Err(e) => {
                tracing::warn!(account = %account, error = %e, "cannot read a chat's language");
                Lang::default()
            }
        }
    }
}
