//! Keeps a shown draft alive through the agent's long pauses (spec §4.3: a draft is a ~30 s
//! preview; refresh it "at least every few seconds during long pauses", inferred). The
//! pipeline shows a draft only when the answer grows, so while the agent runs a tool for a
//! minute the preview would lapse; here the last frame of each unfinished answer is sent
//! again once it is [`DRAFT_REFRESH`] old.
//!
//! Made by [`super::stream::Streams`], one per run: the refresher task starts with the first
//! draft and ends when the run's sender is dropped. An answer stops being refreshed when its
//! first piece is delivered ([`LiveDrafts::done`]) or [`MAX_PAUSE`] after its last new text
//! (a turn that ended without delivering its answer, say an agent error, leaves nothing alive
//! for long).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use scv_telegram::limits::DRAFT_REFRESH;
use scv_telegram::{Client, ParseMode};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::ids::AccountKey;

/// How long after its last new text an answer's draft is still kept alive.
const MAX_PAUSE: Duration = Duration::from_secs(300);

/// One frame to send (again).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Frame {
    pub chat: i64,
    pub draft_id: i64,
    pub text: String,
    pub mode: Option<ParseMode>,
}

struct Live {
    frame: Frame,
    /// When the frame was last sent (new or refreshed).
    sent_at: Instant,
    /// When the answer last grew.
    grew_at: Instant,
}

/// The unfinished drafts of one run, by answer key.
#[derive(Default)]
struct Table(HashMap<String, Live>);

impl Table {
    fn shown(&mut self, key: &str, frame: Frame, now: Instant) {
        self.0.insert(
            key.to_string(),
            Live {
                frame,
                sent_at: now,
                grew_at: now,
            },
        );
    }

    /// The frames due again at `now` (marked sent), after dropping answers paused too long.
    fn due(&mut self, now: Instant) -> Vec<Frame> {
        self.0.retain(|_, l| l.grew_at + MAX_PAUSE > now);
        self.0
            .values_mut()
            .filter(|l| l.sent_at + DRAFT_REFRESH <= now)
            .map(|l| {
                l.sent_at = now;
                l.frame.clone()
            })
            .collect()
    }
}

/// The drafts kept alive for one run.
pub(super) struct LiveDrafts {
    client: Client,
    account: AccountKey,
    table: Arc<Mutex<Table>>,
    /// Cancels the refresher when the run's sender is dropped.
    task: OnceLock<DropGuard>,
}

impl LiveDrafts {
    pub(super) fn new(client: Client, account: AccountKey) -> Self {
        LiveDrafts {
            client,
            account,
            table: Arc::default(),
            task: OnceLock::new(),
        }
    }

    /// Answer `key` showed `frame` just now.
    pub(super) fn shown(&self, key: &str, frame: Frame) {
        self.lock().shown(key, frame, Instant::now());
        self.task.get_or_init(|| self.start());
    }

    /// Answer `key` is delivered (or goes out whole): no more refreshes.
    pub(super) fn done(&self, key: &str) {
        self.lock().0.remove(key);
    }

    fn start(&self) -> DropGuard {
        let stop = CancellationToken::new();
        let (client, account, table) = (
            self.client.clone(),
            self.account.clone(),
            self.table.clone(),
        );
        let done = stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = done.cancelled() => return,
                    _ = tokio::time::sleep(DRAFT_REFRESH / 2) => {}
                }
                let due = table
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .due(Instant::now());
                for f in due {
                    // Cosmetic: a lapsed preview comes back with the next text anyway.
                    if let Err(e) = client
                        .send_draft(f.chat, f.draft_id, &f.text, f.mode, true)
                        .await
                    {
                        tracing::debug!(account = %account, error = %e, "refreshing a draft failed");
                    }
                }
            }
        });
        stop.drop_guard()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(text: &str) -> Frame {
        Frame {
            chat: 7,
            draft_id: 9,
            text: text.into(),
            mode: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_answer_is_refreshed_every_interval_until_its_pause_runs_long() {
        let mut t = Table::default();
        let t0 = Instant::now();
        t.shown("a", frame("so far"), t0);
        assert!(t.due(t0 + DRAFT_REFRESH / 2).is_empty(), "fresh");
        assert_eq!(t.due(t0 + DRAFT_REFRESH), [frame("so far")]);
        assert!(
            t.due(t0 + DRAFT_REFRESH + DRAFT_REFRESH / 2).is_empty(),
            "just sent"
        );
        assert_eq!(t.due(t0 + 2 * DRAFT_REFRESH), [frame("so far")]);
        assert!(t.due(t0 + MAX_PAUSE).is_empty(), "paused too long: dropped");
        assert!(t.0.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn new_text_restarts_the_wait() {
        let mut t = Table::default();
        let t0 = Instant::now();
        t.shown("a", frame("one"), t0);
        t.shown("a", frame("one two"), t0 + DRAFT_REFRESH / 2);
        assert!(t.due(t0 + DRAFT_REFRESH).is_empty());
        assert_eq!(
            t.due(t0 + DRAFT_REFRESH / 2 + DRAFT_REFRESH),
            [frame("one two")]
        );
    }
}
