//! Hooks other parts of the bridge plug into the pipeline: the mail chat and confirm answers.

use futures_util::future::BoxFuture;

use super::ids::ChatId;
use super::link::AccountLink;
use super::message::Inbound;
use crate::config::AccountKey;

/// Handles the owner's messages in a `purpose = "mail"` chat (`/digest`, `/reply N ...`).
///
/// Never given to a model; its text is never logged. Called once per journaled message (again
/// after a crash if it had not finished), so it must be idempotent per `msg.msg_id`.
pub trait MailChatHandler: Send + Sync + 'static {
    /// Handles one message.
    fn handle<'a>(&'a self, link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()>;
}

/// Claims messages that answer a pending question, so they bypass the agent and its queue.
pub trait AnswerInterceptor: Send + Sync + 'static {
    /// Whether this text is an answer it will handle. Sync and cheap (in memory): it runs for
    /// every inbound message before journaling.
    fn wants(&self, account: &AccountKey, chat: &ChatId, from_owner: bool, text: &str) -> bool;

    /// Handles a claimed message (at most once per message id; again after a crash).
    fn handle<'a>(&'a self, link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()>;
}
