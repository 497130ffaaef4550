//! Where the first streamed piece of an answer may end: at a sentence end or a line end, once it
//! says enough, and never inside code. An answer arrives token by token, so a place that could
//! still turn out to be mid-sentence (`e.g.` before more text arrives) is not taken until the
//! text after it shows which it is.

/// Closing quotes and brackets that belong to the sentence they end (`他说：“好。”`).
const CLOSERS: &[char] = &['"', '\'', ')', ']', '”', '’', '」', '』', '）', '》', '】'];

/// The byte offset just after the first sentence or line end of `s` that follows at least
/// `min` non-blank characters, outside fenced and inline code; `None` while there is none yet.
pub(super) fn first_end(s: &str, min: usize) -> Option<usize> {
    let mut scan = Scan::default();
    for (i, c) in s.char_indices() {
        scan.step(s, i, c);
        if scan.count < min || scan.in_code() {
            continue;
        }
        let after = i + c.len_utf8();
        let end = match c {
            '\n' => Some(after),
            '。' | '！' | '？' | '…' => Some(closers_end(s, after)),
            '!' | '?' => spaced(s, closers_end(s, after)),
            '.' => full_stop(s, i, closers_end(s, after)),
            _ => None,
        };
        if let Some(end) = end {
            return Some(end);
        }
    }
    None
}

/// Fence and inline-code state, and the non-blank characters seen.
#[derive(Default)]
struct Scan {
    count: usize,
    /// Inside a fenced block (a line starting with ``` opens or closes it).
    fenced: bool,
    /// Inside `inline code` on the current line.
    inline: bool,
    line_start: usize,
}

impl Scan {
    fn step(&mut self, s: &str, i: usize, c: char) {
        if !c.is_whitespace() {
            self.count += 1;
        }
        if c == '\n' {
            let line = s[self.line_start..i].trim();
            if line.starts_with("```") {
                self.fenced = !self.fenced;
            }
            self.line_start = i + 1;
            self.inline = false;
        } else if c == '`' && !self.fenced && !s[self.line_start..].trim_start().starts_with("```")
        {
            self.inline = !self.inline;
        }
    }

    /// Inside code: a fenced block (a fence line's own newline opens it, so it is no place to
    /// end; a closing fence's newline closes it, so the block's end is) or inline code.
    fn in_code(&self) -> bool {
        self.fenced || self.inline
    }
}

/// After `at`, past any closing quotes and brackets.
fn closers_end(s: &str, at: usize) -> usize {
    let rest = &s[at..];
    let skipped: usize = rest
        .chars()
        .take_while(|c| CLOSERS.contains(c))
        .map(char::len_utf8)
        .sum();
    at + skipped
}

/// `at` when whitespace follows it (known: more text has arrived), else not yet.
fn spaced(s: &str, at: usize) -> Option<usize> {
    s[at..].chars().next().filter(|c| c.is_whitespace())?;
    Some(at)
}

/// A full stop ends a sentence when a space and then a capital, a digit, CJK or a line end
/// follow, and it does not end a single letter (`J. Smith`) or a number (`3.5`).
fn full_stop(s: &str, dot: usize, at: usize) -> Option<usize> {
    let before = s[..dot].chars().next_back()?;
    let word: String = s[..dot]
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric())
        .collect();
    if !(before.is_alphanumeric() || CLOSERS.contains(&before)) || word.chars().count() == 1 {
        return None;
    }
    let mut next = s[at..].chars();
    match next.next()? {
        '\n' => return Some(at),
        c if !c.is_whitespace() => return None,
        _ => {}
    }
    let following = next.find(|c| *c != ' ')?;
    let starts = following.is_uppercase()
        || following.is_ascii_digit()
        || following == '\n'
        || is_cjk(following);
    starts.then_some(at)
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{9fff}' | '\u{ac00}'..='\u{d7af}' | '\u{f900}'..='\u{faff}' | '\u{ff00}'..='\u{ffef}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(s: &str, min: usize) -> Option<&str> {
        first_end(s, min).map(|e| &s[..e])
    }

    #[test]
    fn a_full_stop_ends_a_sentence_only_when_the_next_one_shows() {
        let s = "Long enough here.";
        assert_eq!(piece(s, 5), None, "nothing follows yet");
        assert_eq!(piece("Long enough here. ", 5), None, "still not known");
        assert_eq!(
            piece("Long enough here. Next", 5),
            Some("Long enough here.")
        );
        assert_eq!(
            piece("Long enough here.\nnext", 5),
            Some("Long enough here.")
        );
    }

    #[test]
    fn abbreviations_initials_and_numbers_are_not_sentence_ends() {
        let s = "This is e.g. a test, by J. Smith, at 3.5 per cent. Then more";
        assert_eq!(
            piece(s, 5),
            Some("This is e.g. a test, by J. Smith, at 3.5 per cent.")
        );
        assert_eq!(
            piece("Short. Then a longer sentence here. More", 20),
            Some("Short. Then a longer sentence here.")
        );
    }

    #[test]
    fn questions_exclamations_and_chinese_ends() {
        assert_eq!(
            piece("Is this long enough? yes", 5),
            Some("Is this long enough?")
        );
        assert_eq!(
            piece("这是第一句话，内容足够长了。然后", 5),
            Some("这是第一句话，内容足够长了。")
        );
        assert_eq!(
            piece("他说：“好的，没问题。”后面", 5),
            Some("他说：“好的，没问题。”")
        );
    }

    #[test]
    fn never_inside_code() {
        let s = "```\nline one. Line two.\nmore\n```\nAfter it";
        assert_eq!(piece(s, 3), Some("```\nline one. Line two.\nmore\n```\n"));
        assert_eq!(
            piece("Run `a. Bb. Cc` now! Yes", 3),
            Some("Run `a. Bb. Cc` now!")
        );
        assert_eq!(piece("```rust\nfn a() {}", 1), None, "an open block");
    }

    #[test]
    fn a_line_end_ends_the_piece_once_it_says_enough() {
        assert_eq!(piece("- one\n- two\n", 6), Some("- one\n- two\n"));
        assert_eq!(piece("- one\n", 6), None);
    }
}
