//! `kill -9` of the real daemon at any moment: nothing lost, nothing sent twice: one test binary, each file below one area of it (they share the support
//! modules declared here and run on parallel threads).

#[path = "../process_support/mod.rs"]
mod process_support;
#[path = "../../channels/mail/tests/support/mod.rs"]
mod server;

mod kill9;
mod kill9_acp;
mod kill9_feishu;
mod kill9_mail;
mod kill9_send;
mod kill9_stream;
mod media_kill9;
