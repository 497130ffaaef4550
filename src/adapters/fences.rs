//! The lines of a Markdown answer and whether each is inside a fenced code block, read the way
//! the core's splitter reads fences (any line starting with three backticks opens a block, a
//! bare three-backtick line closes it): the one scan every platform renderer shares, so their
//! idea of "outside code" never drifts apart.

/// Where one line stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A line opening or closing a code block.
    Fence,
    /// A line inside a code block.
    Code,
    /// Anything else.
    Prose,
}

/// The lines of a text, each with its newline (the last may have none), and their [`Kind`].
pub(crate) struct Lines<'a> {
    inner: std::str::SplitInclusive<'a, char>,
    in_code: bool,
}

impl<'a> Lines<'a> {
    /// The lines of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Lines {
            inner: text.split_inclusive('\n'),
            in_code: false,
        }
    }

    /// Whether the lines read so far leave a code block open.
    pub(crate) fn in_code(&self) -> bool {
        self.in_code
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (Kind, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let line = self.inner.next()?;
        let t = line.trim();
        let kind = if self.in_code {
            if t == "```" {
                self.in_code = false;
                Kind::Fence
            } else {
                Kind::Code
            }
        } else if t.starts_with("```") {
            self.in_code = true;
            Kind::Fence
        } else {
            Kind::Prose
        };
        Some((kind, line))
    }
}

/// `line` without its newline (and a carriage return before it).
pub(crate) fn body(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_open_with_a_language_and_close_bare() {
        let text = "a\n```rust\nlet x = 1;\n```md\n```\nb";
        let kinds: Vec<Kind> = Lines::new(text).map(|(k, _)| k).collect();
        use Kind::*;
        assert_eq!(kinds, [Prose, Fence, Code, Code, Fence, Prose]);
        let mut open = Lines::new("```\ncode");
        open.by_ref().for_each(drop);
        assert!(open.in_code());
        assert_eq!(body("x\r\n"), "x");
    }
}
