//! The `scv-bridge` program as a library: its flags, the composition root and what each command
//! does. `main.rs` only parses, sets up logging and hands over.

mod args;
mod candidates;
mod commands;
mod complete;
mod compose;
pub mod example;
mod guide;
mod hangup;
pub mod init;
mod man;

pub use args::{
    ChannelAction, Cli, Command, ConfigAction, GuideLang, LogFormat, PurposeArg, SendersArg,
    ToolsArg,
};
pub use commands::dispatch;
pub use complete::answer_shell;
