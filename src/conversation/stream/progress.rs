//! A short line when a turn runs long without a visible word: "still working: running tests".
//!
//! Only for backends that report their steps (a status event this turn). Throttled by
//! construction: the first after [`SILENCE`] without answer text, each later one
//! only after twice the silence before it, and at most [`MAX_LINES`] per turn, so a turn of an
//! hour says a few lines, never a flood (and WeChat's sends per inbound message are kept for
//! the answer).

use std::time::Duration;

use tokio::time::Instant;

use crate::words::{Lang, Msg};

/// How long a turn may be silent before the owner hears it is still working.
pub(super) const SILENCE: Duration = Duration::from_secs(30);

/// The most progress lines one turn says.
pub(super) const MAX_LINES: u32 = 3;

/// The longest status line quoted, in characters (a tool step, not its output).
const MAX_STATUS_CHARS: usize = 80;

/// When the next progress line is due and what it says.
pub(super) struct Progress {
    lang: Lang,
    since: Instant,
    wait: Duration,
    said: u32,
    doing: Option<String>,
    /// The backend reported a step this turn.
    reported: bool,
}

impl Progress {
    /// Progress of a turn starting now, told in `lang`.
    pub(super) fn new(lang: Lang) -> Self {
        Progress {
            lang,
            since: Instant::now(),
            wait: SILENCE,
            said: 0,
            doing: None,
            reported: false,
        }
    }

    /// When the next line is due (`None`: the turn said all it may, or its backend reports no
    /// steps). Only a backend that reports what it does (tool steps) gets progress lines: a
    /// plain model that is slow to start is waited for in silence, as before, and a model
    /// held by an outage is told by the outage notice instead.
    pub(super) fn due(&self) -> Option<Instant> {
        (self.said < MAX_LINES && self.reported).then(|| self.since + self.wait)
    }

    /// Answer text arrived: the turn is not silent.
    pub(super) fn saw_text(&mut self) {
        self.since = Instant::now();
    }

    /// Part of the answer went out.
    pub(super) fn saw_output(&mut self) {
        self.since = Instant::now();
    }

    /// The agent said what it is doing (a tool step); quoted by the next line.
    pub(super) fn saw_status(&mut self, line: String) {
        let line = line.trim();
        self.reported = true;
        if !line.is_empty() {
            self.doing = Some(line.chars().take(MAX_STATUS_CHARS).collect());
        }
    }

    /// The line that is due, with its number in this turn; the next waits twice as long.
    pub(super) fn take(&mut self) -> Option<(u32, String)> {
        if self.due().is_none_or(|d| d > Instant::now()) {
            return None;
        }
        let n = self.said;
        self.said += 1;
        self.since = Instant::now();
        self.wait = self.wait.saturating_mul(2);
        let line = Msg::StillWorking {
            doing: self.doing.take(),
        }
        .text(self.lang)
        .into_owned();
        Some((n, line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_line_after_the_silence_then_ever_rarer_and_at_most_three() {
        let mut p = Progress::new(Lang::En);
        tokio::time::advance(SILENCE * 2).await;
        assert_eq!(p.take(), None, "a backend that reports no steps gets none");
        p.saw_status(String::new());
        p.saw_text();
        assert_eq!(p.take(), None, "not yet");
        tokio::time::advance(SILENCE - Duration::from_secs(1)).await;
        p.saw_text();
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(p.take(), None, "text reset the silence");
        p.saw_status("running: cargo test".into());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            p.take(),
            Some((0, "Still working: running: cargo test".into()))
        );
        assert_eq!(p.take(), None, "one line per silence");
        tokio::time::advance(SILENCE).await;
        assert_eq!(p.take(), None, "the second waits twice as long");
        tokio::time::advance(SILENCE).await;
        assert_eq!(p.take(), Some((1, "Still working…".into())));
        tokio::time::advance(SILENCE * 4).await;
        assert!(p.take().is_some());
        tokio::time::advance(SILENCE * 100).await;
        assert_eq!(p.take(), None, "at most {MAX_LINES} lines");
        assert_eq!(p.due(), None);
    }

    #[test]
    fn the_line_is_in_the_chat_language() {
        let line = Msg::StillWorking {
            doing: Some("running tests".into()),
        }
        .text(Lang::ZhCn);
        assert!(line.contains("仍在处理"), "{line}");
    }
}
