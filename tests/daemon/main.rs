//! The daemon: its control socket, the conversation pipeline, the store, recovery and the owner's
//! language.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

mod conversation_support;
#[path = "../feishu_support/mod.rs"]
mod feishu_support;
// `recovery`'s mail test installs the process's one global log subscriber (`support_mail::logs`);
// no other test here installs one or reads the logs.
#[path = "../support_mail/mod.rs"]
mod support_mail;
#[path = "../wechat_support/mod.rs"]
mod wechat_support;

mod agents_chosen;
mod bursts;
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
