//! MIME decoding with mail-parser into a bounded [`MailItem`]. Works on hostile input:
//! every size is capped, nothing here panics on malformed bytes, and control characters
//! (terminal escapes, bidi overrides) are removed from every string kept.

use mail_parser::decoders::html::html_to_text;
use mail_parser::{Address, HeaderValue, Message, MessageParser};

use crate::item::{MailAddress, MailItem};
use crate::settings::ParseLimits;

/// Decodes a raw message (headers and as much of the body as is available).
pub fn parse_message(raw: &[u8], limits: &ParseLimits) -> MailItem {
    let header_end = find_header_end(raw).unwrap_or(raw.len());
    let cap = usize::try_from(limits.max_fetch_bytes).unwrap_or(usize::MAX);
    let truncated = raw.len() > cap;
    let prefix = &raw[..raw.len().min(cap)];
    parse_parts(Some(&raw[..header_end]), Some(prefix), truncated, limits)
}

/// Decodes a separately fetched header block and a prefix of the whole message.
/// `prefix_truncated` says the prefix is shorter than the message.
pub(crate) fn parse_parts(
    header: Option<&[u8]>,
    prefix: Option<&[u8]>,
    prefix_truncated: bool,
    limits: &ParseLimits,
) -> MailItem {
    let mut item = MailItem::default();
    if let Some(header) = header {
        let header = cut_at_line(header, limits.max_header_bytes);
        if let Some(msg) = MessageParser::default().parse_headers(header) {
            fill_headers(&mut item, &msg, limits);
        }
    }
    if let Some(prefix) = prefix
        && let Some(msg) = MessageParser::default().parse(prefix)
    {
        let text = body_text(&msg);
        let (excerpt, cut) = clean_text(&text, limits.max_excerpt_bytes);
        item.excerpt = excerpt;
        item.excerpt_truncated = cut || prefix_truncated;
    }
    item
}

/// The first text body. HTML gets `<br>` before block elements first, because mail-parser's
/// converter breaks lines only at `<br>` and `</p>`, running `<h1>Title</h1><div>Text`
/// together as `Title Text`.
fn body_text(msg: &Message<'_>) -> String {
    match msg.text_part(0) {
        Some(part) if part.is_text_html() => {
            let html = part.text_contents().unwrap_or_default();
            html_to_text(&break_blocks(html))
        }
        _ => msg.body_text(0).map(|t| t.into_owned()).unwrap_or_default(),
    }
}

/// Inserts `<br>` before every block-level tag (opening or closing) other than `p` and `br`,
/// which the converter already breaks at. Blank-line runs are folded later by `clean_text`.
fn break_blocks(html: &str) -> String {
    const BLOCKS: &[&str] = &[
        "div",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "ul",
        "ol",
        "blockquote",
        "pre",
        "hr",
        "section",
        "article",
        "header",
        "footer",
    ];
    let mut out = String::with_capacity(html.len() + html.len() / 16);
    let mut rest = html;
    while let Some(pos) = rest.find('<') {
        out.push_str(&rest[..pos]);
        let tag = &rest[pos + 1..];
        let name_start = tag.strip_prefix('/').unwrap_or(tag);
        let name_len = name_start
            .bytes()
            .take_while(u8::is_ascii_alphanumeric)
            .count();
        let name = &name_start[..name_len];
        if BLOCKS.iter().any(|b| b.eq_ignore_ascii_case(name)) {
            out.push_str("<br>");
        }
        out.push('<');
        rest = tag;
    }
    out.push_str(rest);
    out
}

fn fill_headers(item: &mut MailItem, msg: &Message<'_>, limits: &ParseLimits) {
    let field = |s: &str| clean_line(s, limits.max_field_chars);
    item.message_id = msg.message_id().map(field).filter(|s| !s.is_empty());
    item.from = msg
        .from()
        .and_then(|a| addresses(a, 1, limits).into_iter().next());
    item.reply_to = msg
        .reply_to()
        .and_then(|a| addresses(a, 1, limits).into_iter().next());
    item.to = msg
        .to()
        .map(|a| addresses(a, limits.max_list_items, limits))
        .unwrap_or_default();
    item.cc = msg
        .cc()
        .map(|a| addresses(a, limits.max_list_items, limits))
        .unwrap_or_default();
    item.subject = msg.subject().map(field).unwrap_or_default();
    item.date_unix = msg
        .date()
        .filter(|d| d.is_valid())
        .map(|d| d.to_timestamp());
    item.in_reply_to = ids(msg.in_reply_to(), limits).into_iter().next();
    let mut refs = ids(msg.references(), limits);
    // Keep the newest: they matter most for threading, and RFC 5322 allows trimming the middle.
    if refs.len() > limits.max_list_items {
        refs.drain(..refs.len() - limits.max_list_items);
    }
    item.references = refs;
    item.list_unsubscribe = msg.header("List-Unsubscribe").is_some();
    item.list_id = msg.header("List-Id").is_some();
    item.auto_submitted = token(msg.header_raw("Auto-Submitted"));
    item.precedence = token(msg.header_raw("Precedence"));
}

fn addresses(list: &Address<'_>, max: usize, limits: &ParseLimits) -> Vec<MailAddress> {
    list.iter()
        .take(max)
        .map(|a| MailAddress {
            name: a
                .name()
                .map(|n| clean_line(n, limits.max_field_chars))
                .filter(|n| !n.is_empty()),
            address: a
                .address()
                .map(|s| clean_line(s, limits.max_field_chars))
                .unwrap_or_default(),
        })
        .collect()
}

