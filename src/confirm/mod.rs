//! Owner questions: ask, deliver, read answers, deadlines, withdrawal, and `scv-bridge confirm`.
//!
//! A question is stored before `confirm_ask` answers, then queued in the conversation outbox under
//! a key derived from its id, so a restart re-queues it without ever sending it twice. Answers are
//! claimed before journaling (`AnswerInterceptor::wants`, in memory) and take the fast lane, so
//! they never wait behind an agent turn and never reach the agent. One loop per service moves
//! questions to `withdrawn`, `expired` or `failed` on time; `confirm_status` applies the same
//! rules before answering, so what a poller sees never depends on when the loop last ran.
//!
//! The question goes out as a typed body (`conversation::body`) that each adapter renders (a
//! card with buttons on Feishu, the text with its code on WeChat); what this module decides, it
//! decides by the account's capabilities, never by its platform. When the question goes out, the
//! platform's message id and the chat it landed in are stored with it (the owner answers from
//! that chat). When it closes by a text answer, expiry, withdrawal or failure on an account that
//! can edit, an update of the question is queued in the outbox under one key per question, so it
//! survives a restart and is done once; a message the platform will not update gets a new one.
//! Elsewhere a closing notice is sent. A click is answered with the closed body in the callback
//! response instead, so it queues nothing.

mod buttons;
pub mod cli;
mod db;
mod index;
mod parse;
mod question;
pub(crate) mod route;
mod service;
mod text;

pub use crate::clock::Clock;
pub use parse::{TextAnswer, parse as parse_answer};
pub use route::{CapabilityLookup, Route};
pub use service::{
    AnswerOutcome, CONSOLE_ANSWERER, ConfirmError, ConfirmParts, ConfirmService, ConfirmSettings,
    OpenQuestion, QuestionView,
};
pub use text::deadline_in;

/// How long a question waits when the asker names no timeout (seconds).
pub const DEFAULT_TIMEOUT_SECS: u64 = 1800;
/// The longest a question may wait (seconds); more is refused, not clamped.
pub const MAX_TIMEOUT_SECS: u64 = 14_400;
/// A question nobody asks about for this long is withdrawn (seconds).
pub const WITHDRAW_AFTER_SECS: u64 = index::WITHDRAW_AFTER_MS / 1000;
/// What the account's health says while a question waits for a send window (WeChat, QQ).
pub const WINDOW_NOTE: &str =
    "a question waits for the chat's send window (the bot may write once the owner writes)";
/// What the account's health says while a question on another platform waits to be sent.
pub const WAITING_NOTE: &str = "a question waits to be sent";
