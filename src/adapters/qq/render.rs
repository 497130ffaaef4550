//! The agent's Markdown as QQ's plain text (spec §4.2, §4.3: markdown is by invitation only, so
//! `msg_type` 0 is the dialect): heading and emphasis markers dropped, list bullets as `•`,
//! `[text](url)` as `text (url)`, an image reference as its alt text (the file goes as media),
//! fenced code kept line for line without its fences; then every
//! link defanged (`example[.]com`), because QQ refuses text with a URL (`40054010`).

use scv_qq::text::defang_links;

use crate::adapters::fences::{Kind, Lines, body};

/// Text ready for QQ, and how many links were defanged (the sender says so once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rendered {
    /// The text to send.
    pub text: String,
    /// Links rewritten so QQ takes the text.
    pub links: usize,
}

/// `markdown` as QQ plain text.
pub(super) fn plain(markdown: &str) -> Rendered {
    let mut out = String::with_capacity(markdown.len());
    for (kind, line) in Lines::new(markdown) {
        match kind {
            // The fence itself means nothing in plain text; the code lines stay as they are.
            Kind::Fence => {}
            Kind::Code => out.push_str(line),
            Kind::Prose => {
                out.push_str(&prose_line(body(line)));
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    let d = defang_links(out.trim_end());
    Rendered {
        text: d.text,
        links: d.links,
    }
}

fn prose_line(line: &str) -> String {
    let trimmed = line.trim_start();
    let hashes = trimmed.bytes().take_while(|b| *b == b'#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        return inline(trimmed[hashes..].trim());
    }
    let indent = &line[..line.len() - trimmed.len()];
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            return format!("{indent}• {}", inline(rest));
        }
    }
    inline(line)
}

/// One line without emphasis markers, links as `text (url)`; code spans kept as written.
fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
        {
            out.push_str(&rest[..end + 2]);
            i += end + 2;
            continue;
        }
        // An image reference: the file itself goes out as media; its alt text stays.
        if let Some(img) = rest.strip_prefix('!')
            && let Some((alt, _, used)) = link(img)
        {
            out.push_str(alt);
            i += 1 + used;
            continue;
        }
        if let Some((text, url, used)) = link(rest) {
            out.push_str(&format!("{text} ({url})"));
            i += used;
            continue;
        }
        if let Some(m) = ["**", "__", "~~"].iter().find(|m| rest.starts_with(**m)) {
            i += m.len();
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// `[text](url)` at the start of `s`: its text, its URL and the bytes it spans.
fn link(s: &str) -> Option<(&str, &str, usize)> {
    let inner = s.strip_prefix('[')?;
    let close = inner.find("](")?;
    let text = &inner[..close];
    let after = &inner[close + 2..];
    let end = after.find(')')?;
    let url = &after[..end];
    (!text.contains('\n') && !url.contains(char::is_whitespace)).then_some((
        text,
        url,
        1 + close + 2 + end + 1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_plain_text_without_links_qq_refuses() {
        let r = plain("# Title\n\n**bold** and `a*b` see [docs](https://example.com/a)\n- item\n");
        assert_eq!(
            r.text,
            "Title\n\nbold and `a*b` see docs (example[.]com/a)\n• item"
        );
        assert_eq!(r.links, 1);
        let code = plain("```rust\nlet url = \"http://x.cn\";\n**not bold**\n```\n");
        assert_eq!(code.text, "let url = \"x[.]cn\";\n**not bold**");
        assert_eq!(code.links, 1);
        assert!(!plain("😀 [a](b").text.is_empty(), "odd input stays text");
        assert_eq!(plain("Here: ![chart](out/chart.png)").text, "Here: chart");
    }
}
