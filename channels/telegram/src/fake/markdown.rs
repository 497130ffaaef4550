//! The fake's MarkdownV2 parser (spec §4.1, §8.7): outside entities every reserved character
//! must be escaped with `\`; inside code only `` ` `` and `\`; inside a link's URL only `)`
//! and `\`. Returns the visible text or the "can't parse entities" detail.

const RESERVED: &str = "_*[]()~`>#+-=|{}.!";

/// Markers that open and close an entity of the same name.
fn marker(rest: &str) -> Option<(&'static str, &'static str)> {
    [
        ("__", "Underline"),
        ("||", "Spoiler"),
        ("*", "Bold"),
        ("_", "Italic"),
        ("~", "Strikethrough"),
    ]
    .into_iter()
    .find(|(m, _)| rest.starts_with(m))
}

/// The visible text of `md`, or why the platform would refuse it.
pub(crate) fn visible_text(md: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut open: Vec<(&'static str, &'static str, usize)> = Vec::new();
    let mut i = 0usize;
    while let Some(c) = md[i..].chars().next() {
        let rest = &md[i..];
        if c == '\\' {
            let next = rest[1..]
                .chars()
                .next()
                .ok_or("Can't parse entities: unexpected end")?;
            out.push(next);
            i += 1 + next.len_utf8();
        } else if c == '`' {
            let fence = if rest.starts_with("```") { "```" } else { "`" };
            i += fence.len() + code(&md[i + fence.len()..], fence, i, &mut out)?;
        } else if let Some((m, name)) = marker(rest) {
            match open.iter().position(|(o, _, _)| *o == m) {
                Some(p) if p + 1 == open.len() => {
                    open.pop();
                }
                Some(_) => {
                    return Err(format!(
                        "Can't find end of {name} entity at byte offset {i}"
                    ));
                }
                None => open.push((m, name, i)),
            }
            i += m.len();
        } else if c == '[' {
            i += 1 + link(&md[i + 1..], i, &mut out)?;
        } else if c == '>' && (i == 0 || md[..i].ends_with('\n')) {
            i += 1; // a blockquote line
        } else if RESERVED.contains(c) {
            return Err(format!(
                "Character '{c}' is reserved and must be escaped with the preceding '\\'"
            ));
        } else {
            out.push(c);
            i += c.len_utf8();
        }
    }
    match open.last() {
        Some((_, name, at)) => Err(format!(
            "Can't find end of {name} entity at byte offset {at}"
        )),
        None => Ok(out),
    }
}

/// Reads code up to its closing `fence`; returns the bytes consumed after the opening fence.
fn code(rest: &str, fence: &str, at: usize, out: &mut String) -> Result<usize, String> {
    let mut i = 0;
    while let Some(c) = rest[i..].chars().next() {
        if rest[i..].starts_with(fence) {
            return Ok(i + fence.len());
        }
        if c == '\\'
            && let Some(next @ ('`' | '\\')) = rest[i + 1..].chars().next()
        {
            out.push(next);
            i += 2;
            continue;
        }
        out.push(c);
        i += c.len_utf8();
    }
    Err(format!("Can't find end of Code entity at byte offset {at}"))
}

/// Reads `text](url)` after a `[`; returns the bytes consumed.
fn link(rest: &str, at: usize, out: &mut String) -> Result<usize, String> {
    let end = || format!("Can't find end of Link entity at byte offset {at}");
    let close = rest.find("](").ok_or_else(end)?;
    let text = visible_text(&rest[..close])?;
    out.push_str(&text);
    let url = &rest[close + 2..];
    let mut i = 0;
    while let Some(c) = url[i..].chars().next() {
        match c {
            '\\' => i += 1 + url[i + 1..].chars().next().map_or(0, char::len_utf8),
            ')' => return Ok(close + 2 + i + 1),
            c => i += c.len_utf8(),
        }
    }
    Err(end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_characters_must_be_escaped_outside_entities() {
        assert_eq!(
            visible_text("1\\.5 *bold* _it_ __u__").unwrap(),
            "1.5 bold it u"
        );
        assert_eq!(
            visible_text("`a.b*c` ```\nx!\n```").unwrap(),
            "a.b*c \nx!\n"
        );
        assert_eq!(
            visible_text("[a site](https://x.org/a_(b\\))").unwrap(),
            "a site"
        );
        assert!(visible_text("1.5").unwrap_err().contains("reserved"));
        assert!(visible_text("a-b").is_err());
        assert!(visible_text("*open").unwrap_err().contains("Bold"));
        assert!(visible_text("*a _b* c_").is_err());
        assert!(visible_text("`open").is_err());
        assert!(visible_text("[t](u").is_err());
        assert!(visible_text("ends\\").is_err());
    }
}
