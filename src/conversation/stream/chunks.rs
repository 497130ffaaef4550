//! Which finished parts of an answer being written are worth a message of their own, and what
//! is left of the whole answer once they are queued.
//!
//! Pieces are cut where the final store would cut (paragraph boundaries outside code, by
//! [`crate::conversation::split`]); how far they reach is kept as a [`Mark`] in their keys, so
//! the pieces a crashed run queued are recognised in the next run's answer.

use crate::conversation::split;

/// The least non-blank characters the first streamed piece has: it ends at the first sentence
/// end (or line end) after this many, so the first message says something and arrives early,
/// never cut mid-sentence.
pub(super) const FIRST_PIECE: usize = 60;

/// Later pieces wait for this share (in quarters) of the platform's size: the ~10 sends one
/// inbound message allows (WeChat) are spent on near-full messages, never on fragments.
const LATER_QUARTERS: usize = 3;

/// How far the pieces streamed so far reach into the answer, without keeping its text (an
/// outbox item forgets its text once sent): the count of non-blank characters they cover and
/// a digest of those characters, so a rerun can tell whether its answer begins the same way.
/// Carried in the streamed pieces' outbox keys (`<answer key>/<i>.<upto>.<digest>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::conversation) struct Mark {
    upto: usize,
    digest: u64,
}

impl Mark {
    /// The outbox key of streamed piece `i` of answer `answer`, in a batch ending at this mark.
    pub(super) fn key(&self, answer: &str, i: usize) -> crate::ids::OutboxKey {
        crate::ids::OutboxKey::streamed_piece(answer, i, self.upto, self.digest)
    }

    /// Reads a key written by [`Mark::key`] under `answer`: the piece's index and the mark.
    pub(super) fn read(answer: &str, key: &str) -> Option<(usize, Mark)> {
        let (i, upto, digest) = crate::ids::OutboxKey::read_streamed_piece(answer, key)?;
        Some((i, Mark { upto, digest }))
    }

    /// The mark of all of `text`.
    fn of(text: &str) -> Mark {
        let mut m = Mark {
            upto: 0,
            digest: FNV_OFFSET,
        };
        for c in text.chars().filter(|c| !c.is_whitespace()) {
            m.add(c);
        }
        m
    }

    fn add(&mut self, c: char) {
        self.upto += 1;
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            self.digest = (self.digest ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
    }

    /// Where in `text` this mark ends: `Ok(byte offset)` when `text` begins with what it
    /// covers, `Err(true)` when `text` is still shorter, `Err(false)` when it says otherwise.
    fn locate(&self, text: &str) -> Result<usize, bool> {
        let mut m = Mark {
            upto: 0,
            digest: FNV_OFFSET,
        };
        if self.upto == 0 {
            return Ok(0);
        }
        for (i, c) in text.char_indices().filter(|(_, c)| !c.is_whitespace()) {
            m.add(c);
            if m.upto == self.upto {
                return if m.digest == self.digest {
                    Ok(i + c.len_utf8())
                } else {
                    Err(false)
                };
            }
        }
        Err(true)
    }
}

// FNV-1a, 64 bits: a stable digest (std's hasher may change between releases, and a mark must
// read the same after an upgrade).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The streamed text of one answer and how much of it is queued.
pub(super) struct Chunker {
    max: usize,
    /// How many pieces are queued (streamed ones, by this run or an earlier one).
    count: usize,
    mark: Option<Mark>,
    text: String,
    /// Streaming gave up for this turn (the answer no longer begins with what was queued, or
    /// a piece would not read back as the answer's own text): the final store sends the rest.
    stopped: bool,
}

impl Chunker {
    /// A chunker for messages of at most `max` characters, after `count` pieces an earlier
    /// run queued up to `mark`.
    pub(super) fn new(max: usize, count: usize, mark: Option<Mark>) -> Self {
        Chunker {
            max,
            count,
            mark,
            text: String::new(),
            stopped: false,
        }
    }

