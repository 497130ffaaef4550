//! What `init` and the console write: a [`Plan`] (what the person picked) applied to the
//! configuration text with comments kept ([`apply`]), written 0600 ([`write_private`]).
//!
//! Made by `app/init` (flags and the terminal wizard) and the console's set-up forms; the file
//! they write is the one `Config::load` reads, so both go through the same checks before it is
//! written.

mod edit;
mod plan;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub use edit::apply;
pub use plan::{AgentChoice, AgentPlan, ChatPlan, CredentialsChoice, MailPlan, Plan, TlsChoice};

/// Writes `path` atomically with mode 0600 (its directory created 0700 when missing).
pub fn write_private(path: &Path, text: &str) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    crate::secrets::write_atomic_private(path, text).map_err(io)
}
