//! Hooks other parts of the bridge plug into the pipeline: the mail chat, confirm answers, deliveries.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::journal::FastRoute;
use super::link::{AccountLink, Sent};
use super::message::Inbound;
use crate::agent::Approver;
use crate::config::AccountKey;
use crate::ids::ChatId;

/// Handles the owner's messages in a `purpose = "mail"` chat (`/digest`, `/reply N ...`).
///
/// Never given to a model; its text is never logged. Called once per journaled message (again
/// after a crash if it had not finished), so it must be idempotent per `msg.msg_id`.
pub trait MailChatHandler: Send + Sync + 'static {
    /// Handles one message.
    fn handle<'a>(&'a self, link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()>;

    /// Whether an owner's message in an ordinary chat (`purpose = "chat"`) is for the mail
    /// accounts reporting there (`/digest`, `/reply N ...`, the yes/no of a drafted reply)
    /// rather than for the agent. Sync and cheap: it runs before journaling.
    fn wants(&self, _account: &AccountKey, _chat: &ChatId, _text: &str) -> bool {
        false
    }
}

/// How an answer interceptor claims a message. What is open wins over what closed: the
/// pipeline gives a bare answer to an open mail-reply draft before a closed question's
/// "already answered", and asks which when two open things could take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerClaim {
    /// Not an answer it takes.
    None,
    /// An answer to an open question: one naming its code, or a bare one with questions pending.
    Open,
    /// A bare answer only a question closed a moment ago would take ("already answered").
    Closed,
}

impl AnswerClaim {
    /// The fast route of an owner's message, from this claim and whether the mail accounts
    /// reporting to the chat claim it (a command, or a bare yes/no while a drafted reply waits):
    /// an open question and an open draft both wanting a bare answer ask which; otherwise what is
    /// open takes it, and a closed question only what nothing open wants. `None`: neither.
    pub fn route(self, mail: bool) -> Option<FastRoute> {
        match (self, mail) {
            (AnswerClaim::Open, true) => Some(FastRoute::Which),
            (AnswerClaim::Open, false) => Some(FastRoute::Answer),
            (AnswerClaim::Closed | AnswerClaim::None, true) => Some(FastRoute::MailChat),
            (AnswerClaim::Closed, false) => Some(FastRoute::Answer),
            (AnswerClaim::None, false) => None,
        }
    }
}

/// Claims messages that answer a pending question, so they bypass the agent and its queue.
pub trait AnswerInterceptor: Send + Sync + 'static {
    /// Whether this text is an answer it will handle, and to what. Sync and cheap (in memory):
    /// it runs for every inbound message before journaling.
    fn claim(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        from_owner: bool,
        text: &str,
    ) -> AnswerClaim;

    /// The open questions of a chat as `(code, question)`, for asking which one a bare answer
    /// is for.
    fn open_questions(&self, account: &AccountKey, chat: &ChatId) -> Vec<(String, String)>;

    /// Handles a claimed message (at most once per message id; again after a crash).
    fn handle<'a>(&'a self, link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()>;
}

/// A yes/no button the owner pressed on a question, as the platform reported it (the adapter has
/// already checked that the presser is the account's owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ButtonPress {
    /// The account whose message carried the button.
    pub account: AccountKey,
    /// The question id the button carries (`q-N`).
    pub question_id: String,
    /// Yes or no.
    pub yes: bool,
    /// Who pressed.
    pub operator: crate::ids::SenderId,
}

/// What became of a press: the question as it reads now, for the platform to show in place of
/// the pressed message.
#[derive(Debug, Clone, PartialEq)]
pub enum PressOutcome {
    /// The answer is recorded; the question now reads as this body.
    Recorded(super::Body),
    /// The question was already answered, expired or withdrawn (or is not this account's); how
    /// it ended, when known.
    NotOpen(Option<super::Body>),
}

/// Answers button presses on questions (the confirm service); lent to adapters by their port.
/// Must answer quickly (a platform waits on it): store the answer and return.
pub trait ButtonAnswers: Send + Sync + 'static {
    /// Records one press (repeats are the adapter's to drop) and says how the question reads.
    fn press(&self, press: ButtonPress) -> BoxFuture<'_, PressOutcome>;
}

/// Learns what the platform said about items as they go out (confirm questions: the card's
/// message id and the chat the owner answers from).
pub trait DeliveryObserver: Send + Sync + 'static {
    /// Called after the item queued under `key` (a piece key, `<key>/<n>`) is marked sent. The
    /// chat's sender waits for it, so it must be quick. A crash between the two skips the call:
    /// an observer that must know also reads [`super::Conversation::delivery`].
    fn delivered<'a>(
        &'a self,
        account: &'a AccountKey,
        key: &'a str,
        sent: &'a Sent,
    ) -> BoxFuture<'a, ()>;
}

/// Who plugs into the pipeline, given when it is built (none of them can change afterwards).
#[derive(Clone, Default)]
pub struct Hooks {
    /// Claims answers to pending questions before they are journaled (the confirm service).
    pub answers: Option<Arc<dyn AnswerInterceptor>>,
    /// Asks the owner before a tool runs on `approvals = "ask"` accounts.
    pub approver: Option<Arc<dyn Approver>>,
    /// Learns what the platform said about items as they go out (confirm questions).
    pub deliveries: Option<Arc<dyn DeliveryObserver>>,
    /// What `/status` reports about the whole bridge (its second line); `Bridge::Running` without.
    pub status_line: Option<Arc<dyn Fn() -> crate::words::Bridge + Send + Sync>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_open_takes_a_bare_answer_before_what_closed() {
        use AnswerClaim as C;
        use FastRoute as R;
        let table = [
            (C::Open, true, Some(R::Which)),
            (C::Open, false, Some(R::Answer)),
            (C::Closed, true, Some(R::MailChat)),
            (C::Closed, false, Some(R::Answer)),
            (C::None, true, Some(R::MailChat)),
            (C::None, false, None),
        ];
        for (claim, mail, route) in table {
            assert_eq!(claim.route(mail), route, "{claim:?} mail={mail}");
        }
    }
}
