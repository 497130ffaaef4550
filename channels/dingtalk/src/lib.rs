//! `scv-dingtalk`: a client for DingTalk (钉钉) enterprise-internal robots over Stream mode
//! (access tokens, the Stream WebSocket with its ACKs, robot sends, session webhooks, AI cards,
//! media) and, behind the `fake` feature, a faithful fake DingTalk for tests.
//! It knows nothing of the bridge daemon: no policy, no store, no supervisor.
//!
//! The protocol is described in `shared/specs/dingtalk-stream.md`; section numbers in comments
//! (§1.6 etc.) point there.
//!
//! # Layout
//!
//! - [`secret`]: [`Secret`] (prints `[redacted]`) and [`Credentials`].
//! - [`limits`]: the platform's limits and the pace to keep, as constants.
//! - [`call`], [`error`], [`classify`](mod@classify): [`Error`] and its one mapping to
//!   [`ErrorClass`] (transient / slow down for exactly D / rejected / fatal with a hint).
//! - [`client`]: [`Client`], the token cache, the login check.
//! - [`stream`]: the Stream connection: tickets, frames, ACK handles, warm reconnect, watchdog.
//! - [`message`]: robot messages: body, owner key, dedupe key, self-echo, reply webhook.
//! - [`callback`]: card button presses and the ACK answer that updates the card.
//! - [`send`]: session-webhook replies and robot sends (one-to-one, group).
//! - [`markdown`]: DingTalk's dialect, titles and chunking.
//! - [`card`]: AI cards (create, stream, finish).
//! - [`confirm`]: yes/no questions without a template, and reading the answers.
//! - [`media`]: uploads, downloads under a cap, safe file names.
//! - [`emotion`]: the optional "thinking" reaction on the user's message.
//! - `fake` (feature `fake`): [`fake::FakeDingTalk`] and its test handle.
//!
//! # Using it from an account task
//!
//! 1. Login: build a [`Client`] from the client id and secret the owner typed and call
//!    [`Client::check_login`]; on `Ok(BotIdentity)` store the credentials. On error,
//!    [`Error::class`] is `Fatal(reason)` with [`FatalReason::hint`] to show.
//! 2. Receive: run [`stream::StreamConnection::run`] with an `mpsc` sender and a cancel token.
//!    For each [`stream::Delivery`]: `parse()` it; for a [`message::RobotMessage`], skip it if
//!    [`message::RobotMessage::dedupe_key`] is already journaled; drop
//!    [`message::RobotMessage::is_from_bot`] and foreign-corp messages with a reason; **journal
//!    it, then `delivery.ack.ack(AckReply::Done)` at once** (robot messages are never
//!    re-pushed, so the journal is the only copy: ACK within [`limits::ACK_TARGET`]); do the
//!    slow work after. An unreadable payload is ACKed too (it never reads better), after
//!    counting the drop. A card press ([`callback::CardCallback`]): check
//!    [`callback::CardCallback::owner_key`] and that the `out_track_id` is an open question
//!    (first answer wins), journal the answer, then ACK with
//!    `AckReply::Card(callback::card_update(..))` so the card shows the outcome.
//! 3. Owner: [`message::RobotMessage::owner_key`] (corp id + staff id; `None` for non-org
//!    senders, who are never the owner). Pair only in a direct message.
//! 4. Send: while [`message::RobotMessage::session_webhook`] lives,
//!    [`Client::reply_by_webhook`]; on [`Error::WebhookExpired`] or for anything else
//!    [`Client::send_to_user`] / [`Client::send_to_group`]. Render with [`markdown::render`],
//!    split with [`markdown::chunk`] at [`limits::MARKDOWN_CHUNK_CHARS`], title with
//!    [`markdown::title`]. Store [`send::Sent::process_query_key`] as the outbound id.
//! 5. Stream an answer: with a configured [`card::CardTemplate`], [`card::AnswerCard::start`],
//!    then `update` with the whole text so far at most every [`limits::CARD_UPDATE_INTERVAL`],
//!    `finish` at the end (journal `out_track_id` while open; after a restart `resume` +
//!    `finish`). On an error where [`Error::card_should_degrade`] holds, send whole markdown
//!    for [`limits::CARD_DEGRADE_FOR`]. Without a template: whole markdown answers.
//! 6. Confirm: [`confirm::yes_no_markdown`] (webhook or robot API) or
//!    [`confirm::yes_no_buttons`] (robot API), then [`confirm::parse_answer`] on the owner's
//!    next text (the links and buttons send "yes #qid" as the owner).
//! 7. Media: [`Client::download`] with the body's download code and the inbox cap (name it
//!    with [`media::safe_file_name`]); [`Client::upload`] then an [`send::Outgoing`] with
//!    the `media_id`.
//! 8. Errors: [`Error::class`]. `Transient`: back off and retry. `SlowDown(d)`: hold that kind
//!    of call for `d` (not a failure). `Rejected`: this item never goes; send something else
//!    or drop it with a reason. `Fatal(r)`: stop the account and show `r.hint()`;
//!    `r.relogin()` says whether `login dingtalk` is the fix.

#![warn(missing_docs)]

pub mod call;
pub mod callback;
pub mod card;
pub mod classify;
pub mod client;
pub mod confirm;
pub mod emotion;
pub mod error;
mod http;
pub mod limits;
mod login;
pub mod markdown;
pub mod media;
pub mod message;
pub mod secret;
pub mod send;
pub mod stream;
mod token;

#[cfg(feature = "fake")]
pub mod fake;

pub use call::Call;
pub use classify::{ErrorClass, FatalReason, classify};
pub use client::{BotIdentity, Client, ClientOptions};
pub use error::{Error, NotSent};
pub use secret::{Credentials, Secret};
