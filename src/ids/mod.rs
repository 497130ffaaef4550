//! Identity: the typed names every layer shares (platform, account, chat, sender, message,
//! question, outbox key, delivery state).
//!
//! A leaf: it imports nothing of the daemon, so any module may use it without an arrow back up.
//! The spellings here are stored in the journal and on the wire; they must stay byte-stable.

mod account;
mod chat;
mod outbox;

pub use account::{AccountKey, Channel, valid_account_name};
pub use chat::{ChatId, PlatformMsgId, SenderId};
pub use outbox::{DeliveryState, OutboxKey, QuestionId};
