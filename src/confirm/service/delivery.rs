//! What the chat is told, and what the platform said back: the question message, whether it
//! went out (its message id and the chat it landed in), and how a closed question is shown
//! (updated in place where the account can edit, else a notice).

use crate::ids::{DeliveryState, OutboxKey, QuestionId};
use futures_util::future::BoxFuture;

use super::super::index::{CHECK_EVERY_MS, FIRST_CHECK_MS, Question};
use super::super::text;
use super::{Closed, ConfirmError, ConfirmService};
use crate::config::AccountKey;
use crate::conversation::{ChatId, DeliveryObserver, Sent};
use crate::protocol::ConfirmState;
use crate::store::StoreError;

impl ConfirmService {
    /// Queues the question message (idempotent by its stored key).
    pub(super) async fn enqueue_question(&self, q: &Question) -> Result<(), StoreError> {
        let Some(account) = &q.account else {
            return Ok(());
        };
        let now = self.clock.now_ms() / 1000;
        let lang = self.lang_of(account, &q.row.chat).await;
        let tz = self.settings().timezone;
        let deadline = text::deadline_in(q.row.deadline_unix, now, tz, lang);
        let plain = text::question(
            &q.row.question,
            &q.row.code,
            &deadline,
            q.row.offers_always,
            lang,
        );
        let mut pending = q.clone();
        pending.row.state = ConfirmState::Pending;
        let body = self.body_of(&pending);
        let chat = ChatId::new(q.row.chat.clone());
        self.outbox
            .send_proactive(account, &chat, &plain, Some(&body), &q.row.message_key)
            .await
    }

    /// Looks whether the question went out; notes a wait in health, re-queues a lost one.
    pub(super) async fn check_delivery(&self, q: &Question, now: u64) -> Result<(), ConfirmError> {
        let delivery = self.outbox.delivery(&q.row.message_key).await?;
        let seq = q.row.seq;
        match delivery {
            // Normally the delivery observer got here first; after a crash between sending and
            // telling it, this is where the message id and chat are learned.
            Some(d) if d.state == DeliveryState::Sent => self.record_sent(seq, &d.sent).await,
            Some(d) if d.state == DeliveryState::Failed => {
                let reason = "the platform refused the question message";
                if let Closed::Now(q) = self
                    .close(seq, ConfirmState::Failed, Some(reason), None, None, false)
                    .await?
                {
                    tracing::warn!(id = %q.id(), reason, "question failed");
                }
            }
            Some(_) => {
                self.note_waiting(q);
                self.lock().check_at(seq, now + CHECK_EVERY_MS);
            }
            None => {
                // Stored but never queued (a crash or a store error between the two): queue it now.
                self.enqueue_question(q).await?;
                self.lock().check_at(seq, now + FIRST_CHECK_MS);
            }
        }
        Ok(())
    }

    /// Marks question `seq` delivered and keeps what the platform said: the message id (the
    /// card to update later) and the chat it landed in (where answers come from).
    async fn record_sent(&self, seq: i64, sent: &Sent) {
        let msg = sent.msg_id.as_ref().map(|m| m.as_str().to_string());
        let chat = sent.chat.as_ref().map(|c| c.as_str().to_string());
        let Some(snapshot) = self.lock().sent(seq, msg, chat) else {
            return;
        };
        self.clear_note(&snapshot);
        let (msg, chat) = (snapshot.row.platform_msg, snapshot.row.platform_chat);
        let stored = self
            .store
            .call(move |t| super::db::set_sent(t, seq, msg.as_deref(), chat.as_deref()))
            .await;
        if let Err(e) = stored {
            // Memory has it for this run; the next delivery check after a restart stores it.
            tracing::error!(question = seq, error = %e, "cannot store where a question landed");
        }
    }

    /// Tells the chat that a question no longer needs an answer (expired, withdrawn, failed):
    /// by updating the question in place where the account can edit, else with a notice.
    pub(super) async fn tell_closed(&self, q: &Question) {
        let Some(account) = &q.account else { return };
        if q.row.chat.is_empty() {
            return;
        }
        let lang = self.lang_of(account, &q.row.chat).await;
        let notice = text::closed_notice(q.row.state, &q.row.question, &q.row.code, lang);
        if self.can(account).edit {
            self.update_in_place(q, &notice).await;
            return;
        }
        let chat = ChatId::new(q.row.chat.clone());
        if let Err(e) = self
            .outbox
            .send_proactive(account, &chat, &notice, None, &closed_key(q.row.seq))
            .await
        {
            tracing::error!(id = %q.id(), error = %e, "cannot queue a closing notice");
        }
    }

    /// Queues the update of the question message to how the question ended, once per question
    /// (one key, whichever close queues it), on accounts that can edit (elsewhere nothing: a
    /// text answer's reply says it all). The pipeline sends `fallback` with the closed body as
    /// a new message when the message cannot be updated (never sent, deleted, too old).
    pub(super) async fn update_in_place(&self, q: &Question, fallback: &str) {
        let Some(account) = &q.account else { return };
        if !self.can(account).edit {
            return;
        }
        let body = self.body_of(q);
        let chat = ChatId::new(q.row.chat.clone());
        if let Err(e) = self
            .outbox
            .update_proactive(
                account,
                &chat,
                &q.row.message_key,
                fallback,
                &body,
                &closed_key(q.row.seq),
            )
            .await
        {
            tracing::error!(id = %q.id(), error = %e, "cannot queue the question's update");
        }
    }
}

impl DeliveryObserver for ConfirmService {
    fn delivered<'a>(
        &'a self,
        _account: &'a AccountKey,
        key: &'a str,
        sent: &'a Sent,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(seq) = asked_in(key) {
                self.record_sent(seq, sent).await;
            }
        })
    }
}

/// The outbox key of what shows a question closed (the card update or the notice).
fn closed_key(seq: i64) -> String {
    OutboxKey::question_closed(QuestionId(seq)).into()
}

/// The question whose message's first piece (the one carrying the card) `key` is.
fn asked_in(key: &str) -> Option<i64> {
    OutboxKey::question_of_first_piece(key).map(|q| q.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_piece_of_a_question_counts() {
        let first = OutboxKey::piece(OutboxKey::question(QuestionId(7)).as_str(), 0);
        assert_eq!(
            first.as_str(),
            "confirm/q-7/ask/0",
            "the stored spelling stays"
        );
        assert_eq!(asked_in(first.as_str()), Some(7));
        assert_eq!(asked_in("confirm/q-7/ask/1"), None);
        assert_eq!(asked_in("confirm/q-7/closed/0"), None);
        assert_eq!(asked_in("feishu:work/om_1/0"), None);
    }
}
