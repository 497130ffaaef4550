//! Which part of an answer is spoken: Markdown marks removed (servers read them aloud), then
//! the text up to the last sentence end within `[speech] voice_max_chars`, so a long answer's
//! voice is its first part and never a ten-minute bubble. The text always goes in full.

/// The spoken part of an answer and whether it is all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spoken {
    /// What is read aloud.
    pub text: String,
    /// Whether the answer was cut.
    pub cut: bool,
}

/// The part of `answer` spoken within `max_chars` characters; `None` when nothing is left to say.
pub fn spoken_part(answer: &str, max_chars: usize) -> Option<Spoken> {
    let plain = strip_markdown(answer);
    let plain = plain.trim();
    if plain.is_empty() {
        return None;
    }
    let total = plain.chars().count();
    if total <= max_chars {
        return Some(Spoken {
            text: plain.to_string(),
            cut: false,
        });
    }
    let head: String = plain.chars().take(max_chars).collect();
    let ends = ['.', '!', '?', '。', '！', '？', '\n'];
    let cut_at = head
        .char_indices()
        .filter(|(_, c)| ends.contains(c))
        .map(|(i, c)| i + c.len_utf8())
        .next_back()
        // No sentence end in reach: the last space, else the cap itself.
        .or_else(|| head.rfind(' '))
        .filter(|i| *i > 0)
        .unwrap_or(head.len());
    Some(Spoken {
        text: head[..cut_at].trim().to_string(),
        cut: true,
    })
}

/// Emphasis, headings, code fences, list bullets and link targets out; the words stay.
fn strip_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            continue;
        }
        let t = t.trim_start_matches('#').trim_start();
        let t = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .unwrap_or(t);
        out.push_str(&strip_links(t).replace(['*', '`', '_', '~'], ""));
        out.push('\n');
    }
    out
}

/// `[words](target)` → `words`.
fn strip_links(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find("](") {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        out.push_str(&rest[..open].replacen('[', "", 1));
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_answer_is_spoken_whole_without_its_marks() {
        let s = spoken_part(
            "# Done\n**All** tests pass. See [the log](http://x/y).",
            600,
        )
        .expect("spoken");
        assert_eq!(s.text, "Done\nAll tests pass. See the log.");
        assert!(!s.cut);
        assert!(spoken_part("```\n```", 600).is_none());
    }

    #[test]
    fn a_long_answer_is_cut_at_a_sentence_within_the_cap() {
        let long = format!("First sentence. Second one! {}", "word ".repeat(200));
        let s = spoken_part(&long, 60).expect("spoken");
        assert_eq!(s.text, "First sentence. Second one!");
        assert!(s.cut);
        let zh = "第一句。第二句很长".repeat(40);
        let s = spoken_part(&zh, 50).expect("spoken");
        assert!(
            s.text.ends_with('。') && s.text.chars().count() <= 50,
            "{}",
            s.text
        );
    }
}
