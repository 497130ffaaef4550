//! `scv-qq`: a client for the QQ official bot platform (API v2; one-to-one C2C chats and group
//! messages that @ the bot) and, behind the `fake` feature, a faithful fake QQ open platform for
//! tests. It knows nothing of the bridge daemon: no store, no policy, no supervisor.
//!
//! The protocol is described in `shared/specs/qq-bot.md`; section numbers in comments (§1.3
//! etc.) point there. Where the spec says **unconfirmed**, the code takes the safe side and the
//! comment says so.
//!
//! # Layout
//!
//! - [`secret`]: [`Secret`] (prints `[redacted]`) and [`Credentials`] (AppID + AppSecret).
//! - [`limits`]: the platform's limits and windows as constants (text size, file sizes, reply
//!   windows and budget, rate-limit waits, intents).
//! - [`error`] and [`classify`](mod@classify): the one [`Error`] type and the one table from it
//!   to [`ErrorClass`] (transient / slow down for exactly D / rejected this message / fatal).
//! - [`token`]: the access-token cache (`expires_in` as string or number; refresh in the last minute).
//! - `answer`: reading one HTTP answer (capped body, the success rule, short error texts),
//!   below both the token fetch and the client.
//! - [`client`]: [`Client`], the OpenAPI calls with refresh-and-retry-once on a stale token;
//!   [`Client::check_login`] is the login check.
//! - [`send`]: passive replies ([`Target`], [`Reply`] = trigger + `msg_seq`, [`Body`]) and click
//!   acknowledgements.
//! - [`window`]: [`window::ReplyBudget`], one trigger's window, reply count and next `msg_seq`.
//! - [`chunked`]: the block-by-block upload for files over the inline limit.
//! - [`media`]: uploads for a target and attachment downloads under a cap.
//! - [`text`]: links defanged (the platform refuses URLs).
//! - [`event`]: dispatch payloads parsed into [`Event`] (messages, clicks, other events).
//! - [`gateway`]: the WebSocket with Hello, Identify/Resume, heartbeats, close-code handling and
//!   the commit-after-journal cursor.
//! - [`webhook`]: the webhook fallback: signature check before reading, validation answer, ack.
//! - `fake` (feature `fake`): `fake::FakeQq`, a fake platform on loopback, and its test handle.
//!
//! # Using it from an account task
//!
//! 1. Login (`login qq ACCOUNT`): build a [`Client`] from [`ClientOptions::new`] with the AppID
//!    and AppSecret, call [`Client::check_login`]; on `Ok(bot)` store the credentials and the
//!    bot's id. `Fatal(BadCredentials)` means the AppID or AppSecret is wrong.
//! 2. Run: a [`gateway::Gateway`] with the persisted cursor in
//!    [`gateway::GatewayOptions::resume_from`], and `run` it with an mpsc sender. For each
//!    [`gateway::Inbound`]:
//!    - `Event(d)`: dedupe on [`gateway::Delivery::dedupe_key`] (keep ids ≥ 24 h,
//!      [`limits::DEDUPE_WINDOW`]), drop messages that are not [`event::Message::wanted`],
//!      download attachments at once ([`Client::download`]), **journal** the message with its
//!      [`window::ReplyBudget`], and only then persist `d.cursor` and call
//!      [`gateway::Gateway::commit`]. There is no per-event ack: the cursor is the ack.
//!    - `Ready { cursor, .. }`: persist the cursor; the link is healthy.
//!    - `SessionLost { .. }`: say in status that events may have been missed in the gap.
//!    - Clicks: [`Client::ack_interaction`] at once (owner's press `Ok`, others `NoPermission`),
//!      journal, commit.
//!
//!    Health: [`gateway::Gateway::status`] publishes [`gateway::LinkStatus`]; `last_evidence`
//!    moves with every frame and heartbeat ACK (protocol evidence), and a link whose heartbeat
//!    goes unanswered is replaced by the gateway itself. A `Fatal` error ends `run`.
//!
//!    Webhook mode instead of the gateway: the daemon's HTTPS listener hands the two signature
//!    headers and the raw body to [`webhook::WebhookKey::open`] (refuse with 401 on `Err`),
//!    answers a validation with its JSON, and journals a dispatch before answering
//!    [`webhook::ack_body`]`(true)`; dedupe as above on the message id.
//! 3. Send: only as a reply. For each journaled trigger keep a [`window::ReplyBudget`]
//!    (persisted with the message) and take each [`send::Reply`] from it: `msg_seq` 1, 2, 3…,
//!    at most [`limits::REPLIES_PER_MESSAGE`], inside [`event::Scene::reply_window`]. Text goes
//!    through [`text::defang_links`] and the daemon's splitter with [`limits::MAX_TEXT_CHARS`];
//!    at most [`limits::MAX_ANSWER_CHUNKS`] chunks per answer. Anything with no open window waits
//!    in the queue until the owner next writes. No streaming is documented: send whole answers
//!    (typing, `Body::Typing`, in C2C while working). Media: [`Client::upload`] for the same
//!    target, then `Body::Media`.
//! 4. Errors: [`Error::class`]. `Transient`: back off, retry with a **new** `msg_seq`.
//!    `SlowDown(d)`: hold sends exactly `d`. `Rejected(NeedsTrigger | WindowClosed)`: queue
//!    for the next owner message; `Rejected(DuplicateSeq)`: once more with the next `msg_seq`;
//!    `Rejected(Url | Permission)`: re-render as plain text without links; other `Rejected`:
//!    drop it with a note. `Fatal(f)`: stop; [`classify::Fatal::relogin`] says whether `login`
//!    fixes it, [`classify::Fatal::hint`] what to do otherwise.
//! 5. Stop: cancel the gateway's token; commits already made are the resume point.

#![warn(missing_docs)]

mod answer;
pub mod chunked;
pub mod classify;
pub mod client;
pub mod error;
pub mod event;
pub mod gateway;
pub mod limits;
pub mod media;
pub mod secret;
pub mod send;
pub mod text;
pub mod token;
pub mod webhook;
pub mod window;

#[cfg(feature = "fake")]
pub mod fake;

pub use classify::{ErrorClass, Fatal, Rejection, classify};
pub use client::{BotIdentity, Client, ClientOptions};
pub use error::{Call, Error};
pub use event::{Event, Message, Scene};
pub use media::{FileType, MediaSource, Uploaded};
pub use secret::{Credentials, Secret};
pub use send::{Body, Button, ClickResult, Reply, SentMessage, Target, Trigger};
