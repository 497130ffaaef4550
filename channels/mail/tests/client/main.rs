//! The mail client against a real Dovecot and SMTP receiver (one per test, `support`): one test
//! binary, each file below one part of the client.

mod decode;
mod fetch;
mod idle;
mod login;
mod smtp;
#[path = "../support/mod.rs"]
mod support;
