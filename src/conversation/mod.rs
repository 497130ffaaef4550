//! The conversation pipeline: inbound → journal → policy → agent → outbox → platform.
//!
//! No code here branches on the platform: adapters produce [`Inbound`] and consume [`Outbound`].

mod ids;
mod link;
mod message;

pub use ids::{ChatId, PlatformMsgId, SenderId};
pub use link::{AccountLink, ChatSender, SendError, SendLimits};
pub use message::{Inbound, Outbound, OutboundKind, ReplyContext};
