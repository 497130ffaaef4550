//! `getUpdates` (spec §1.2, §1.3, §8.3–§8.5): confirm by offset, forget by negative offset,
//! hold until an update or the poll time, and 409 for a poll a newer one replaced or while a
//! webhook is set.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use serde_json::Value;
use tokio::time::Instant;

use super::Shared;
use super::answer::{error, ok};
use super::params::Params;
use super::state::State;

const OTHER_POLLER: &str = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
const WEBHOOK_SET: &str = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";

/// A poll counted while its handler runs (held or answering), uncounted when the client hangs
/// up and the server drops the handler.
struct InFlight<'a>(&'a Shared);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.lock().polls_in_flight -= 1;
        self.0.bump();
    }
}

pub(crate) async fn get_updates(shared: &Arc<Shared>, p: &Params) -> Response {
    let offset = p.int("offset").unwrap_or(0);
    let limit = p.int("limit").unwrap_or(100).clamp(1, 100) as usize;
    let hold = Duration::from_secs(p.int("timeout").unwrap_or(0).max(0) as u64);
    let generation = {
        let mut st = shared.lock();
        st.poll_requests += 1;
        if st.webhook_url.is_some() {
            return error(409, WEBHOOK_SET);
        }
        if let Some(Value::Array(kinds)) = p.json("allowed_updates") {
            // Sticky: kept for later calls that leave it out (spec §1.2).
            st.allowed = Some(
                kinds
                    .iter()
                    .filter_map(|k| k.as_str().map(str::to_owned))
                    .collect(),
            );
        }
        confirm(&mut st, offset);
        st.poll_generation += 1;
        st.polls_in_flight += 1;
        st.poll_generation
    };
    let _in_flight = InFlight(shared);
    // Wakes a held older poll, which then sees it lost.
    shared.bump();
    let deadline = Instant::now() + hold;
    let mut changed = shared.changed.subscribe();
    let mut down = shared.shutdown.subscribe();
    loop {
        changed.borrow_and_update();
        {
            let mut st = shared.lock();
            if st.poll_generation != generation {
                return error(409, OTHER_POLLER);
            }
            st.expire();
            let ready = deliverable(&st, offset, limit);
            if !ready.is_empty() || Instant::now() >= deadline {
                return ok(Value::Array(ready));
            }
        }
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = down.wait_for(|d| *d) => return error(502, "Bad Gateway"),
        }
    }
}

/// An offset above an update's id confirms it; a negative one keeps only the last `-offset`.
fn confirm(st: &mut State, offset: i64) {
    if offset > 0 {
        st.queue.retain(|q| q.id >= offset);
    } else if offset < 0 {
        let keep = offset.unsigned_abs() as usize;
        let drop = st.queue.len().saturating_sub(keep);
        st.queue.drain(..drop);
    }
}

fn deliverable(st: &State, offset: i64, limit: usize) -> Vec<Value> {
    st.queue
        .iter()
        .filter(|q| offset <= 0 || q.id >= offset)
        .filter(|q| st.allows(&q.kind))
        .take(limit)
        .map(|q| q.body.clone())
        .collect()
}
