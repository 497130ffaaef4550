//! Finding lines and dotted key paths in TOML text, so errors can point at them.

/// The 1-based line and column of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// The table header a line declares (`[a.b]` gives `a.b`), if it is one.
fn header_of(line: &str) -> Option<String> {
    let t = line.trim();
    let inner = t.strip_prefix('[')?.split(']').next()?;
    let inner = inner.trim_start_matches('[').trim();
    Some(
        inner
            .split('.')
            .map(|p| p.trim().trim_matches('"'))
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// The key a `key = value` line sets, if it is one.
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim();
    if t.starts_with('#') || t.starts_with('[') {
        return None;
    }
    let (k, _) = t.split_once('=')?;
    Some(k.trim().trim_matches('"'))
}

/// The dotted path of the key at byte `offset` (`feishu.work.senders`), best effort.
pub(super) fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let (line_no, _) = line_col(text, offset);
    let mut table = String::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(h) = header_of(line) {
            table = h;
        }
        if i + 1 == line_no {
            if let Some(h) = header_of(line) {
                return Some(h);
            }
            return key_of(line).map(|k| {
                if table.is_empty() {
                    k.to_string()
                } else {
                    format!("{table}.{k}")
                }
            });
        }
    }
    None
}

/// The 1-based line where `table` sets `key` (or the table header itself when `key` is `None`).
pub(super) fn line_of_key(text: &str, table: &str, key: Option<&str>) -> Option<usize> {
    let mut current = String::new();
    let mut header_line = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(h) = header_of(line) {
            current = h;
            if current == table {
                header_line = Some(i + 1);
            }
            continue;
        }
        if current == table
            && let Some(k) = key
            && key_of(line) == Some(k)
        {
            return Some(i + 1);
        }
    }
    header_line
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "state_dir = \"/x\"\n\n[feishu.work]\n# note\nsenders = \"all\"\n[mail.\"home\"]\nimap_host = \"h\"\n";

    #[test]
    fn finds_paths_and_lines() {
        let off = TEXT.find("senders").expect("present");
        assert_eq!(line_col(TEXT, off), (5, 1));
        assert_eq!(
            key_path_at(TEXT, off).as_deref(),
            Some("feishu.work.senders")
        );
        assert_eq!(key_path_at(TEXT, 0).as_deref(), Some("state_dir"));
        assert_eq!(line_of_key(TEXT, "feishu.work", Some("senders")), Some(5));
        assert_eq!(line_of_key(TEXT, "mail.home", Some("imap_host")), Some(7));
        assert_eq!(line_of_key(TEXT, "mail.home", Some("absent")), Some(6));
        assert_eq!(line_of_key(TEXT, "", Some("state_dir")), Some(1));
    }
}
