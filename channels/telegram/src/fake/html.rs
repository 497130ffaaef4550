//! The fake's HTML parser for `parse_mode=HTML` (spec §4.1, §8.7): the platform's tag set and
//! named entities only, tags closed in order. Returns the visible text, whose length is what
//! the 4096 limit counts, or the platform's "can't parse entities" detail.

const TAGS: [&str; 17] = [
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "tg-emoji",
    "code",
    "pre",
    "blockquote",
    "br",
];

/// The visible text of `html`, or why the platform would refuse it.
pub(crate) fn visible_text(html: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut open: Vec<String> = Vec::new();
    let mut rest = html;
    let mut offset = 0usize;
    while let Some(c) = rest.chars().next() {
        let step = match c {
            '<' => tag(rest, offset, &mut open)?,
            '&' => entity(rest, &mut out),
            c => {
                out.push(c);
                c.len_utf8()
            }
        };
        offset += step;
        rest = &rest[step..];
    }
    match open.last() {
        Some(name) => Err(format!(
            "Can't find end tag corresponding to start tag \"{name}\""
        )),
        None => Ok(out),
    }
}

/// Reads one tag at the start of `rest`; returns its length in bytes.
fn tag(rest: &str, offset: usize, open: &mut Vec<String>) -> Result<usize, String> {
    let Some(end) = rest.find('>') else {
        return Err(format!(
            "Can't find end of the entity starting at byte offset {offset}"
        ));
    };
    let inner = &rest[1..end];
    if let Some(name) = inner.strip_prefix('/') {
        let name = name.trim().to_ascii_lowercase();
        if open.last() != Some(&name) {
            return Err(format!("Unexpected end tag at byte offset {offset}"));
        }
        open.pop();
        return Ok(end + 1);
    }
    let name: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if name.is_empty() || !TAGS.contains(&name.as_str()) || inner.contains('<') {
        return Err(format!(
            "Unsupported start tag \"{name}\" at byte offset {offset}"
        ));
    }
    if name != "br" {
        open.push(name);
    }
    Ok(end + 1)
}

/// Reads `&…;` at the start of `rest` into `out`; a bare `&` is literal.
fn entity(rest: &str, out: &mut String) -> usize {
    let Some(end) = rest[1..].find(';').map(|i| i + 1).filter(|i| *i <= 12) else {
        out.push('&');
        return 1;
    };
    let name = &rest[1..end];
    let decoded = match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        n if n.starts_with("#x") => u32::from_str_radix(&n[2..], 16)
            .ok()
            .and_then(char::from_u32),
        n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
        _ => None,
    };
    match decoded {
        Some(c) => {
            out.push(c);
            end + 1
        }
        None => {
            out.push('&');
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_tag_set_and_entities() {
        assert_eq!(
            visible_text("<b>a</b> &lt;x&gt; &amp; &#65;").unwrap(),
            "a <x> & A"
        );
        assert_eq!(
            visible_text("<pre><code class=\"language-rust\">x</code></pre>").unwrap(),
            "x"
        );
        assert_eq!(visible_text("a & b").unwrap(), "a & b");
        assert!(
            visible_text("<x>a</x>")
                .unwrap_err()
                .contains("Unsupported start tag")
        );
        assert!(visible_text("a < b").is_err());
        assert!(
            visible_text("1 < 2 > 0")
                .unwrap_err()
                .contains("Unsupported start tag")
        );
        assert!(visible_text("<b>a").unwrap_err().contains("end tag"));
        assert!(visible_text("<b><i>a</b></i>").is_err());
        assert!(visible_text("a <b").is_err());
    }
}
