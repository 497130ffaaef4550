//! What a platform that speaks through other accounts borrows from the pipeline: mail writes no
//! chat of its own, so its digests and its mail-chat answers go out through the account its
//! `report_to` names, to that account's owner. The port lends the few calls this takes and
//! nothing more: no attach, no journal, no other account's secrets.

use std::sync::Arc;

use crate::config::AccountKey;
use crate::conversation::{Body, ChatId, Conversation, MailChatHandler};
use crate::ids::DeliveryState;
use crate::secrets::{CredentialStore, SecretsError};
use crate::store::StoreError;

/// The pipeline, as a platform speaking through other accounts sees it; cheap to clone.
#[derive(Clone)]
pub struct Relay(Arc<Conversation>);

impl Relay {
    pub(super) fn new(conversation: Arc<Conversation>) -> Self {
        Relay(conversation)
    }

    /// Queues `text` into `chat` of `account` (another account), idempotent by `key`.
    pub async fn send_proactive(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        text: &str,
        body: Option<&Body>,
        key: &str,
    ) -> Result<(), StoreError> {
        self.0.send_proactive(account, chat, text, body, key).await
    }

    /// Where the message queued under `key` stands (`None`: nothing was queued under it).
    pub async fn delivery_state(&self, key: &str) -> Result<Option<DeliveryState>, StoreError> {
        self.0.delivery_state(key).await
    }

    /// Hands the mail chat's messages (the owner's `/digest`, `/reply`, yes and no) to `h`.
    pub fn set_mail_chat_handler(&self, h: Arc<dyn MailChatHandler>) {
        self.0.set_mail_chat_handler(h)
    }
}

/// Who owns each account, read from its stored login: a platform that writes to another
/// account's owner (mail's digests) learns the owner here, never that login's secrets.
#[derive(Clone)]
pub struct Owners(CredentialStore);

/// What [`Owners::load`] keeps of a stored login: its owner.
pub struct Owned(Option<String>);

impl Owned {
    /// The owner the login names (`secrets::OWNER_FIELD`), if any.
    pub fn owner(self) -> Option<String> {
        self.0
    }
}

impl Owners {
    pub(super) fn new(credentials: CredentialStore) -> Self {
        Owners(credentials)
    }

    /// The stored login of `account` (`<channel>:<account>`) as far as its owner goes; `None`
    /// when nothing is stored. Blocking (the keyring): call it off the runtime's threads.
    pub fn load(&self, account: &str) -> Result<Option<Owned>, SecretsError> {
        Ok(self.0.load(account)?.map(|c| Owned(c.owner())))
    }
}
