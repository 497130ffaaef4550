//! Writing the configuration from the console: the same file `init` writes (`crate::setup`:
//! comments kept, checked as the daemon reads it, 0600). Used by the model form (`setup.rs`)
//! and "add a chat" (`chat.rs`).

use super::Console;
use crate::config::Config;
use crate::setup::Plan;

/// Applies `plan` to the file (or a new one), checks the result as the daemon will read it, and
/// writes it 0600; the configuration it now holds.
pub(super) fn write(console: &Console, plan: &Plan) -> Result<Config, String> {
    let path = &console.config_path;
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let text = crate::setup::apply(existing.as_deref(), plan)?;
    let config = Config::parse(path, &text)
        .map_err(|e| format!("the configuration would not load, so nothing was written: {e}"))?;
    crate::setup::write_private(path, &text)?;
    Ok(config)
}
