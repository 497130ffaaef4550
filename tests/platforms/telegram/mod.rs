//! Telegram end to end: the daemon's real platform factory and adapter against the fake Bot API
//! over real sockets (`scv_telegram::fake`), and the real binary for login. Its log-privacy run
//! is in the log-privacy binary, which owns the one global subscriber.

mod chat;
mod intake;
mod login;
mod media;
mod stream;
pub mod support;
mod voice;
