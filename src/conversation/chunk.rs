//! Splitting a long answer into messages within a platform's size limit.
//!
//! Breaks fall on paragraph boundaries, then sentence boundaries, then spaces; never inside a
//! fenced code block unless that block alone is too long (then it is split by lines and each
//! piece is fenced again, so it still renders as code).

/// Splits `text` into pieces of at most `max` characters, in order, losing no non-blank text.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let max = max.max(16);
    let mut out = Vec::new();
    let mut current = String::new();
    for block in blocks(text) {
        for piece in fit(&block, max) {
            let sep = if current.is_empty() { 0 } else { 2 };
            if chars(&current) + sep + chars(&piece) <= max {
                if sep > 0 {
                    current.push_str("\n\n");
                }
                current.push_str(&piece);
            } else {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                current = piece;
            }
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A paragraph of prose, or a whole fenced code block.
#[derive(Debug, PartialEq)]
enum Block {
    Prose(String),
    Code { fence: String, body: Vec<String> },
}

/// Cuts text into paragraphs and fenced code blocks.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut code: Option<(String, Vec<String>)> = None;
    let flush = |para: &mut Vec<&str>, out: &mut Vec<Block>| {
        let p = para.join("\n");
        if !p.trim().is_empty() {
            out.push(Block::Prose(p.trim_matches('\n').to_string()));
        }
        para.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut code {
            Some((fence, body)) => {
                if trimmed.starts_with("```") && trimmed.trim() == "```" {
                    out.push(Block::Code {
                        fence: std::mem::take(fence),
                        body: std::mem::take(body),
                    });
                    code = None;
                } else {
                    body.push(line.to_string());
                }
            }
            None if trimmed.starts_with("```") => {
                flush(&mut para, &mut out);
                code = Some((trimmed.to_string(), Vec::new()));
            }
            None if line.trim().is_empty() => flush(&mut para, &mut out),
            None => para.push(line),
        }
    }
    flush(&mut para, &mut out);
    if let Some((fence, body)) = code {
        // An unclosed fence: keep it as code to the end, as renderers do.
        out.push(Block::Code { fence, body });
    }
    out
}

/// One block as pieces of at most `max` characters.
fn fit(block: &Block, max: usize) -> Vec<String> {
    match block {
        Block::Prose(p) if chars(p) <= max => vec![p.clone()],
        Block::Prose(p) => pack(sentences(p), max, "")
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        Block::Code { fence, body } => {
            let whole = format!("{fence}\n{}\n```", body.join("\n"));
            if chars(&whole) <= max {
                return vec![whole];
            }
            // Room for the fences around each piece.
            let room = max.saturating_sub(chars(fence) + 5).max(8);
            let lines: Vec<String> = body.iter().flat_map(|l| hard_split(l, room)).collect();
            pack(lines, room, "\n")
                .into_iter()
                .map(|piece| format!("{fence}\n{piece}\n```"))
                .collect()
        }
    }
}

/// Sentences of a paragraph, each keeping its terminator and the whitespace after it, so
/// joining them gives the paragraph back; newlines also end a sentence.
fn sentences(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut it = p.chars().peekable();
    while let Some(c) = it.next() {
        cur.push(c);
        let ends = c == '\n'
            || matches!(c, '。' | '！' | '？' | '；')
            || (matches!(c, '.' | '!' | '?' | ';') && it.peek().is_none_or(|n| n.is_whitespace()));
        if ends {
            while let Some(&n) = it.peek() {
                if !n.is_whitespace() {
                    break;
                }
                cur.push(n);
                it.next();
            }
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Greedily joins `parts` with `sep` into pieces of at most `max`; over-long parts are split by words.
fn pack(parts: Vec<String>, max: usize, sep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for part in parts {
        let pieces = if chars(&part) > max {
            words(&part, max)
        } else {
            vec![part]
        };
        for piece in pieces {
            let extra = if cur.is_empty() { 0 } else { chars(sep) };
            if chars(&cur) + extra + chars(&piece) <= max {
                if extra > 0 {
                    cur.push_str(sep);
                }
                cur.push_str(&piece);
            } else {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur = piece;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Splits at spaces, and hard-splits words longer than `max` (URLs, CJK runs without spaces).
fn words(s: &str, max: usize) -> Vec<String> {
    let parts: Vec<String> = s
        .split(' ')
        .filter(|w| !w.is_empty())
        .flat_map(|w| hard_split(w, max))
        .collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for w in parts {
        let extra = usize::from(!cur.is_empty());
        if chars(&cur) + extra + chars(&w) <= max {
            if extra > 0 {
                cur.push(' ');
            }
            cur.push_str(&w);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur = w;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn hard_split(s: &str, max: usize) -> Vec<String> {
    let cs: Vec<char> = s.chars().collect();
    if cs.is_empty() {
        return vec![String::new()];
    }
    cs.chunks(max).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn non_space(s: &str) -> String {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != '`')
            .collect()
    }

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(split("hello", 100), ["hello"]);
        assert!(split("  \n\n ", 100).is_empty());
    }

    #[test]
    fn breaks_on_paragraphs_first() {
        let p1 = "a".repeat(30);
        let p2 = "b".repeat(30);
        let text = format!("{p1}\n\n{p2}");
        assert_eq!(split(&text, 40), [p1.clone(), p2.clone()]);
        assert_eq!(split(&text, 100), [text]);
    }

    #[test]
    fn then_on_sentences_including_cjk() {
        let text = "第一句话很长很长。第二句也很长很长！Third one is here. Fourth?";
        let pieces = split(text, 20);
        assert!(pieces.iter().all(|p| chars(p) <= 20), "{pieces:?}");
        assert_eq!(pieces[0], "第一句话很长很长。第二句也很长很长！");
        assert_eq!(non_space(&pieces.concat()), non_space(text));
    }

    #[test]
    fn code_blocks_stay_whole_when_they_fit() {
        let code = "```rust\nfn main() {\n    println!(\"x\");\n}\n```";
        let text = format!("{}\n\n{code}\n\n{}", "x".repeat(40), "y".repeat(40));
        let pieces = split(&text, 60);
        assert!(pieces.contains(&code.to_string()), "{pieces:?}");
        assert!(pieces.iter().all(|p| chars(p) <= 60));
    }

    #[test]
    fn an_oversize_code_block_is_split_by_lines_and_refenced() {
        let body: Vec<String> = (0..40).map(|i| format!("let v{i} = {i};")).collect();
        let text = format!("```rust\n{}\n```", body.join("\n"));
        let pieces = split(&text, 100);
        assert!(pieces.len() > 1);
        for p in &pieces {
            assert!(chars(p) <= 100, "{p}");
            assert!(p.starts_with("```rust\n") && p.ends_with("\n```"), "{p}");
        }
        let lines: Vec<&str> = pieces
            .iter()
            .flat_map(|p| p.lines())
            .filter(|l| !l.starts_with("```"))
            .collect();
        assert_eq!(lines, body.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn twenty_thousand_characters_arrive_in_order_within_the_limit() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "Paragraph {i} says something. It has two sentences.\n\n"
            ));
            if i % 50 == 0 {
                text.push_str("```\ncode line one\ncode line two\n```\n\n");
            }
        }
        let pieces = split(&text, 2000);
        assert!(pieces.iter().all(|p| chars(p) <= 2000));
        assert_eq!(non_space(&pieces.concat()), non_space(&text));
        for p in &pieces {
            assert_eq!(p.matches("```").count() % 2, 0, "no fence is cut: {p}");
        }
    }

    #[test]
    fn unbroken_runs_are_hard_split() {
        let url = "h".repeat(250);
        let pieces = split(&url, 100);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces.concat(), url);
    }
}
