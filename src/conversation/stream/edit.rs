//! Streaming into one message the platform lets the bridge edit ([`super::StreamMode::Edit`],
//! Feishu's CardKit cards): the text so far is handed to the adapter, coalesced to one show per
//! interval and one in flight, once the answer is longer than a sentence.
//!
//! Only the showing is here; the answer's end is the ordinary outbox piece `<answer key>/0`,
//! stored with the turn, which the adapter delivers by finishing the message it showed. So a
//! crash after the store still finishes it, and a turn that never showed anything is a plain
//! message.

use std::time::Duration;

use tokio::time::Instant;

/// The least non-blank characters before anything is shown: more than a sentence, so a short
/// answer stays one plain message.
pub(super) const OPEN_AT: usize = 60;

/// The text of an answer being written and when it may next be shown.
pub(super) struct Editor {
    every: Duration,
    /// The most characters the shown message may hold (the platform's message size): once the
    /// answer passes it, showing stops and the final pieces carry the rest.
    max: usize,
    text: String,
    /// Characters of `text` already handed to the adapter (0: nothing shown yet).
    shown: usize,
    next_at: Instant,
    /// The platform refused for good, or the answer outgrew one message: nothing more is shown.
    stopped: bool,
}

impl Editor {
    /// An editor showing at most every `every`, at most `max` characters.
    pub(super) fn new(every: Duration, max: usize) -> Self {
        Editor {
            every,
            max,
            text: String::new(),
            shown: 0,
            next_at: Instant::now(),
            stopped: false,
        }
    }

    /// Appends the next piece of the answer.
    pub(super) fn push(&mut self, piece: &str) {
        self.text.push_str(piece);
        if self.text.chars().count() > self.max {
            // The final store splits the answer; the shown message gets its first piece.
            self.stopped = true;
        }
    }

    /// Whether there is new text worth showing, and when (`None`: nothing to show).
    pub(super) fn due(&self) -> Option<Instant> {
        let fresh = self.text.len() > self.shown;
        let long_enough = self.shown > 0 || non_blank(&self.text) >= OPEN_AT;
        (!self.stopped && fresh && long_enough).then_some(self.next_at)
    }

    /// The text to show now; the caller reports how it went with [`Editor::shown`].
    pub(super) fn take(&mut self) -> String {
        self.text.clone()
    }

    /// Records a show of `len` bytes of the text at `now`; `ok` false stops showing for good.
    pub(super) fn shown(&mut self, len: usize, ok: bool, now: Instant) {
        self.next_at = now + self.every;
        if ok {
            self.shown = len;
        } else {
            self.stopped = true;
        }
    }

    /// Retries a show that failed for now, after the interval.
    pub(super) fn later(&mut self, now: Instant) {
        self.next_at = now + self.every;
    }

    /// The text the message shows, when something was shown.
    pub(super) fn showing(&self) -> Option<&str> {
        (self.shown > 0).then(|| &self.text[..self.shown])
    }
}

fn non_blank(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_sentence_is_not_shown_and_shows_are_spaced() {
        let mut e = Editor::new(Duration::from_millis(400), 4000);
        e.push("Short answer.");
        assert_eq!(e.due(), None, "a short answer stays a plain message");
        e.push(&" more words".repeat(10));
        let at = e.due().expect("long enough");
        assert!(at <= Instant::now());
        let t = e.take();
        e.shown(t.len(), true, Instant::now());
        assert_eq!(e.due(), None, "nothing new");
        e.push(" and more");
        assert_eq!(
            e.due(),
            Some(Instant::now() + Duration::from_millis(400)),
            "coalesced to one show per interval"
        );
        assert_eq!(e.showing(), Some(t.as_str()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_or_an_answer_past_one_message_stops_showing() {
        let mut e = Editor::new(Duration::from_millis(400), 100);
        e.push(&"x".repeat(80));
        let t = e.take();
        e.shown(t.len(), false, Instant::now());
        e.push("y");
        assert_eq!(e.due(), None);
        let mut big = Editor::new(Duration::from_millis(400), 100);
        big.push(&"x".repeat(101));
        assert_eq!(big.due(), None);
    }
}
