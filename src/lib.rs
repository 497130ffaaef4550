//! scv-bridge: one supervised task per chat account (WeChat, Feishu, mail) between a person's
//! phone and their agent.
//!
//! # Layout
//!
//! - [`policy`]: who may do what (drop, answer with or without tools, mail chat), one pure function.
//! - [`protocol`]: wire types of the control socket and its bounded JSON-lines framing.
//! - [`config`]: the TOML configuration, validated with errors that name file, line and key.
//! - [`store`]: SQLite state (settings, cursors, journal, outbox) behind one writer thread.
//! - [`secrets`]: credentials in the OS keyring or in 0600 files; secrets redact themselves.
//! - [`supervisor`]: the `Component` trait, lifecycle, backoff, health registry, reconcile.
//! - [`conversation`]: inbound → journal → policy → agent → outbox, the same for every platform.
//! - [`confirm`]: owner yes/no questions: ask, deliver, read answers, deadlines, `scv-bridge confirm`.
//! - [`agent`]: agent backends (OpenAI-compatible HTTP, SCV agent server) behind one trait.
//! - [`control`]: the `daemon.control` Unix socket server.
//! - [`cli`]: command-line rendering (the status table, human durations).
//! - [`client`]: the control socket client used by the command line.
//! - [`daemon`]: wires configuration, store, supervisor and control socket into `run`.
//! - [`login`]: `scv-bridge login CHANNEL ACCOUNT`: store credentials, tell the daemon.
//! - [`adapters`]: glue from each platform crate to the `Component` trait.
//! - [`testing`]: a scriptable fake component for tests (not reachable from configuration).

pub mod adapters;
pub mod agent;
pub mod cli;
pub mod client;
pub mod config;
pub mod confirm;
pub mod control;
pub mod conversation;
pub mod daemon;
pub mod login;
pub mod policy;
pub mod protocol;
pub mod secrets;
pub mod store;
pub mod supervisor;
pub mod testing;
