//! What a backend reports while a turn is still running: answer text as it is written and short
//! status lines (a tool step). The conversation pipeline listens and streams them to the chat;
//! a backend that reports nothing still works, because the final [`super::TurnOutput`] carries
//! the whole answer.

use tokio::sync::mpsc;

/// One thing a running turn reports.
#[derive(Clone, PartialEq, Eq)]
pub enum TurnEvent {
    /// The next piece of the answer, appended to what came before (never a thought).
    Text(String),
    /// One short line about what the agent is doing ("running: cargo test"), for people.
    Status(String),
}

impl std::fmt::Debug for TurnEvent {
    // Answer text never reaches logs through Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnEvent::Text(t) => write!(f, "Text({} chars)", t.chars().count()),
            TurnEvent::Status(s) => write!(f, "Status({} chars)", s.chars().count()),
        }
    }
}

/// Where a backend reports a turn's events; cheap to clone, and silent when nobody listens.
///
/// Made by the pipeline with [`TurnEvents::channel`] (or [`TurnEvents::none`] in tests and for
/// callers that only want the final answer). Sending never blocks and never fails the turn: a
/// listener that went away only means nobody streams.
#[derive(Clone, Default)]
pub struct TurnEvents {
    tx: Option<mpsc::UnboundedSender<TurnEvent>>,
}

impl TurnEvents {
    /// A sink nobody listens to.
    pub fn none() -> Self {
        TurnEvents { tx: None }
    }

    /// A sink and the receiver the pipeline reads. Unbounded on purpose: what a turn reports is
    /// bounded by its answer, and a backend must never wait on a slow chat.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<TurnEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (TurnEvents { tx: Some(tx) }, rx)
    }

    /// Reports the next piece of the answer; empty pieces are skipped.
    pub fn text(&self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(TurnEvent::Text(piece.to_string()));
        }
    }

    /// Reports one status line.
    pub fn status(&self, line: impl Into<String>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(TurnEvent::Status(line.into()));
        }
    }

    /// True when someone listens (a backend may skip building events otherwise).
    pub fn is_listened(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_arrive_in_order_and_empty_text_is_skipped() {
        let (events, mut rx) = TurnEvents::channel();
        events.text("Hel");
        events.text("");
        events.status("running: cargo test");
        events.text("lo");
        let got: Vec<TurnEvent> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(
            got,
            vec![
                TurnEvent::Text("Hel".into()),
                TurnEvent::Status("running: cargo test".into()),
                TurnEvent::Text("lo".into()),
            ]
        );
    }

    #[test]
    fn a_sink_nobody_listens_to_is_silent() {
        let events = TurnEvents::none();
        assert!(!events.is_listened());
        events.text("x");
        let (events, rx) = TurnEvents::channel();
        drop(rx);
        assert!(!events.is_listened());
        events.text("still fine");
    }
}
