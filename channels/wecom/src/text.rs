//! Splitting long markdown into messages the platform takes (§4.4): at paragraph, then line,
//! then character boundaries, never inside a UTF-8 character.

/// Splits `text` into pieces of at most `max_chars` characters, preferring to cut after a
/// blank line, then after a newline; whitespace-only pieces are dropped (they show as nothing
/// and a blank stream finish leaves the bubble spinning, §4.4).
pub fn split_markdown(text: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    let mut rest = text;
    while rest.chars().count() > max_chars {
        // Byte index just past `max_chars` characters.
        let limit = rest
            .char_indices()
            .nth(max_chars)
            .map_or(rest.len(), |(i, _)| i);
        let window = &rest[..limit];
        let cut = window
            .rfind("\n\n")
            .map(|i| i + 2)
            .or_else(|| window.rfind('\n').map(|i| i + 1))
            .filter(|&i| i > 0)
            .unwrap_or(limit);
        push(&mut out, &rest[..cut]);
        rest = &rest[cut..];
    }
    push(&mut out, rest);
    out
}

/// The longest prefix of `text` within `max_bytes` bytes, cut at a character boundary.
pub fn truncate_bytes(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn push(out: &mut Vec<String>, piece: &str) {
    if !piece.trim().is_empty() {
        out.push(piece.trim_end().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_paragraphs_then_lines_then_chars() {
        let text = format!("{}\n\n{}", "a".repeat(8), "b".repeat(8));
        assert_eq!(split_markdown(&text, 12), ["aaaaaaaa", "bbbbbbbb"]);
        let text = format!("{}\n{}", "a".repeat(8), "b".repeat(8));
        assert_eq!(split_markdown(&text, 12), ["aaaaaaaa", "bbbbbbbb"]);
        assert_eq!(split_markdown("一二三四五", 2), ["一二", "三四", "五"]);
        assert!(split_markdown("  \n ", 5).is_empty());
        assert_eq!(truncate_bytes("一二", 4), "一");
        assert_eq!(truncate_bytes("ab", 4), "ab");
    }
}
