//! QQ end to end: the daemon's real platform factory and adapter against the fake QQ open
//! platform over real sockets (`scv_qq::fake`): intake through the gateway, the sender's reply
//! windows, and the fatal close codes.

mod budget;
mod buttons;
mod chat;
mod confirm;
mod hostile;
mod intake;
mod login;
mod media;
mod support;
mod webhook;
mod windows;
