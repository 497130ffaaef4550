//! Text helpers the daemon's renderer uses for Telegram's HTML subset (spec §4.1).

pub use crate::message::{utf16_len, utf16_slice};

/// Escapes `&`, `<`, `>` and `"` so `text` shows literally inside `parse_mode=HTML` (also
/// inside an attribute value).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_counts_like_the_platform() {
        assert_eq!(escape_html("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(utf16_slice("😀 /x", 3, 2), Some("/x"));
        assert_eq!(utf16_slice("😀", 1, 1), None, "inside a surrogate pair");
        assert_eq!(utf16_slice("ab", 1, 5), None);
        assert_eq!(utf16_slice("ab", 2, 0), Some(""));
    }
}
