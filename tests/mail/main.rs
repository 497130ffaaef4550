//! The mail account end to end against a real Dovecot and SMTP receiver.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

// The first mail harness installs this process's one global log subscriber (every thread, at
// trace: `support_mail::logs`); the privacy checks look in it for their own tests' texts only.
#[path = "../support_mail/mod.rs"]
mod support_mail;

mod mail_batch;
mod mail_chat_zh;
mod mail_health;
mod mail_routes;
mod mail_shared_chat;
mod mail_triage;
mod mail_words;