/// Message-IDs from In-Reply-To or References (mail-parser already strips the brackets).
fn ids(value: &HeaderValue<'_>, limits: &ParseLimits) -> Vec<String> {
    let raw: Vec<&str> = match value {
        HeaderValue::Text(t) => vec![t.as_ref()],
        HeaderValue::TextList(list) => list.iter().map(|t| t.as_ref()).collect(),
        _ => Vec::new(),
    };
    raw.into_iter()
        .map(|s| clean_line(s.trim_matches(['<', '>']), limits.max_field_chars))
        .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
        .collect()
}

/// The first token of a header such as `Auto-Submitted: auto-replied; owner-email=...`.
fn token(raw: Option<&str>) -> Option<String> {
    let value = raw?.split(';').next()?.trim();
    let token: String = value.chars().take(64).filter(|c| !c.is_control()).collect();
    (!token.is_empty()).then(|| token.to_ascii_lowercase())
}

/// Cuts a header block at the last line end within `max` bytes.
fn cut_at_line(header: &[u8], max: usize) -> &[u8] {
    if header.len() <= max {
        return header;
    }
    let window = &header[..max];
    match window.iter().rposition(|&b| b == b'\n') {
        Some(pos) => &header[..=pos],
        None => &[],
    }
}

/// The offset of the blank line ending the header block.
fn find_header_end(raw: &[u8]) -> Option<usize> {
    let crlf = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
    let lf = raw.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Characters that can reorder or hide text on a screen (bidi controls, zero-width).
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// One line of header text: whitespace folded to single spaces, controls removed, bounded.
fn clean_line(s: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if c.is_control() || is_invisible(c) {
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
        if out.chars().count() >= max_chars {
            break;
        }
    }
    out
}

/// Body text made readable and bounded: controls removed, line ends normalised, trailing
/// spaces dropped, runs of blank lines folded to one, cut at a character boundary.
/// Returns the text and whether it was cut.
pub(crate) fn clean_text(s: &str, max_bytes: usize) -> (String, bool) {
    let mut out = String::with_capacity(s.len().min(max_bytes + 4));
    let mut blank_lines = 0usize;
    for line in s.split('\n') {
        let line: String = line
            .chars()
            .map(|c| if c == '\t' || c == '\u{a0}' { ' ' } else { c })
            .filter(|c| !c.is_control() && !is_invisible(*c))
            .collect();
        let line = line.trim_end();
        if line.is_empty() {
            blank_lines += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_lines > 0 { "\n\n" } else { "\n" });
        }
        blank_lines = 0;
        out.push_str(line);
        if out.len() > max_bytes {
            break;
        }
    }
    if out.len() <= max_bytes {
        return (out, false);
    }
    let mut end = max_bytes;
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_bounds_on_char_boundary() {
        let (t, cut) = clean_text("你好世界", 7);
        assert_eq!(t, "你好");
        assert!(cut);
        let (t, cut) = clean_text("a\r\n\r\n\r\n\r\nb\x1b[31m\u{202E}c  \n", 100);
        assert_eq!(t, "a\n\nb[31mc");
        assert!(!cut);
    }

    #[test]
    fn clean_line_folds_and_bounds() {
        assert_eq!(
            clean_line("  Re:\r\n\t hello \x07 world ", 100),
            "Re: hello world"
        );
        assert_eq!(clean_line(&"x".repeat(1000), 10).len(), 10);
    }

    #[test]
    fn header_cut_keeps_whole_lines() {
        assert_eq!(cut_at_line(b"A: 1\r\nB: 2\r\n", 8), b"A: 1\r\n");
        assert_eq!(cut_at_line(b"A: 1\r\n", 100), b"A: 1\r\n");
        assert_eq!(cut_at_line(b"AAAAAAAA", 4), b"");
    }

    #[test]
    fn block_tags_get_line_breaks() {
        assert_eq!(
            break_blocks("<h1>T</H1><p>x<b>y</b>"),
            "<br><h1>T<br></H1><p>x<b>y</b>"
        );
        assert_eq!(break_blocks("a < b <"), "a < b <");
        assert_eq!(break_blocks(""), "");
    }

    #[test]
    fn tokens_are_lowercased_first_words() {
        assert_eq!(
            token(Some(" Auto-Replied; x=y")).as_deref(),
            Some("auto-replied")
        );
        assert_eq!(token(Some("BULK")).as_deref(), Some("bulk"));
        assert_eq!(token(Some("  ")), None);
        assert_eq!(token(None), None);
    }

    #[test]
    fn hostile_input_never_panics_and_stays_bounded() {
        let limits = ParseLimits {
            max_excerpt_bytes: 256,
            ..ParseLimits::default()
        };
        // A deterministic byte soup (xorshift), plus shapes known to upset parsers.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut soup = Vec::with_capacity(200_000);
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            soup.push((x & 0xff) as u8);
        }
        let nested = "Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\n".repeat(5_000);
        let long_header = format!("Subject: {}\r\n\r\nbody", "=?utf-8?b?".repeat(50_000));
        let cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"\r\n\r\n".to_vec(),
            b"From: <\r\nTo: ,,,,@@@\r\nDate: 99 Foo 99999 99:99:99 +9999\r\n\r\n".to_vec(),
            b"Content-Type: text/plain; charset=gbk\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!====".to_vec(),
            soup,
            nested.into_bytes(),
            long_header.into_bytes(),
        ];
        for raw in cases {
            let item = parse_message(&raw, &limits);
            assert!(item.excerpt.len() <= 256);
            assert!(item.subject.chars().count() <= limits.max_field_chars);
            assert!(item.to.len() <= limits.max_list_items);
        }
    }
}
