//! The confirm service as the web console sees it: the open questions (with their text, which
//! the console shows its owner on purpose) and answers given there, recorded under the rules of
//! a chat answer ("always" only where offered, a closed question stays closed) and marked as
//! answered from the console.

use super::super::text;
use super::{Answer, AnswerOutcome, ConfirmError, ConfirmService, parse_id};
use crate::protocol::ConfirmState;
use crate::words::Lang;

/// Who answered, as stored with a question the console answered.
pub const CONSOLE_ANSWERER: &str = "console";

/// An open question as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenQuestion {
    /// `q-7`.
    pub id: String,
    /// The question, for the owner.
    pub text: String,
    /// The chat asked (`<channel>:<account>`, or "" when it had nowhere to go).
    pub chat: String,
    /// When no answer counts as no.
    pub deadline_unix: u64,
    /// It offers "always" beside yes and no (an agent's tool question).
    pub offers_always: bool,
}

impl ConfirmService {
    /// Every pending question, oldest first.
    pub fn open_questions(&self) -> Vec<OpenQuestion> {
        let now = self.clock.now_ms();
        let idx = self.lock();
        let mut open: Vec<OpenQuestion> = idx
            .all()
            .filter(|q| q.row.state == ConfirmState::Pending && q.deadline_ms() > now)
            .map(|q| OpenQuestion {
                id: q.id(),
                text: q.row.question.clone(),
                chat: q.row.account.clone(),
                deadline_unix: q.row.deadline_unix,
                offers_always: q.row.offers_always,
            })
            .collect();
        open.sort_by_key(|q| parse_id(&q.id));
        open
    }

    /// Records the console's answer to question `id`: yes, no, or (where offered) always.
    pub async fn answer_from_console(
        &self,
        id: &str,
        yes: bool,
        always: bool,
    ) -> Result<AnswerOutcome, ConfirmError> {
        let seq = parse_id(id).ok_or_else(|| ConfirmError::NotFound(id.to_string()))?;
        let remembered = self.lock().get(seq).cloned();
        let q = remembered.ok_or_else(|| ConfirmError::NotFound(id.to_string()))?;
        if always && !(yes && q.row.offers_always) {
            return Err(ConfirmError::InvalidRequest(format!(
                "{id} does not offer \"always\""
            )));
        }
        // A late answer finds the question expired or withdrawn, as a chat answer would.
        self.settle(&q, self.clock.now_ms()).await?;
        let outcome = self
            .record(seq, Answer { yes, always }, Some(CONSOLE_ANSWERER), None)
            .await?;
        // Cloned out first: the index's lock is never held across an await.
        let answered = self.lock().get(seq).cloned();
        if let AnswerOutcome::Recorded(s) = outcome
            && let Some(q) = answered
        {
            // Where the chat's question can be edited, it shows the answer in place.
            let lang = match &q.account {
                Some(a) => self.lang_of(a, &q.row.chat).await,
                None => Lang::En,
            };
            let notice = text::closed_notice(s, &q.row.question, &q.row.code, lang);
            self.update_in_place(&q, &notice).await;
        }
        Ok(outcome)
    }

    /// Changes whenever a question is asked or closes (the console's live page waits on it).
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Wakes [`ConfirmService::subscribe_changes`]'s receivers.
    pub(super) fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}
