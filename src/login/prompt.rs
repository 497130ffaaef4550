//! Reading what `login` and `init` ask for: on a terminal dialoguer's prompts (its `Password`
//! turns echo off), else one line from stdin, so scripts can pipe the answers in (one a line).

use std::io::{BufRead, IsTerminal};

/// Reads one secret, trimmed; `label` names it in the prompt and in the error when it is empty.
pub fn secret(label: &str) -> Result<String, String> {
    let value = line(label, true)?.trim().to_string();
    if value.is_empty() {
        return Err(format!("no {} given", label.to_lowercase()));
    }
    Ok(value)
}

/// Reads one password as typed: only the line ending goes, so spaces in it are kept.
pub fn password(label: &str) -> Result<String, String> {
    let value = line(label, true)?;
    if value.is_empty() {
        return Err(format!("no {} given", label.to_lowercase()));
    }
    Ok(value)
}

/// Reads one answer (maybe empty); `hidden` keeps it off the screen on a terminal.
pub fn line(label: &str, hidden: bool) -> Result<String, String> {
    let what = label.to_lowercase();
    if std::io::stdin().is_terminal() {
        let typed = if hidden {
            dialoguer::Password::new()
                .with_prompt(label)
                .allow_empty_password(true)
                .interact()
        } else {
            dialoguer::Input::<String>::new()
                .with_prompt(label)
                .allow_empty(true)
                .interact_text()
        };
        return typed.map_err(|e| format!("cannot read the {what}: {e}"));
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the {what} from stdin: {e}"))?;
    Ok(without_line_end(&line).to_string())
}

/// `line` without its `\n` or `\r\n`.
fn without_line_end(line: &str) -> &str {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_line_end_is_removed() {
        assert_eq!(without_line_end(" pass word \r\n"), " pass word ");
        assert_eq!(without_line_end("pw\n"), "pw");
        assert_eq!(without_line_end("pw"), "pw");
    }
}
