//! WeCom end to end: the daemon's real platform factory and adapter against the fake long
//! connection over real sockets (`scv_wecom::fake`), and the real binary for login.

mod cards;
mod chat;
mod intake;
mod login;
mod media;
mod privacy;
mod stream;
mod support;
