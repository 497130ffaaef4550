//! DingTalk end to end: the daemon's real platform factory and adapter against the fake
//! DingTalk (`scv_dingtalk::fake`: API, Stream WebSocket, session webhooks) over real sockets.

mod cards;
mod chat;
mod confirm;
mod intake;
mod kill9;
mod login;
mod media;
mod privacy;
mod support;
mod thinking;
