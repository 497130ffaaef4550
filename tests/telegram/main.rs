//! Telegram end to end: the daemon's real platform factory and adapter against the fake Bot API
//! over real sockets (`scv_telegram::fake`), and the real binary for login.

mod chat;
mod intake;
mod login;
mod media;
mod privacy;
mod support;
