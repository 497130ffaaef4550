//! The agent's Markdown as Telegram's HTML subset (spec §4.1): everything escaped (`&`, `<`,
//! `>`; `"` in attributes), fenced code as `<pre><code class="language-x">`, inline code,
//! bold, italic, strike-through and http(s) links as tags, headings bold, list bullets kept.
//! Anything it cannot read as Markdown stays literal text, so the output always parses.
//!
//! Hand-written rather than a CommonMark crate: Telegram takes a handful of tags with no
//! nesting rules beyond well-formedness, fences must be read exactly as the core's splitter
//! reads them (`adapters::fences`, shared with the other renderers), and a piece the splitter
//! cut inside a code block must still close its `<pre>`.

use scv_telegram::text::escape_html;

use crate::adapters::fences::{Kind, Lines, body};

/// `markdown` as Telegram HTML. The visible text is never longer than the input (only markers
/// are dropped), so a piece within the limit stays within it.
pub(super) fn html(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 32);
    let mut code: Option<(String, String)> = None;
    for (kind, line) in Lines::new(markdown) {
        let newline = line.ends_with('\n');
        match (kind, code.as_mut()) {
            (Kind::Fence, None) => {
                let lang = body(line).trim().trim_start_matches('`').trim();
                code = Some((lang.to_string(), String::new()));
            }
            (Kind::Fence, Some(_)) => {
                if let Some((lang, text)) = code.take() {
                    out.push_str(&pre(&lang, &text));
                }
                if newline {
                    out.push('\n');
                }
            }
            (_, Some((_, text))) => text.push_str(line),
            (_, None) => {
                out.push_str(&prose_line(body(line)));
                if newline {
                    out.push('\n');
                }
            }
        }
    }
    // A piece that ends inside a block (the splitter re-fences long ones) still closes it.
    if let Some((lang, text)) = code {
        out.push_str(&pre(&lang, &text));
    }
    out
}

fn pre(lang: &str, text: &str) -> String {
    let text = escape_html(text.trim_end_matches(['\n', '\r']));
    let lang_ok = !lang.is_empty()
        && lang
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-_#.".contains(&b));
    if lang_ok {
        format!("<pre><code class=\"language-{lang}\">{text}</code></pre>")
    } else {
        format!("<pre>{text}</pre>")
    }
}

/// One line outside code: a heading in bold, a bullet as "•", the rest inline.
fn prose_line(line: &str) -> String {
    let trimmed = line.trim_start();
    let hashes = trimmed.bytes().take_while(|b| *b == b'#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        return format!("<b>{}</b>", inline(trimmed[hashes..].trim()));
    }
    let indent = &line[..line.len() - trimmed.len()];
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            return format!("{indent}• {}", inline(rest));
        }
    }
    inline(line)
}

/// Emphasis markers and their tags, longest first.
const MARKS: [(&str, &str); 5] = [
    ("**", "b"),
    ("__", "b"),
    ("~~", "s"),
    ("*", "i"),
    ("_", "i"),
];

/// Inline Markdown of one line as HTML: code spans, links, emphasis; the rest escaped.
fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut i = 0;
    'scan: while i < s.len() {
        let rest = &s[i..];
        if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
            && end > 0
        {
            out.push_str("<code>");
            out.push_str(&escape_html(&after[..end]));
            out.push_str("</code>");
            i += end + 2;
            continue;
        }
        if let Some((text, url, used)) = link(rest) {
            out.push_str(&format!(
                "<a href=\"{}\">{}</a>",
                escape_html(url),
                inline(text)
            ));
            i += used;
            continue;
        }
        for (mark, tag) in MARKS {
            if let Some(inner) = emphasis(s, i, mark) {
                out.push_str(&format!("<{tag}>{}</{tag}>", inline(inner)));
                i += inner.len() + 2 * mark.len();
                continue 'scan;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
        i += c.len_utf8();
    }
    out
}

/// `[text](url)` at the start of `rest` with a web link: (text, url, bytes used).
fn link(rest: &str) -> Option<(&str, &str, usize)> {
    let after = rest.strip_prefix('[')?;
    let close = after.find("](")?;
    let text = &after[..close];
    let url_part = &after[close + 2..];
    let end = url_part.find(')')?;
    let url = &url_part[..end];
    let web = url.starts_with("https://") || url.starts_with("http://");
    (web && !text.is_empty() && !text.contains('[') && !url.contains(char::is_whitespace))
        .then_some((text, url, 1 + close + 2 + end + 1))
}

/// The text between `mark` at byte `i` of `s` and its closing `mark`, when they make emphasis:
/// not empty, no space just inside, and `_` only at word edges (so `snake_case` stays).
fn emphasis<'a>(s: &'a str, i: usize, mark: &str) -> Option<&'a str> {
    let rest = s[i..].strip_prefix(mark)?;
    if rest.starts_with(mark.as_bytes()[0] as char) || rest.starts_with(char::is_whitespace) {
        return None;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let underscore = mark.starts_with('_');
    if underscore && word(s[..i].chars().next_back()) {
        return None;
    }
    let mut from = 0;
    while let Some(found) = rest[from..].find(mark) {
        let end = from + found;
        let inner = &rest[..end];
        let after = &rest[end + mark.len()..];
        let doubled = after.starts_with(mark.as_bytes()[0] as char);
        let closes = !inner.is_empty()
            && !inner.ends_with(char::is_whitespace)
            && !doubled
            && (!underscore || !word(after.chars().next()));
        if closes {
            return Some(inner);
        }
        from = end + mark.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_markdown_becomes_tags() {
        assert_eq!(html("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
        assert_eq!(
            html("**bold** and *it* and `x<y`"),
            "<b>bold</b> and <i>it</i> and <code>x&lt;y</code>"
        );
        assert_eq!(html("snake_case_name stays"), "snake_case_name stays");
        assert_eq!(html("_it_ ~~gone~~"), "<i>it</i> <s>gone</s>");
        assert_eq!(
            html("[docs](https://x.org/?a=1&b=\"2\")"),
            "<a href=\"https://x.org/?a=1&amp;b=&quot;2&quot;\">docs</a>"
        );
        assert_eq!(html("[local](out/a.png)"), "[local](out/a.png)");
        assert_eq!(html("# Title\n- item"), "<b>Title</b>\n• item");
        assert_eq!(html("2 * 3 * 4"), "2 * 3 * 4");
        assert_eq!(html("**unclosed"), "**unclosed");
    }

    #[test]
    fn code_blocks_are_kept_and_closed() {
        assert_eq!(
            html("see\n```rust\nif a < b {}\n```\nend"),
            "see\n<pre><code class=\"language-rust\">if a &lt; b {}</code></pre>\nend"
        );
        assert_eq!(html("```\n**not bold**"), "<pre>**not bold**</pre>");
        assert_eq!(
            html("```bad lang\nx\n```"),
            "<pre>x</pre>",
            "a language that is not a plain word is left out"
        );
    }
}