    /// Appends the next piece of the answer.
    pub(super) fn push(&mut self, piece: &str) {
        self.text.push_str(piece);
    }

    /// The pieces to queue now, the index of the first and the mark they reach, when
    /// finished paragraphs beyond what is queued are long enough.
    pub(super) fn ready(&mut self) -> Option<(usize, Vec<String>, Mark)> {
        if self.stopped {
            return None;
        }
        let end = match self.mark.map_or(Ok(0), |m| m.locate(&self.text)) {
            Ok(end) => end,
            // Still repeating what an earlier run queued: wait for more text.
            Err(true) => return None,
            Err(false) => {
                self.stopped = true;
                return None;
            }
        };
        let pending = &self.text[end..];
        let complete = if self.count == 0 {
            &pending[..super::sentence::first_end(pending, FIRST_PIECE)?]
        } else {
            let complete = &pending[..last_boundary(pending)?];
            if non_blank(complete) < self.max * LATER_QUARTERS / 4 {
                return None;
            }
            complete
        };
        let pieces = split(complete, self.max);
        // An oversized code block is re-fenced per piece: such pieces are not the answer's own
        // text and would not match the mark, so the final store sends them.
        if pieces.is_empty() || Mark::of(&pieces.concat()) != Mark::of(complete) {
            self.stopped = true;
            return None;
        }
        let mark = Mark::of(&self.text[..end + complete.len()]);
        Some((self.count, pieces, mark))
    }

    /// Records that `n` pieces up to `mark` are queued.
    pub(super) fn committed(&mut self, n: usize, mark: Mark) {
        self.count += n;
        self.mark = Some(mark);
    }

    /// How many pieces are queued and how far they reach.
    pub(super) fn queued(&self) -> (usize, Option<Mark>) {
        (self.count, self.mark)
    }
}

/// What the store after the turn still queues: the index of its first piece and the pieces,
/// the final `text` minus what the `count` streamed pieces up to `mark` already say, split to
/// `max` characters.
pub(in crate::conversation) fn rest(
    (count, mark): (usize, Option<Mark>),
    text: &str,
    max: usize,
) -> (usize, Vec<String>) {
    match mark.map(|m| m.locate(text)) {
        None => (count, split(text, max)),
        Some(Ok(end)) => (count, split(&text[end..], max)),
        // The answer changed after a retry (an outage broke the first run): what was queued
        // belongs to the other attempt. The new answer goes out whole, so the owner has one
        // complete answer: some text repeated rather than any lost.
        Some(Err(_)) => (count, split(text, max)),
    }
}

/// The byte offset of the end of the last finished paragraph of `s` outside code (a blank
/// line follows it), if any.
fn last_boundary(s: &str) -> Option<usize> {
    let mut in_code = false;
    let mut seen_text = false;
    let mut best = None;
    let mut pos = 0;
    for line in s.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        if !line.ends_with('\n') {
            break; // a line still being written
        }
        let t = line.trim();
        // Fences as the splitter reads them: any ``` line opens, a bare one closes.
        if in_code {
            in_code = t != "```";
            continue;
        }
        if t.starts_with("```") {
            in_code = true;
            seen_text = true;
        } else if t.is_empty() {
            if seen_text {
                best = Some(start);
            }
        } else {
            seen_text = true;
        }
    }
    best
}

