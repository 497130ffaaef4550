//! A burst (messages a chat sent while its turn ran) is answered by one turn whose prompt is
//! the messages in order, a blank line between: the fake model's echo names them all, and a
//! model that answers each question answers each part. The kill -9 tests count a message
//! answered when one answer covers it, and never when two do.

/// Whether the echo `sent` answers `question` (alone, or in a burst).
pub fn echo_answers(sent: &str, question: &str) -> bool {
    sent.strip_prefix("echo: ")
        .is_some_and(|rest| questions(rest).any(|q| q == question))
}

/// The questions of a prompt the bridge merged from a burst, in order.
pub fn questions(prompt: &str) -> impl Iterator<Item = &str> {
    prompt.split("\n\n").map(str::trim)
}
