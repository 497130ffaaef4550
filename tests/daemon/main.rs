//! The daemon: its control socket, the conversation pipeline, the store, recovery and words: one test binary, each file below one area of it (they share the support
//! modules declared here and run on parallel threads).

mod conversation_support;
#[path = "../feishu_support/mod.rs"]
mod feishu_support;
#[path = "../support_mail/mod.rs"]
mod support_mail;
#[path = "../wechat_support/mod.rs"]
mod wechat_support;

mod channel_settings;
mod control_limits;
mod conversation;
mod daemon_control;
mod metrics_round_trip;
mod note_lifetime;
mod outbox_upgrade;
mod protocol_golden;
mod quiescence;
mod recovery;
mod recovery_pace;
mod reload_agent;
mod same_bot;
mod status_words;
mod store_modes;
mod store_pause;
mod words;
