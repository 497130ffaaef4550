//! What WeChat shows of an answer's Markdown: the official client's filter, applied to each
//! piece the core split (media-and-streaming.md §6.1).
//!
//! Kept unchanged: code fences and inline code, tables, horizontal rules, `**bold**`, italic
//! around other text than CJK, `~~` and quote markers. Changed outside code: images are
//! removed; H5/H6 markers dropped; `*`, `_`, `***`, `___` around CJK text dropped (the text
//! kept); every other `_` becomes the full-width `＿` (ClawBot reads `_` pairs as italics and
//! hides them: `a_b_c` shows as `abc`); `<` and `>` become `＜` `＞` (a bare `<` can hide the
//! rest of the message). Link targets and bare URLs are left as they are, so they still open.
//! A piece that ends inside a code block is closed, when the closing fence fits.

use crate::adapters::fences::{Kind, Lines};

/// The most characters a WeChat text may have (the core splits to it).
const MAX_CHARS: usize = 2000;

/// The text WeChat should get for one piece of an answer written in Markdown.
pub fn for_wechat(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = Lines::new(text);
    for (kind, line) in lines.by_ref() {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if kind != Kind::Prose || is_rule(body.trim()) {
            out.push_str(line);
        } else {
            out.push_str(&prose_line(body));
            out.push_str(nl);
        }
    }
    if lines.in_code() {
        // The splitter keeps fences balanced; an answer that never closed its block is closed
        // here so the next message does not render as code, when the fence still fits.
        let close = if out.ends_with('\n') { "```" } else { "\n```" };
        if out.chars().count() + close.chars().count() <= MAX_CHARS {
            out.push_str(close);
        }
    }
    out
}

/// A thematic break (`---`, `***`, `___`, spaced or not): kept as it is.
fn is_rule(t: &str) -> bool {
    let s: String = t.chars().filter(|c| *c != ' ').collect();
    s.len() >= 3 && ['-', '*', '_'].iter().any(|&m| s.chars().all(|c| c == m))
}

/// One line outside code: heading and quote markers, then the inline text.
fn prose_line(line: &str) -> String {
    let indent_len = line.len() - line.trim_start().len();
    let (indent, rest) = line.split_at(indent_len);
    let mut out = String::from(indent);
    // H5/H6: WeChat shows their markers as text; the official filter drops them.
    let rest = ["###### ", "##### "]
        .iter()
        .find_map(|h| rest.strip_prefix(h))
        .unwrap_or(rest);
    // Quote markers at the start of the line stay (the official filter keeps `>`).
    let quote_len = rest.len() - rest.trim_start_matches(['>', ' ']).len();
    let (quote, rest) = rest.split_at(if rest.starts_with('>') { quote_len } else { 0 });
    out.push_str(quote);
    // Inline code between backtick pairs is kept verbatim; an unpaired backtick is text.
    let parts: Vec<&str> = rest.split('`').collect();
    let paired = parts.len() % 2 == 1;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        let code = i % 2 == 1 && (paired || i + 1 < parts.len());
        if code {
            out.push_str(part);
        } else {
            out.push_str(&inline(part));
        }
    }
    out
}

/// Inline text outside code.
fn inline(s: &str) -> String {
    let cs: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c == '!'
            && cs.get(i + 1) == Some(&'[')
            && let Some(end) = link_end(&cs, i + 1)
        {
            i = end; // an image: removed entirely
            continue;
        }
        if c == '['
            && let Some(end) = link_end(&cs, i)
        {
            let close = cs[i..end].iter().position(|&x| x == ']').map(|p| i + p);
            if let Some(close) = close {
                out.push('[');
                out.push_str(&inline(&cs[i + 1..close].iter().collect::<String>()));
                // The target stays as written, so the link still opens.
                out.extend(&cs[close..end]);
                i = end;
                continue;
            }
        }
        if starts_with(&cs, i, "http://") || starts_with(&cs, i, "https://") {
            while i < cs.len() && !cs[i].is_whitespace() {
                out.push(cs[i]);
                i += 1;
            }
            continue;
        }
        if c == '*' || c == '_' {
            let run = cs[i..].iter().take_while(|&&x| x == c).count();
            if (run == 1 || run == 3)
                && let Some((inner_end, after)) = closing_run(&cs, i + run, c, run)
            {
                let inner: String = cs[i + run..inner_end].iter().collect();
                if inner.chars().any(is_cjk) {
                    out.push_str(&inline(&inner));
                    i = after;
                    continue;
                }
            }
            for _ in 0..run {
                out.push(if c == '_' { '＿' } else { '*' });
            }
            i += run;
            continue;
        }
        out.push(match c {
            '<' => '＜',
            '>' => '＞',
            other => other,
        });
        i += 1;
    }
    out
}

