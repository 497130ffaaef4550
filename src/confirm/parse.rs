//! Reading an owner's text as an answer, and the short codes that tell questions apart in a chat.

/// An answer read from text: yes or no (or "always", a yes), and the code it names, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextAnswer {
    /// True for yes.
    pub yes: bool,
    /// The yes was "always" (kept only by a question that offers it; elsewhere a plain yes).
    pub always: bool,
    /// The question's code, upper-case, when the text named one.
    pub code: Option<String>,
}

/// Digits of a code: no 0 or 1, which read like O and I.
const CODE_DIGITS: &str = "23456789";
/// Letters of a code: no I, L, O (look like digits), no N, Y (look like the answers).
const CODE_LETTERS: &str = "ABCDEFGHJKMPQRSTUVWXZ";

/// How many distinct codes exist.
pub fn code_count() -> usize {
    CODE_DIGITS.len() * CODE_LETTERS.len()
}

/// The `n`-th code (a digit then a letter, e.g. `7F`), wrapping around.
pub fn code_at(n: usize) -> String {
    let n = n % code_count();
    let d = CODE_DIGITS.as_bytes()[n / CODE_LETTERS.len()] as char;
    let l = CODE_LETTERS.as_bytes()[n % CODE_LETTERS.len()] as char;
    format!("{d}{l}")
}

/// Whether `s` (any case) is a well-formed code.
pub fn is_code(s: &str) -> bool {
    let mut chars = s.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(d), Some(l), None) => {
            CODE_DIGITS.contains(d) && CODE_LETTERS.contains(l.to_ascii_uppercase())
        }
        _ => false,
    }
}

/// What an answer word says: (yes, always).
type Said = (bool, bool);

/// The answer word `w` stands for, if it is one (`yes`, `y`, `是`, `好`, `同意`; `no`, `n`, `否`,
/// `不`, `拒绝`; `always`, `总是`, `始终`). `with_code`: the short `a` for always counts only
/// beside a code, so a stray "a" never grants anything.
fn word(w: &str, with_code: bool) -> Option<Said> {
    match w {
        "yes" | "y" | "是" | "好" | "同意" => Some((true, false)),
        "no" | "n" | "否" | "不" | "拒绝" => Some((false, false)),
        "always" | "总是" | "始终" => Some((true, true)),
        "a" if with_code => Some((true, true)),
        _ => None,
    }
}

fn answer((yes, always): Said, code: Option<String>) -> TextAnswer {
    TextAnswer { yes, always, code }
}

/// Reads `text` as an answer: a yes/no word alone, or with a code before or after it (`Y 7F`,
/// `7f no`, `y7f`, `好 7F`). Anything else (a sentence that merely contains "yes") is not one.
pub fn parse(text: &str) -> Option<TextAnswer> {
    let trimmed = text
        .trim()
        .trim_end_matches(['.', '!', '。', '！', '~', '～'])
        .trim();
    if trimmed.is_empty() || trimmed.chars().count() > 16 {
        return None;
    }
    let lower = trimmed.to_lowercase();
    let parts: Vec<&str> = lower.split_whitespace().collect();
    match parts.as_slice() {
        [one] => word(one, false)
            .map(|said| answer(said, None))
            .or_else(|| glued(one)),
        [a, b] => {
            let (w, c) = if is_code(b) { (a, b) } else { (b, a) };
            let said = word(w, true)?;
            is_code(c).then(|| answer(said, Some(c.to_ascii_uppercase())))
        }
        _ => None,
    }
}

/// `y7f`, `7fy`, `是7F`: a word and a code written without a space.
fn glued(s: &str) -> Option<TextAnswer> {
    let n = s.chars().count();
    if n < 3 {
        return None;
    }
    let split = |at: usize| {
        let idx = s.char_indices().nth(at).map(|(i, _)| i)?;
        Some(s.split_at(idx))
    };
    let (head, tail) = split(n - 2)?;
    if is_code(tail)
        && let Some(said) = word(head, true)
    {
        return Some(answer(said, Some(tail.to_ascii_uppercase())));
    }
    let (head, tail) = split(2)?;
    if is_code(head)
        && let Some(said) = word(tail, true)
    {
        return Some(answer(said, Some(head.to_ascii_uppercase())));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes(code: Option<&str>) -> Option<TextAnswer> {
        Some(answer((true, false), code.map(str::to_string)))
    }

    fn no(code: Option<&str>) -> Option<TextAnswer> {
        Some(answer((false, false), code.map(str::to_string)))
    }

    fn always(code: Option<&str>) -> Option<TextAnswer> {
        Some(answer((true, true), code.map(str::to_string)))
    }

    #[test]
    fn always_with_a_code_or_spelled_out_but_never_a_bare_a() {
        assert_eq!(parse("A 7F"), always(Some("7F")));
        assert_eq!(parse("7f a"), always(Some("7F")));
        assert_eq!(parse("a7f"), always(Some("7F")));
        assert_eq!(parse("always 7F"), always(Some("7F")));
        assert_eq!(parse("总是 7F"), always(Some("7F")));
        assert_eq!(parse("always"), always(None));
        assert_eq!(parse("始终"), always(None));
        assert_eq!(parse("a"), None, "a stray letter grants nothing");
        assert_eq!(parse("A."), None);
    }

    #[test]
    fn bare_words_in_every_language_we_accept() {
        for w in ["yes", "Y", "YES", " yes! ", "是", "好", "同意", "好。"] {
            assert_eq!(parse(w), yes(None), "{w}");
        }
        for w in ["no", "n", "No.", "否", "不", "拒绝", "拒绝！"] {
            assert_eq!(parse(w), no(None), "{w}");
        }
    }

    #[test]
    fn a_code_before_after_or_glued() {
        assert_eq!(parse("Y 7F"), yes(Some("7F")));
        assert_eq!(parse("y 7f"), yes(Some("7F")));
        assert_eq!(parse("7F no"), no(Some("7F")));
        assert_eq!(parse("n7f"), no(Some("7F")));
        assert_eq!(parse("7fy"), yes(Some("7F")));
        assert_eq!(parse("是 7F"), yes(Some("7F")));
        assert_eq!(parse("拒绝7F"), no(Some("7F")));
        assert_eq!(parse("同意 3K"), yes(Some("3K")));
    }

    #[test]
    fn sentences_and_near_misses_are_not_answers() {
        for t in [
            "",
            "yes please do it",
            "yes 7F now",
            "yeah",
            "nope",
            "Y 1I",
            "Y 77",
            "7F",
            "y 7FF",
            "好的呀",
            "/new",
            "maybe",
            "不知道",
        ] {
            assert_eq!(parse(t), None, "{t:?}");
        }
    }

    #[test]
    fn codes_are_distinct_well_formed_and_avoid_answer_letters() {
        let all: std::collections::BTreeSet<String> = (0..code_count()).map(code_at).collect();
        assert_eq!(all.len(), code_count());
        for c in &all {
            assert!(is_code(c), "{c}");
            assert!(!c.contains(['Y', 'N', 'O', 'I', 'L', '0', '1']), "{c}");
        }
        assert_eq!(code_at(code_count()), code_at(0));
    }
}
