//! The mail account end to end against a real Dovecot and SMTP receiver: one test binary, each file below one area of it (they share the support
//! modules declared here and run on parallel threads).

#[path = "../support_mail/mod.rs"]
mod support_mail;

mod mail_batch;
mod mail_chat_zh;
mod mail_health;
mod mail_shared_chat;
mod mail_triage;
mod mail_words;
