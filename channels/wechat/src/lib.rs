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
//! - [`classify`]: [`classify()`] maps each outcome to [`ErrorClass`]: transient,
//!   fatal (re-login or not), or slow down.
//! - [`error`]: [`Error`], which says what failed and exposes [`Error::class`].
//! - [`endpoint`]: [`Endpoint`], paths and client timeouts.
//! - [`headers`]: the §1.1 headers (fresh `X-WECHAT-UIN` per request, client version) and `base_info`.
//! - [`types`]: request/response bodies, [`QrStatus`], [`LoginCredentials`], [`Updates`].
//! - [`login`]: [`login::run_login`], the whole QR login walk, and the status parsing.
//! - [`media`]: image/voice/file/video item payloads.
//! - [`message`]: [`WeixinMessage`] and its items, body text, own-message filter, dedupe key.
//! - [`token`]: [`BotToken`], which never prints.
//! - [`qr`]: the terminal QR renderer for `scv-bridge login wechat`.
//! - `fake` (feature `fake`): [`fake::FakeServer`] and its test handle.

pub mod classify;
pub mod client;
pub mod endpoint;
pub mod error;
pub mod headers;
mod lenient;
pub mod login;
pub mod media;
pub mod message;
pub mod qr;
pub mod token;
pub mod types;

#[cfg(feature = "fake")]
pub mod fake;

pub use classify::{ErrorClass, classify};
pub use client::{Client, new_client_id};
pub use endpoint::Endpoint;
pub use error::Error;
pub use message::WeixinMessage;
pub use qr::render_qr_terminal;
pub use token::BotToken;
pub use types::{LoginCredentials, QrCodeTicket, QrStatus, TypingStatus, TypingTicket, Updates};
