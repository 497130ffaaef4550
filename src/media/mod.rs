//! Media between the phone and the agent, kept inside the account's workspace: where a received
//! file is saved (`inbox/<YYYY-MM-DD>/<safe name>`, a stranger's in a per-sender folder), how its
//! name is made safe, what the workspace already holds against its cap, and which files an
//! answer names that may be sent back (only files inside the workspace, symlinks resolved).
//!
//! Pure file-system helpers: the pipeline (`conversation::media`) decides when they run and
//! records what they did in the store, so a crash neither loses nor duplicates a file.

pub mod inbox;
pub mod kind;
pub mod names;
pub mod outbound;

pub use crate::words::human_size;
