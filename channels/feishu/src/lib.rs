//! `scv-feishu`: a client for the Feishu / Lark open platform bot (tenant token cache, the
//! WebSocket long connection with its protobuf frames, the HTTP callback mode, REST messages
//! and cards) and, behind the `fake` feature, a faithful fake Feishu for tests.
//! It knows nothing of the bridge daemon: no policy, no store, no supervisor.
//!
//! # Layout
//!
//! - [`domain`]: `feishu` | `lark` | a base URL.
//! - [`secret`]: [`Secret`] (prints `[redacted]`) and app [`Credentials`].
//! - [`error`] and [`classify`]: the one [`Error`] type and its mapping to [`ErrorClass`].
//! - [`token`]: the tenant_access_token cache.
//! - [`rest`]: [`Client`], the OpenAPI calls (send, reply, patch card, bot info, app owner).
//! - [`frame`]: the `pbbp2.Frame` protobuf codec.
//! - [`ws`]: the long connection: endpoint discovery, ping/pong, watchdog, reassembly,
//!   caller-driven ACKs, reconnect.
//! - [`event`]: parsing of the v2 event envelope, `im.message.receive_v1`, `card.action.trigger`.
//! - [`media`]: message resources downloaded to a file under a size cap; image and file
//!   uploads streamed from disk; image and file messages.
//! - [`card`]: the yes/no card and its answered / expired / withdrawn variants.
//! - [`cardkit`]: CardKit card entities that fill in while an answer is written.
//! - [`webhook`]: the HTTP callback mode (url_verification, decryption, signatures).
//! - [`registration`]: "scan to create an app", the accounts host's device-code flow.
//! - `webhook_server` (feature `webhook-server`): an axum router serving the callback mode.
//! - `fake` (feature `fake`): a fake Feishu server with a test handle.

#![warn(missing_docs)]

pub mod card;
pub mod cardkit;
pub mod classify;
pub mod domain;
pub mod error;
pub mod event;
pub mod frame;
pub mod media;
pub mod reaction;
pub mod registration;
mod response;
pub mod rest;
pub mod secret;
pub mod token;
pub mod webhook;
pub mod ws;

#[cfg(feature = "fake")]
pub mod fake;
#[cfg(feature = "webhook-server")]
pub mod webhook_server;

pub use classify::{ErrorClass, FatalReason, classify};
pub use domain::Domain;
pub use error::Error;
pub use rest::{Client, ClientOptions, MessageContent, ReceiveId, SentMessage};
pub use secret::{AppSecret, Credentials, Secret};
