//! Echo: a toy chat platform, compiled only with the `testing` feature, that proves a platform
//! is one value. This folder, one `Channel` variant and one registry line are all it took; it
//! then logs in through `login`/`init`, shows in `status`, `doctor` and completions, and pairs
//! its owner, through the same generic paths as the real platforms.
//!
//! Its wire is JSON lines over TCP to `[echo.ACCOUNT] address`, served by [`fake::EchoServer`]:
//! a request `{"hello": TOKEN}` is answered `{"bot": ID}` or `{"refused": WHY}`; with
//! `"listen": true` the connection then carries `{"msg": {...}}` lines, each acknowledged with
//! `{"ack": ID}` once journaled (unacknowledged ones come again on the next connection); with
//! `"say": {"chat", "text", "key"}` one message is sent (`{"sent": ID}`), deduplicated by key.

pub mod fake;
mod login;
mod platform;
mod run;
mod settings;
mod wire;

pub use platform::PLATFORM;
pub use settings::EchoSettings;
