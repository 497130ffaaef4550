//! `scv-mail`: IMAP watching and fetching without touching `\Seen`, SMTP sending, and MIME
//! decoding of hostile mail into bounded plain text. It knows nothing of the bridge daemon:
//! no policy, no store, no supervisor.
//!
//! # Layout
//!
//! - `settings`: [`ImapSettings`], [`SmtpSettings`], [`Security`], [`ParseLimits`].
//! - `secret`: [`Password`], which never prints itself.
//! - `tls`: rustls configuration (system roots, webpki fallback, optional CA file) and the
//!   loopback-only rule for unencrypted connections.
//! - `stream`: [`MailStream`], TLS or plain TCP under an IMAP session.
//! - `session`: [`ImapSession`], its capabilities, counters and listening state.
//! - `connect`: TLS / STARTTLS / plain, greeting, LOGIN or AUTHENTICATE PLAIN, ID.
//! - `mailbox`: SELECT/EXAMINE, the Sent folder, APPEND; `mailbox_state`: what SELECT reported ([`MailboxState`]).
//! - `fetch`: UID SEARCH, batched UID FETCH with BODY.PEEK, keyword marking.
//! - `idle`: [`ImapSession::wait_for_change`], IDLE with refresh, or NOOP polling.
//! - `parse` and `item`: mail-parser decoding into [`MailItem`] (Debug shows no mail text).
//! - `smtp`: [`SmtpSender`], [`build_message`], threaded replies ([`reply_to`]).
//! - `error` and `classify`: [`MailError`] and [`ErrorClass`] (transient, fatal, rejected).
//!
//! # Typical use
//!
//! ```no_run
//! # async fn demo() -> Result<(), scv_mail::MailError> {
//! use scv_mail::*;
//! use std::time::Duration;
//! let settings = ImapSettings::new("imap.example.com", 993, Security::Tls, "me", Password::new("pw"));
//! let mut imap = ImapSession::connect(&settings).await?;
//! let mailbox = imap.select("INBOX").await?;
//! let mut next = mailbox.uid_next.unwrap_or(1); // baseline: only mail from now on
//! let cancel = tokio_util::sync::CancellationToken::new();
//! loop {
//!     let uids = imap.uids_from(next).await?;
//!     for item in imap.fetch_items(&uids).await? {
//!         next = next.max(item.uid + 1);
//!     }
//!     imap.wait_for_change(Duration::from_secs(600), &cancel).await?;
//! }
//! # }
//! ```

//! # Testing
//!
//! `tests/` runs against a real Dovecot and SMTP receiver that `scripts/mailserver` starts
//! per test (`tests/support`). CI needs the Debian packages `dovecot-imapd` and
//! `python3-aiosmtpd`: `scripts/mailserver install` installs them (as root).
//!
//! # Limits
//!
//! Decoding is bounded by [`ParseLimits`], and fetches ask only for a bounded prefix, but
//! async-imap buffers whatever one response carries: a hostile server can still send a huge
//! literal. Use servers you chose.

#![warn(missing_docs)]

mod classify;
mod connect;
mod error;
mod fetch;
mod idle;
mod item;
mod mailbox;
mod mailbox_state;
mod parse;
mod secret;
mod session;
mod settings;
mod smtp;
mod stream;
mod tls;

pub use classify::ErrorClass;
pub use error::{MailError, Result};
pub use fetch::uid_set;
pub use idle::Wake;
pub use item::{MailAddress, MailItem};
pub use mailbox::TRIAGED_KEYWORD;
pub use mailbox_state::MailboxState;
pub use parse::parse_message;
pub use secret::Password;
pub use session::{ImapSession, ImapStats};
pub use settings::{ImapAuth, ImapSettings, ParseLimits, Security, SmtpSettings};
pub use smtp::{BuiltMessage, OutgoingMail, SmtpSender, build_message, reply_subject, reply_to};
pub use stream::MailStream;
