//! `kill -9` of the real daemon at any moment: nothing lost, nothing sent twice.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

#[path = "../process_support/mod.rs"]
mod process_support;
#[path = "../../channels/mail/tests/support/mod.rs"]
mod server;

mod bursts;
mod kill9;
mod kill9_acp;
mod kill9_dingtalk;
mod kill9_feishu;
mod kill9_mail;
mod kill9_move;
mod kill9_move_question;
mod kill9_qq;
mod kill9_send;
mod kill9_stream;
mod kill9_telegram;
mod kill9_wecom;
mod media_kill9;
mod random_point;
mod wechat_bed;
