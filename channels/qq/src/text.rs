//! Text rules (§4.2): links are refused (`40054010`), so they are defanged and counted. Splitting
//! long answers is the daemon's (its code-aware splitter, with [`crate::limits::MAX_TEXT_CHARS`]).

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
}
