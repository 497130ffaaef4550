//! The bridge as tools for agents (issue 45, item 5): `send_to_owner`, `ask_owner`,
//! `schedule`, `list_scheduled`, `cancel_scheduled`, offered only in sessions of the verified
//! owner with tools granted.
//!
//! Two faces, one path: ACP agents get an MCP server over Streamable HTTP on loopback
//! ([`ToolEndpoint`], rmcp: the official Rust MCP SDK, whose server speaks the transport
//! codex-acp and claude-code-acp take in `session/new` `mcpServers`), each session admitted by
//! its own secret; the OpenAI backend offers [`specs`] as function tools and runs a call with
//! [`OwnerTools::call`]. Every tool goes through `OwnerService`/`ConfirmService`.

mod endpoint;
mod server;
mod tools;

pub use endpoint::{Grant, ToolEndpoint};
pub use server::ToolServer;
pub use tools::{OwnerTools, ToolSpec, specs};