pub(super) fn non_blank(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn para(tag: &str, n: usize) -> String {
        format!("{tag} {}", "x".repeat(n))
    }

    fn pieces(r: Option<(usize, Vec<String>, Mark)>) -> Option<(usize, Vec<String>)> {
        r.map(|(i, p, _)| (i, p))
    }

    #[test]
    fn the_first_piece_ends_at_the_first_sentence_after_the_minimum() {
        let mut c = Chunker::new(2000, 0, None);
        c.push("Short one. ");
        assert_eq!(c.ready(), None, "under the minimum");
        c.push("Then a sentence long enough to carry the first message on its own");
        assert_eq!(c.ready(), None, "the sentence is still being written");
        c.push(". And more");
        assert_eq!(
            pieces(c.ready()),
            Some((
                0,
                vec![
                    "Short one. Then a sentence long enough to carry the first message on its own."
                        .to_string()
                ]
            ))
        );
    }

    #[test]
    fn nothing_goes_out_before_a_paragraph_is_finished_and_long_enough() {
        let mut c = Chunker::new(2000, 0, None);
        c.push(&para("short", 20));
        c.push("\n\n");
        assert_eq!(c.ready(), None, "a small paragraph waits to be merged");
        c.push(&para("long", 300));
        assert_eq!(c.ready(), None, "the second paragraph is not finished");
        c.push("\n\nnext");
        assert_eq!(
            pieces(c.ready()),
            Some((
                0,
                vec![format!("{}\n\n{}", para("short", 20), para("long", 300))]
            ))
        );
    }

    #[test]
    fn later_pieces_wait_for_a_near_full_message() {
        let mut c = Chunker::new(2000, 0, None);
        c.push(&format!("{}\n\n", para("a", 300)));
        let (_, p, m) = c.ready().expect("first");
        c.committed(p.len(), m);
        c.push(&format!("{}\n\n", para("b", 800)));
        assert_eq!(c.ready(), None, "800 characters are a fragment of 2,000");
        c.push(&format!("{}\n\n", para("c", 800)));
        let (first, p, _) = c.ready().expect("1,600 characters are worth a send");
        assert_eq!((first, p.len()), (1, 1));
    }

    #[test]
    fn no_boundary_inside_code() {
        let text = format!("{}\n\n```\nfn a() {{}}\n\nfn b() {{}}\n", para("intro", 10));
        assert_eq!(last_boundary(&text), Some(para("intro", 10).len() + 1));
        let mut c = Chunker::new(2000, 0, None);
        c.push(&format!("```\n{}\n\n{}\n", "y".repeat(300), "z".repeat(10)));
        assert_eq!(c.ready(), None, "the blank line is inside the open block");
    }

    #[test]
    fn marks_survive_their_key() {
        let m = Mark::of("第一段 text");
        let answer = "wechat:phone/id:1";
        assert_eq!(Mark::read(answer, m.key(answer, 3).as_str()), Some((3, m)));
        let piece = crate::ids::OutboxKey::piece(answer, 3);
        assert_eq!(
            Mark::read(answer, piece.as_str()),
            None,
            "a final-store piece is no mark"
        );
        assert_eq!(Mark::read(answer, "wechat:phone/id:1/progress-0"), None);
    }

    #[test]
    fn the_rest_skips_what_was_queued_and_restarts_from_a_changed_answer() {
        let answer = format!(
            "{}\n\n{}\n\n{}",
            para("一", 300),
            para("two", 300),
            para("three", 10)
        );
        let mark = Mark::of(&format!("{}\n\n{}", para("一", 300), para("two", 300)));
        assert_eq!(
            rest((2, Some(mark)), &answer, 2000),
            (2, vec![para("three", 10)])
        );
        assert_eq!(rest((0, None), &answer, 2000), (0, split(&answer, 2000)));
        let changed = para("other", 700);
        assert_eq!(
            rest((2, Some(mark)), &changed, 2000),
            (2, vec![changed.clone()])
        );
    }

    #[test]
    fn a_rerun_catching_up_queues_only_what_is_new() {
        let first = format!("{}\n\n", para("a", 300));
        let mark = Mark::of(&first);
        let mut c = Chunker::new(2000, 1, Some(mark));
        c.push(&first[..100]);
        assert_eq!(c.ready(), None, "still repeating the queued piece");
        c.push(&first[100..]);
        c.push(&format!("{}\n\n", para("b", 1600)));
        assert_eq!(pieces(c.ready()), Some((1, vec![para("b", 1600)])));
        let mut other = Chunker::new(2000, 1, Some(mark));
        other.push(&format!("{}\n\n", para("z", 400)));
        assert_eq!(other.ready(), None);
        assert!(
            other.stopped,
            "a different answer is left to the final store"
        );
    }
}
