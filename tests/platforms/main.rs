//! The chat platforms end to end against their fakes over real sockets: WeChat, Feishu,
//! Telegram, QQ, media and streaming.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

#[path = "../feishu_support/mod.rs"]
mod feishu_support;
mod media_support;
#[path = "../process_support/mod.rs"]
mod process_support;
mod stream_support;
#[path = "../wechat_support/mod.rs"]
mod wechat_support;

mod dingtalk;
mod feishu_burst;
mod feishu_cards;
mod feishu_chat;
mod feishu_confirm;
mod feishu_login_no_daemon;
mod feishu_media;
mod feishu_pairing;
mod feishu_scan;
mod feishu_webhook;
mod media_feishu;
mod media_limits;
mod media_wechat;
mod qq;
mod stream_feishu_cards;
mod stream_feishu_typing;
mod stream_wechat;
mod telegram;
mod voice_feishu;
mod voice_wechat;
mod wechat_again;
mod wechat_copies;
mod wechat_daemon;
mod wechat_login;
mod wechat_login_base;
mod wecom;
