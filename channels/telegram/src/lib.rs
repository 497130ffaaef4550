//! `scv-telegram`: a client for the Telegram Bot API over long polling (`getUpdates`, the send
//! and edit calls, drafts, inline keyboards, files both ways) and, behind the `fake` feature, a
//! faithful fake Bot API server for tests. It knows nothing of the bridge daemon: no policy,
//! no store, no supervisor.
//!
//! The protocol is described in `shared/specs/telegram.md`; section numbers in comments (§1.2
//! etc.) point there.
//!
//! # Layout
//!
//! - [`client`]: [`Client`], the request shape, the `{ok, result}` envelope, `getMe`, the long
//!   poll, `deleteWebhook`, `getWebhookInfo`.
//! - [`update`]: [`Update`], [`UpdateKind`], [`Batch`] and the [`Offset`] cursor.
//! - [`types`]: the platform's objects ([`Message`], [`CallbackQuery`], [`BotInfo`], ...).
//! - [`message`]: a message's dedupe key, body, media, command, and whether it addresses the bot.
//! - [`send`]: text, edits, drafts, typing, keyboards, button answers, the command menu.
//! - [`media`]: `getFile`, downloads under a cap, multipart uploads, safe file names.
//! - [`text`]: HTML escaping and UTF-16 lengths, as the platform counts.
//! - [`limits`]: the platform's limits and paces, shared with the fake.
//! - [`classify`](mod@classify) and [`error`]: [`Error`] and its one mapping to [`ErrorClass`].
//! - [`login`]: [`login::check_login`], the token check of `login telegram`.
//! - [`token`]: [`BotToken`], which never prints.
//! - [`webhook`]: `setWebhook` with a [`webhook::WebhookSecret`], and checking a delivery.
//! - `fake` (feature `fake`): `fake::FakeServer` and its test handle.
//!
//! # Using it from an account task
//!
//! 1. Login: [`login::check_login`] with [`DEFAULT_BASE_URL`] and the pasted token; store the
//!    token (secret) and the [`BotInfo`] (`id`, `username`).
//! 2. Start: `Client::new(base, token)`, [`Client::get_me`] as the probe (a `Fatal` class stops
//!    the account with its hint), [`Client::set_commands`] per language.
//! 3. Receive: loop [`Client::get_updates`] with the stored [`Offset`] (start:
//!    [`Offset::START`]; never anything negative). For each [`Batch`]: journal every update
//!    keyed on [`Update::dedupe_key`] (a replay after a crash brings the same ids; messages
//!    also have [`Message::dedupe_key`]); only when the whole batch is durable, store
//!    `batch.next_offset(current)` and poll with it: that call confirms the batch to the
//!    server, which until then keeps it and would send it again. Act on updates after
//!    journaling. `UpdateKind::EditedMessage` is not a new prompt; `Other` and `Unreadable`
//!    are journaled (so the offset moves) and dropped with a reason.
//!    On shutdown: drop the in-flight poll (a second `getUpdates` would end it with 409),
//!    store the offset, then [`Client::confirm`] it.
//! 4. Senders: in groups act only on [`Message::addresses`]; always match the owner on
//!    `from.id`. Buttons: [`Client::answer_callback`] at once, check the presser, then
//!    [`Client::edit_keyboard`] / [`Client::edit_text`] to show the outcome.
//! 5. Send: [`Client::send_text`] per chunk of at most [`limits::MAX_TEXT_UTF16`] (count with
//!    [`text::utf16_len`] on the visible text), paced by [`limits::CHAT_SEND_INTERVAL`] per chat
//!    and [`limits::GROUP_SENDS_PER_MINUTE`] per group. Stream in private chats by
//!    [`Client::send_draft`] at most every [`limits::DRAFT_MIN_INTERVAL`] then one
//!    `send_text`; in groups (or after `DraftRefused`) by `send_text` then [`Client::edit_text`]
//!    every [`limits::EDIT_MIN_INTERVAL_GROUP`]. Typing: [`Client::send_chat_action`] every
//!    [`limits::TYPING_REPEAT`].
//! 6. Media: [`Message::media`] → [`Client::get_file`] → [`Client::download`] into the inbox
//!    under the cap; out: [`Client::send_file`].
//! 7. Errors: [`Error::class`]. `Transient`: back off 1 → 64 s with jitter, same offset.
//!    `SlowDown(d)`: wait exactly `d`, no backoff increase. `Fatal { reason, .. }`: stop the
//!    account with [`FatalReason::hint`]; for `WebhookSet` call [`Client::delete_webhook`]
//!    once first, for `OtherPoller` do not retry in a loop. `Rejected(r)`: this request only;
//!    see [`Rejection`] for the one fix-up each allows.
//! 8. Webhook instead of polling (only where an account is configured so):
//!    [`Client::set_webhook`] with a stored [`webhook::WebhookSecret`]; per delivery
//!    [`webhook::read_delivery`], journal, then answer 200 (non-2xx makes the platform retry).
//!    The journal dedupes on [`Update::dedupe_key`] as for polls.

#![warn(missing_docs)]

pub mod classify;
pub mod client;
pub mod error;
pub mod limits;
pub mod login;
pub mod media;
pub mod message;
pub mod method;
pub mod send;
pub mod text;
pub mod token;
pub mod types;
pub mod update;
pub mod webhook;

#[cfg(feature = "fake")]
pub mod fake;

pub use classify::{ErrorClass, FatalReason, Rejection, classify};
pub use client::{Client, DEFAULT_BASE_URL};
pub use error::Error;
pub use media::UploadKind;
pub use message::{InboundMedia, MediaKind};
pub use method::Method;
pub use send::{ChatAction, Edited, Keyboard, OutgoingText, ParseMode};
pub use token::BotToken;
pub use types::{BotInfo, CallbackQuery, Chat, Message, User};
pub use update::{Batch, Offset, Update, UpdateKind};
