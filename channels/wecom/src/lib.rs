//! `scv-wecom`: a client for the WeCom (企业微信) AI bot (智能机器人) over its official long
//! connection, and, behind the `fake` feature, a faithful fake of the platform for tests.
//! It knows nothing of the bridge daemon: no store, no policy, no supervisor.
//!
//! The protocol is `shared/specs/wecom-aibot.md`; section numbers in comments (§1.3 etc.)
//! point there. Where the spec says unconfirmed, the code takes the safe side and says so.
//!
//! # Layout
//!
//! - [`secret`]: [`Credentials`] (bot id + [`BotSecret`], which never prints).
//! - [`limits`]: every limit, window and pace of §6 as a constant.
//! - [`frame`]: the JSON frames, control-byte cleaning (§1.2), request ids.
//! - [`connection`]: [`Connection`]: dial, subscribe, heartbeat, reconnect, superseded and
//!   refused-credential stops, commands answered by `req_id`, one at a time per handle.
//! - [`delivery`]: [`Delivery`] (one callback and its raw frame) and [`ReplyHandle`].
//! - [`message`]: callback bodies, the dedupe key, the group mention strip.
//! - [`reply`]: replies on a handle, streams ([`StreamReply`]), welcome, card updates,
//!   proactive sends, and the fallback from one to the other.
//! - [`card`]: the yes/no `button_interaction` card and the card that replaces it.
//! - [`media`]: inbound download + AES-256-CBC decryption; chunked upload and media sends.
//! - [`text`]: splitting markdown at the platform's size.
//! - [`pace`]: [`pace::SendPacer`], the proactive-send pace (2 s, 30/min, 1000/h).
//! - [`login`]: the credential check behind `login wecom ACCOUNT`.
//! - [`error`] and [`classify`](mod@classify): the one [`Error`] and its [`ErrorClass`].
//! - `fake` (feature `fake`): [`fake::FakeWeCom`], a loopback WeCom with a test handle.
//!
//! # Using it from an account task
//!
//! 1. Login: [`login::check`] with the bot id and secret the operator pasted; store them only
//!    if it returns the [`login::BotIdentity`]. It takes the bot's one connection, so a running
//!    account of the same bot stops as superseded: re-enable it afterwards.
//! 2. Run: `Connection::new(creds, Options::with_url(url))`, then spawn
//!    [`Connection::run`] with a roomy `mpsc` sender and a cancel token. Read health from
//!    [`Connection::status`] (`last_evidence` moves on every frame, pongs included).
//!    `run` returns `Err` only for good: [`Error::Superseded`] (another program took the bot;
//!    never reconnect, tell the operator) or [`Error::CredentialsInvalid`] (re-login).
//! 3. Receive: for each [`Delivery`], write [`Delivery::raw`], [`Delivery::req_id`] and
//!    [`Delivery::dedupe_key`] to the journal and commit, skipping a key already there
//!    (WeCom may deliver twice, §2.1; keep keys ≥ 24 h). There is no acknowledgement and no
//!    redelivery: a callback not journaled is lost, so journal first. Only then call
//!    [`Delivery::journaled`] for the [`Callback`] and its [`ReplyHandle`], and download media
//!    at once ([`Connection::download`]; URLs expire in ~5 min). Voice is
//!    [`Content::Voice`]'s transcript only. In groups strip
//!    [`message::strip_leading_mentions`]. Match the owner on [`Callback::from_userid`].
//! 4. Answer: [`StreamReply::update`] with the whole text so far, ≥ 500 ms apart, then
//!    [`StreamReply::finish_or_send`] (never blank; by 5 min 30 s after the message; it falls
//!    back to proactive markdown when the handle is gone). A bubble holds at most
//!    [`limits::STREAM_CONTENT_MAX_BYTES`]: past that, finish it with
//!    [`text::truncate_bytes`]'s prefix and send the rest proactively. Whole answers:
//!    [`Connection::reply_or_send`]. Proactive: [`Connection::send_markdown`], each after
//!    [`pace::SendPacer::wait`] (one pacer per bot; on `SlowDown(d)` call `hold_for(d)`).
//! 5. Questions: [`Connection::send_card`] with a [`card::ButtonCard`] (`task_id` = question
//!    id); on a [`message::Event::CardClick`] from the owner, [`Connection::update_card`] within
//!    5 s with [`card::answered_card`]; clicks by anyone else change nothing.
//! 6. Errors: [`Error::class`]. `Transient`: back off and retry; `SlowDown(d)`: wait exactly
//!    `d`; `HandleGone`: send through `aibot_send_msg` instead; `Rejected`: this item can
//!    never go, tell the owner; `Fatal`: stop the account with [`FatalReason::hint`].
//!    [`Error::outcome_unknown`]: the frame may have arrived; do not resend a finish blindly.
//!
//! # What the platform can lose (its own gap, not this crate's)
//!
//! WeCom neither acknowledges nor (as far as known) redelivers callbacks (§2.1), so a
//! callback is lost when it is pushed while no socket is subscribed: from the moment a link
//! dies (found by a close at once, by the heartbeat within 60–90 s when it goes silent) until
//! the next subscribe (backoff 1 s doubling to 30 s), and in the instant between the bytes
//! arriving and the journal commit if the process is killed there. The daemon's README states
//! that window, measured, as it does for WeChat.
//!
//! # Logs
//!
//! This crate logs no message text, file name, media URL or secret at any level (a test
//! records every line). The WebSocket library below it logs whole frames at `trace`, the
//! subscribe secret included: keep `tungstenite` and `tokio_tungstenite` at `info` or above.

#![warn(missing_docs)]

pub mod card;
pub mod classify;
pub mod connection;
pub mod delivery;
pub mod error;
pub mod frame;
pub mod limits;
pub mod login;
pub mod media;
pub mod message;
pub mod pace;
pub mod reply;
pub mod secret;
pub mod text;

#[cfg(feature = "fake")]
pub mod fake;

pub use classify::{ErrorClass, FatalReason, classify};
pub use connection::{Connection, LinkState, LinkStatus, Options, Timer};
pub use delivery::{Delivery, HandleKind, ReplyHandle};
pub use error::Error;
pub use message::{Callback, CallbackKind, ChatTarget, Content, Event};
pub use reply::{Route, StreamReply};
pub use secret::{BotSecret, Credentials};
