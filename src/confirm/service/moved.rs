//! A question whose message moved to the owner's next route (`owner/mover.rs` moved the
//! outbox item): the question follows it, so the owner answers where it now is, and the chat it
//! left no longer takes an answer for it.

use super::super::db;
use super::super::index::FIRST_CHECK_MS;
use super::ConfirmService;
use crate::config::AccountKey;
use crate::conversation::ChatId;
use crate::store::StoreError;

impl ConfirmService {
    /// The message queued under `from_key` moved to `account`'s `chat` as `copy_key`; when it
    /// asked a pending question, the question now lives there. Returns whether one moved.
    pub async fn moved(
        &self,
        from_key: &str,
        account: &AccountKey,
        chat: &ChatId,
        copy_key: &str,
    ) -> Result<bool, StoreError> {
        let seq = self
            .lock()
            .all()
            .find(|q| q.row.message_key == from_key)
            .map(|q| q.row.seq);
        let Some(seq) = seq else {
            return Ok(false);
        };
        let (a, c, k) = (
            account.to_string(),
            chat.as_str().to_string(),
            copy_key.to_string(),
        );
        let moved = self
            .store
            .call(move |t| db::move_to(t, seq, &a, &c, &k))
            .await?;
        if !moved {
            return Ok(false);
        }
        let now = self.clock.now_ms();
        if let Some(q) = self.lock().get_mut(seq) {
            q.row.account = account.to_string();
            q.row.chat = chat.as_str().to_string();
            q.row.message_key = copy_key.to_string();
            q.row.platform_msg = None;
            q.row.platform_chat = None;
            q.account = Some(account.clone());
            q.delivered = false;
            q.next_check_ms = now + FIRST_CHECK_MS;
        }
        self.wake.notify_one();
        self.changed();
        Ok(true)
    }
}
