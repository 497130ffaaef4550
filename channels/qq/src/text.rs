//! Text rules (§4.2): links are refused (`40054010`), so they are defanged and counted, and long
//! answers are split at the platform's limit on paragraph and line boundaries.

/// Text with its links made harmless, and how many there were (the daemon says what was removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defanged {
    /// The text to send.
    pub text: String,
    /// How many `http(s)://` links were rewritten.
    pub links: usize,
}

/// Rewrites every `http://`/`https://` link as its host and path with the dots of the host
/// bracketed (`example[.]com/a`). Whether the platform also refuses bare domains is
/// unconfirmed; the dots are bracketed so such a check would not match either.
pub fn defang_links(text: &str) -> Defanged {
    let mut out = String::with_capacity(text.len());
    let mut links = 0;
    let mut rest = text;
    while let Some(start) = find_scheme(rest) {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let scheme_len = after.find("://").map_or(0, |i| i + 3);
        let body = &after[scheme_len..];
        let end = body.find(char::is_whitespace).unwrap_or(body.len());
        let (host, path) = body[..end].split_at(body[..end].find('/').unwrap_or(end));
        out.push_str(&host.replace('.', "[.]"));
        out.push_str(path);
        links += 1;
        rest = &body[end..];
    }
    out.push_str(rest);
    Defanged { text: out, links }
}

fn find_scheme(s: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    [lower.find("http://"), lower.find("https://")]
        .into_iter()
        .flatten()
        .min()
}

/// Splits `text` into pieces of at most `max` characters (use [`crate::limits::MAX_TEXT_CHARS`]), preferring a
/// blank line, then a line end, then a space; a piece never breaks a character.
pub fn split_text(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut pieces = Vec::new();
    let mut rest = text.trim_end();
    while rest.chars().count() > max {
        let limit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        let window = &rest[..limit];
        let cut = ["\n\n", "\n", " "]
            .iter()
            .find_map(|sep| window.rfind(sep).filter(|i| *i > 0))
            .unwrap_or(limit);
        pieces.push(rest[..cut].trim_end().to_owned());
        rest = rest[cut..].trim_start_matches(['\n', ' ']);
    }
    if !rest.trim().is_empty() {
        pieces.push(rest.to_owned());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_defanged_and_counted() {
        let d = defang_links("see https://example.com/a?b and HTTP://x.cn end");
        assert_eq!(d.text, "see example[.]com/a?b and x[.]cn end");
        assert_eq!(d.links, 2);
        assert!(!d.text.to_ascii_lowercase().contains("http://"));
        assert_eq!(defang_links("no links").links, 0);
        assert_eq!(defang_links("https://").text, "");
    }

    #[test]
    fn splits_on_paragraphs_then_lines_and_never_inside_a_character() {
        let text = format!("{}\n\n{}", "a".repeat(8), "b".repeat(8));
        assert_eq!(split_text(&text, 10), vec!["a".repeat(8), "b".repeat(8)]);
        let cjk = "字".repeat(25);
        let parts = split_text(&cjk, 10);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= 10));
        assert_eq!(parts.concat(), cjk);
        assert!(split_text("  \n", 10).is_empty());
    }
}
