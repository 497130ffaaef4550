//! The deadline loop's side of the service: what is due, and withdrawing, expiring or failing a
//! question on time.

use super::super::index::{Due, Index, Question};
use super::super::text;
use super::{Closed, ConfirmError, ConfirmService};
use crate::ids::DeliveryState;
use crate::protocol::ConfirmState;

impl ConfirmService {
    /// What is due at `now_ms`.
    pub(in crate::confirm) fn due(&self, now_ms: u64) -> Vec<(i64, Due)> {
        self.lock().due(now_ms)
    }

    /// When the loop should look again.
    pub(in crate::confirm) fn next_wake(&self) -> Option<u64> {
        self.lock().next_wake()
    }

    /// Resolves when an ask added something the loop must schedule.
    pub(in crate::confirm) async fn woken(&self) {
        self.wake.notified().await
    }

    /// Resolves when the service stops.
    pub(in crate::confirm) async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Does what is due for one question.
    pub(in crate::confirm) async fn process(
        &self,
        seq: i64,
        due: Due,
        now: u64,
    ) -> Result<(), ConfirmError> {
        let Some(q) = self.lock().get(seq).cloned() else {
            return Ok(());
        };
        match due {
            Due::Withdraw | Due::Deadline => self.settle(&q, now).await,
            Due::CheckDelivery => self.check_delivery(&q, now).await,
            Due::Evict => {
                self.lock().remove(seq);
                Ok(())
            }
        }
    }

    /// Withdraws, expires or fails `q` if that is due at `now`; otherwise nothing.
    pub(super) async fn settle(&self, q: &Question, now: u64) -> Result<(), ConfirmError> {
        let (state, reason) = match Index::due_one(q, now) {
            Some(Due::Withdraw) => (ConfirmState::Withdrawn, None),
            Some(Due::Deadline) if self.delivered(q).await? => (ConfirmState::Expired, None),
            Some(Due::Deadline) => (ConfirmState::Failed, Some(self.undelivered_reason(q))),
            _ => return Ok(()),
        };
        if let Closed::Now(q) = self
            .close(q.row.seq, state, reason.as_deref(), None, None, false)
            .await?
        {
            match &reason {
                Some(r) => tracing::warn!(id = %q.id(), reason = %r, "question failed"),
                None => {
                    tracing::info!(id = %q.id(), state = text::answer_word(state), "question closed")
                }
            }
            self.tell_closed(&q).await;
        }
        Ok(())
    }

    /// Whether the question message has left the outbox.
    async fn delivered(&self, q: &Question) -> Result<bool, ConfirmError> {
        if q.delivered {
            return Ok(true);
        }
        let state = self.outbox.delivery_state(&q.row.message_key).await?;
        Ok(state == Some(DeliveryState::Sent))
    }
}
