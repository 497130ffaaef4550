//! Reading a secret for `login` and `init`: a no-echo prompt on a terminal (dialoguer), else one
//! line from stdin, so scripts can pipe it in.

use std::io::{BufRead, IsTerminal};

/// Reads one secret; `label` names it in the prompt and in the error when it is empty.
pub fn secret(label: &str) -> Result<String, String> {
    let value = if std::io::stdin().is_terminal() {
        dialoguer::Password::new()
            .with_prompt(label)
            .allow_empty_password(true)
            .interact()
            .map_err(|e| format!("cannot read the {}: {e}", label.to_lowercase()))?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the {} from stdin: {e}", label.to_lowercase()))?;
        line
    };
    let value = value.trim().to_string();
    if value.is_empty() {
        return Err(format!("no {} given", label.to_lowercase()));
    }
    Ok(value)
}