/// Where a `[label](target)` starting at `open` ends (one past its `)`).
fn link_end(cs: &[char], open: usize) -> Option<usize> {
    let close = open + cs[open..].iter().position(|&c| c == ']')?;
    if cs.get(close + 1) != Some(&'(') {
        return None;
    }
    let paren = close + 1 + cs[close + 1..].iter().position(|&c| c == ')')?;
    Some(paren + 1)
}

/// The closing run of exactly `run` markers `m` after `from`, with something in between:
/// (where the inner text ends, where the text after the closing run starts).
fn closing_run(cs: &[char], from: usize, m: char, run: usize) -> Option<(usize, usize)> {
    let mut j = from;
    while j < cs.len() {
        if cs[j] == m {
            let n = cs[j..].iter().take_while(|&&x| x == m).count();
            if n == run && j > from {
                return Some((j, j + n));
            }
            j += n;
        } else {
            j += 1;
        }
    }
    None
}

fn starts_with(cs: &[char], i: usize, p: &str) -> bool {
    p.chars()
        .enumerate()
        .all(|(k, c)| cs.get(i + k) == Some(&c))
}

/// Chinese, Japanese and Korean letters and their punctuation.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303f | 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff
        | 0xac00..=0xd7af | 0xf900..=0xfaff | 0xff00..=0xffef)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_official_filter_row_by_row() {
        let rows: &[(&str, &str, &str)] = &[
            ("plain CJK", "你好，世界。", "你好，世界。"),
            (
                "bold stays",
                "**重要** and **bold**",
                "**重要** and **bold**",
            ),
            ("italic around CJK dropped", "这是*强调*的", "这是强调的"),
            ("underscore italic around CJK dropped", "_中文_", "中文"),
            ("triple around CJK dropped", "***很重要***", "很重要"),
            (
                "italic around latin stays",
                "an *italic* word",
                "an *italic* word",
            ),
            (
                "underscores become full width",
                "a_b_c and snake_case",
                "a＿b＿c and snake＿case",
            ),
            (
                "angle brackets outside code",
                "if a < b > c",
                "if a ＜ b ＞ c",
            ),
            ("a quote marker stays", "> 引用 a<b", "> 引用 a＜b"),
            (
                "inline code verbatim",
                "run `a_b <c>` now_",
                "run `a_b <c>` now＿",
            ),
            (
                "image removed",
                "看图 ![diagram](https://x.io/a_b.png) 完",
                "看图  完",
            ),
            (
                "link target kept",
                "[my_doc](https://x.io/a_b)",
                "[my＿doc](https://x.io/a_b)",
            ),
            (
                "bare URL kept",
                "see https://x.io/a_b?q=<1>",
                "see https://x.io/a_b?q=<1>",
            ),
            ("H5 marker dropped", "##### 小标题", "小标题"),
            ("H6 marker dropped", "###### Small", "Small"),
            ("H2 stays", "## 标题", "## 标题"),
            ("strike stays", "~~删除~~", "~~删除~~"),
            (
                "table stays",
                "| 名称 | 值 |\n|---|---|\n| a | 1 |",
                "| 名称 | 值 |\n|---|---|\n| a | 1 |",
            ),
            ("rule stays", "___", "___"),
            ("unpaired backtick is text", "a ` b_c", "a ` b＿c"),
        ];
        for (what, input, want) in rows {
            assert_eq!(for_wechat(input), *want, "{what}");
        }
    }

    #[test]
    fn code_blocks_are_verbatim_and_an_open_one_is_closed() {
        let text = "前言 a_b\n\n```rust\nlet a_b = x < y;\n```\n\n后记";
        assert_eq!(
            for_wechat(text),
            "前言 a＿b\n\n```rust\nlet a_b = x < y;\n```\n\n后记"
        );
        assert_eq!(for_wechat("```\nfn a_b() {}\n"), "```\nfn a_b() {}\n```");
    }

    #[test]
    fn a_long_mixed_answer_splits_within_the_limit_with_balanced_fences() {
        let mut text = String::new();
        for i in 0..60 {
            text.push_str(&format!(
                "第{i}段：这是一个很长的段落，包含 snake_case 和 a<b。\n\n"
            ));
            if i % 10 == 0 {
                text.push_str("```\nlet x_y = 1;\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n");
            }
        }
        let pieces: Vec<String> = crate::conversation::split(&text, MAX_CHARS)
            .iter()
            .map(|p| for_wechat(p))
            .collect();
        assert!(pieces.len() > 1);
        for p in &pieces {
            assert!(p.chars().count() <= MAX_CHARS);
            assert_eq!(p.matches("```").count() % 2, 0, "{p}");
            assert!(!p.contains('<') && !p.contains("snake_case"));
        }
        assert!(pieces.concat().contains("let x_y = 1;"), "code untouched");
    }
}
