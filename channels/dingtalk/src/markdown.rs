//! DingTalk's markdown dialect (spec §4.4): tables are not rendered (rewritten as lines), the
//! notification title is short, and long answers are split on line boundaries with code
//! fences closed and re-opened across chunks.

use crate::limits::MARKDOWN_TITLE_CHARS;

/// Rewrites what DingTalk does not render: table rows become `a · b · c` lines and the
/// `|---|` separator rows go. Everything else passes through (inside code fences too).
pub fn render(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_fence = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence && is_table_row(trimmed) {
            if is_separator_row(trimmed) {
                continue;
            }
            let cells: Vec<&str> = trimmed
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            out.push_str(&cells.join(" · "));
            out.push('\n');
            continue;
        }
        out.push_str(line);
    }
    out
}

fn is_table_row(line: &str) -> bool {
    line.len() > 1 && line.starts_with('|') && line.ends_with('|')
}

fn is_separator_row(line: &str) -> bool {
    line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// The notification title: the first non-empty line without markdown marks, at most
/// [`MARKDOWN_TITLE_CHARS`] characters; `fallback` when nothing is left.
pub fn title(text: &str, fallback: &str) -> String {
    let line = text
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches(['#', '>', '-', '*', ' '])
                .trim()
        })
        .map(|l| l.replace(['*', '`', '_'], ""))
        .find(|l| !l.trim().is_empty() && !l.starts_with("```"));
    match line {
        Some(l) => l.trim().chars().take(MARKDOWN_TITLE_CHARS).collect(),
        None => fallback.to_string(),
    }
}

/// Splits `text` into chunks of at most `max_chars` characters, at line boundaries where it
/// can (a longer line is cut), closing an open code fence at the end of a chunk and opening
/// it again at the start of the next.
pub fn chunk(text: &str, max_chars: usize) -> Vec<String> {
    let max = max_chars.max(32);
    let mut chunks = Vec::new();
    let mut cur = String::new();
    let mut cur_len = 0;
    let mut fence: Option<String> = None;
    for line in split_long_lines(text, max / 2) {
        let len = line.chars().count();
        // Room for the fence we may have to close ("```\n") and reopen.
        let reserve = fence.as_ref().map_or(0, |f| f.chars().count() + 5);
        if cur_len + len + reserve > max && cur_len > 0 {
            if fence.is_some() {
                cur.push_str(if cur.ends_with('\n') { "```" } else { "\n```" });
            }
            chunks.push(std::mem::take(&mut cur));
            cur_len = 0;
            if let Some(f) = &fence {
                cur.push_str(f);
                cur.push('\n');
                cur_len = f.chars().count() + 1;
            }
        }
        if line.trim_start().starts_with("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(line.trim().to_string()),
            };
        }
        cur.push_str(&line);
        cur_len += len;
    }
    if !cur.trim().is_empty() {
        chunks.push(cur);
    }
    chunks
}

/// Lines (with their newline), lines over `max` characters cut into pieces of `max`.
fn split_long_lines(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.split_inclusive('\n') {
        let chars: Vec<char> = line.chars().collect();
        for piece in chars.chunks(max.max(1)) {
            out.push(piece.iter().collect());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_become_lines_outside_code() {
        let md = "| a | b |\n|---|:-:|\n| 1 | 2 |\n```\n| keep |\n```\n";
        assert_eq!(render(md), "a · b\n1 · 2\n```\n| keep |\n```\n");
    }

    #[test]
    fn title_is_short_and_plain() {
        assert_eq!(
            title("## **Build** report for today and more\nx", "Reply"),
            "Build report fo"
        );
        assert_eq!(title("\n\n", "Reply"), "Reply");
    }

    #[test]
    fn chunks_respect_the_limit_and_reopen_fences() {
        let mut text = String::from("intro\n```rust\n");
        for i in 0..200 {
            text.push_str(&format!("let x{i} = {i};\n"));
        }
        text.push_str("```\nend 完\n");
        let chunks = chunk(&text, 500);
        assert!(chunks.len() > 1);
        for c in &chunks {
            assert!(c.chars().count() <= 500, "{}", c.chars().count());
            assert_eq!(c.matches("```").count() % 2, 0, "{c}");
        }
        assert!(chunks[1].starts_with("```rust\n"));
        let joined: String = chunks.concat();
        assert!(joined.contains("let x199 = 199;") && joined.ends_with("end 完\n"));
        // One huge line of multibyte text: cut, never on a byte inside a character.
        let huge = "字".repeat(2000);
        let parts = chunk(&huge, 500);
        assert!(parts.iter().all(|p| p.chars().count() <= 500));
        assert_eq!(parts.concat(), huge);
        assert!(chunk("", 500).is_empty());
    }
}
