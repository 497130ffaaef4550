//! `scv-wechat`: a client for the WeChat iLink bot API (QR login, `getupdates` long polling,
//! `sendmessage`, typing) and, behind the `fake` feature, a faithful fake iLink server for tests.
//! It knows nothing of the bridge daemon: no policy, no store, no supervisor.
//!
//! The protocol is described in `shared/specs/wechat-ilink.md`; section numbers in comments
//! (§3.1 etc.) point there.
//!
//! # Layout
//!
//! - [`client`]: [`Client`], one async method per endpoint; every body's `ret`/`errcode` is
//!   checked, a long-poll timeout is an empty poll.
//! - [`classify`](mod@classify): [`classify()`] maps each outcome to [`ErrorClass`]: transient,
//!   fatal (re-login or not), or slow down.
//! - [`error`]: [`Error`], which says what failed and exposes [`Error::class`].
//! - [`endpoint`]: [`Endpoint`], paths and client timeouts.
//! - [`headers`]: the §1.1 headers (fresh `X-WECHAT-UIN` per request, client version) and `base_info`.
//! - [`types`]: request/response bodies, [`QrStatus`], [`LoginCredentials`], [`Updates`].
//! - [`login`]: [`login::run_login`], the whole QR login walk, and the status parsing.
//! - [`media`]: image/voice/file/video item payloads.
//! - [`message`]: [`WeixinMessage`] and its items, body text, own-message filter, dedupe key.
//! - [`token`]: [`BotToken`], which never prints.
//! - [`render_qr_terminal`]: the terminal QR renderer (shared, from `scv-net`).
//! - `fake` (feature `fake`): [`fake::FakeServer`] and its test handle.
//!
//! # Using it from an account task
//!
//! 1. Login: [`login::run_login`] with a token-less [`Client`] on
//!    [`types::DEFAULT_BASE_URL`]; store every field of the [`LoginCredentials`] (the token
//!    secret, `owner_user_id` is the owner).
//! 2. Run: `Client::new(creds.base_url(), Some(token))`, [`Client::notify_start`] (errors
//!    ignorable), then loop [`Client::get_updates`] with the stored cursor. For each batch:
//!    drop [`WeixinMessage::is_from_bot`], dedupe on [`WeixinMessage::dedupe_key`] (plus a
//!    short sender+text window for copies with new ids), store the messages and each
//!    sender's latest `context_token`, and only then store [`Updates::cursor`]: the server
//!    never replays. A `timed_out` result is a normal empty poll.
//! 3. Errors: [`Error::class`]. `Fatal { relogin: true }` (-14) means stop polling and ask
//!    for `login`; `SlowDown(d)` (send refused, `ret=-2`) means hold sends at least `d`;
//!    `Transient` means back off and retry with the same cursor.
//! 4. Send: [`Client::send_text`] with the peer's latest context token and a fresh
//!    [`new_client_id`] per chunk (the platform refuses a `client_id` it already accepted).
//! 5. Stop: drop the in-flight poll, then [`Client::notify_stop`].

pub mod cdn;
pub mod cdn_client;
pub mod classify;
pub mod client;
pub mod endpoint;
pub mod error;
pub mod headers;
mod lenient;
pub mod login;
pub mod media;
pub mod message;
mod qr_status;
pub mod token;
pub mod types;

#[cfg(feature = "fake")]
pub mod fake;

pub use classify::{ErrorClass, classify};
pub use client::{Client, new_client_id};
pub use endpoint::Endpoint;
pub use error::Error;
pub use message::WeixinMessage;
pub use scv_net::qr::render_qr_terminal;
pub use token::BotToken;
pub use types::{LoginCredentials, QrCodeTicket, QrStatus, TypingStatus, TypingTicket, Updates};
