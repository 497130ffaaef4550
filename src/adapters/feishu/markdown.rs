//! The Markdown a Feishu `post` `md` element shows well, from the agent's answer
//! (media-and-streaming.md §6.2), as openclaw-lark shapes it: H1 becomes H4 and H2–H6 H5
//! (large headings crowd a phone screen), images are removed unless they name an uploaded
//! `img_…` key (a URL image is refused by Feishu), blank lines surround tables; code blocks
//! are left untouched. Everything else (bold, italic, strike, links, lists, quotes) passes.

use crate::adapters::fences::{Kind, Lines, body};

/// The text for a `post` `md` element.
pub fn for_post(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_table = false;
    for (kind, line) in Lines::new(text) {
        let line = body(line);
        match kind {
            Kind::Code => out.push(line.to_string()),
            Kind::Fence => {
                in_table = false;
                out.push(line.to_string());
            }
            Kind::Prose => {
                let t = line.trim();
                let table_row = t.starts_with('|');
                if table_row && !in_table && out.last().is_some_and(|l| !l.trim().is_empty()) {
                    out.push(String::new());
                }
                if !table_row && in_table && !t.is_empty() {
                    out.push(String::new());
                }
                in_table = table_row;
                out.push(without_images(&heading(line)));
            }
        }
    }
    out.join("\n")
}

/// The text for a card's `markdown` element (JSON 2.0), which renders all of CommonMark but
/// HTML: images are removed unless they name an `img_…` key (CardKit refuses a URL image), and
/// fence lines lose surrounding spaces (spaces around a fence can stop code rendering in
/// cards, §5.1); headings keep their size, as a card is read as one answer.
pub fn for_card(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (kind, line) in Lines::new(text) {
        match kind {
            Kind::Fence => {
                out.push_str(line.trim());
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            Kind::Code => out.push_str(line),
            Kind::Prose => out.push_str(&without_images(line)),
        }
    }
    out
}

/// H1 as H4, H2–H6 as H5; other lines as they are.
fn heading(line: &str) -> String {
    let t = line.trim_start();
    let hashes = t.chars().take_while(|&c| c == '#').count();
    match t[hashes..].strip_prefix(' ') {
        Some(rest) if hashes == 1 => format!("#### {rest}"),
        Some(rest) if (2..=6).contains(&hashes) => format!("##### {rest}"),
        _ => line.to_string(),
    }
}

/// Removes `![alt](target)` unless the target is an `img_…` key; inline code is left alone.
fn without_images(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(part);
            continue;
        }
        let mut rest = part;
        while let Some(start) = rest.find("![") {
            let found = rest[start..].find("](").and_then(|close| {
                let open = start + close + 2;
                rest[open..].find(')').map(|end| (open, open + end + 1))
            });
            let Some((target, end)) = found else { break };
            out.push_str(&rest[..start]);
            if rest[target..end - 1].starts_with("img_") {
                out.push_str(&rest[start..end]);
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_card_shows_row_by_row() {
        let rows: &[(&str, &str, &str)] = &[
            ("CJK prose", "你好，世界。", "你好，世界。"),
            ("headings keep their size", "# 标题", "# 标题"),
            (
                "URL image removed",
                "看 ![图](https://x.io/a.png) 完",
                "看  完",
            ),
            (
                "uploaded image kept",
                "![图](img_v3_abc)",
                "![图](img_v3_abc)",
            ),
            (
                "fences lose their spaces, code keeps its own",
                "  ```rust  \n    let a_b = 1;\n ``` \n**粗体**",
                "```rust\n    let a_b = 1;\n```\n**粗体**",
            ),
            (
                "table kept",
                "| a | b |\n|---|---|\n| 1 | 2 |",
                "| a | b |\n|---|---|\n| 1 | 2 |",
            ),
            (
                "links pass",
                "[文档](https://x.io/a_b)",
                "[文档](https://x.io/a_b)",
            ),
        ];
        for (what, input, want) in rows {
            assert_eq!(for_card(input), *want, "{what}");
        }
    }

    #[test]
    fn what_a_post_shows_row_by_row() {
        let rows: &[(&str, &str, &str)] = &[
            ("CJK prose", "你好，世界。", "你好，世界。"),
            ("H1 becomes H4", "# 标题", "#### 标题"),
            ("H2 becomes H5", "## Section", "##### Section"),
            ("H6 becomes H5", "###### 小", "##### 小"),
            ("not a heading", "#hashtag", "#hashtag"),
            (
                "emphasis passes",
                "**粗体** *italic* ~~strike~~",
                "**粗体** *italic* ~~strike~~",
            ),
            (
                "links pass",
                "[文档](https://x.io/a_b)",
                "[文档](https://x.io/a_b)",
            ),
            (
                "URL image removed",
                "看 ![图](https://x.io/a.png) 完",
                "看  完",
            ),
            (
                "uploaded image kept",
                "![图](img_v3_abc)",
                "![图](img_v3_abc)",
            ),
            ("image in inline code kept", "`![a](b)`", "`![a](b)`"),
            (
                "table gets blank lines",
                "前\n| a | b |\n|---|---|\n| 1 | 2 |\n后",
                "前\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n后",
            ),
            (
                "code untouched",
                "```md\n# not a heading\n![x](y)\n```",
                "```md\n# not a heading\n![x](y)\n```",
            ),
            (
                "lists pass",
                "- 一\n- two\n1. three",
                "- 一\n- two\n1. three",
            ),
        ];
        for (what, input, want) in rows {
            assert_eq!(for_post(input), *want, "{what}");
        }
    }
}
