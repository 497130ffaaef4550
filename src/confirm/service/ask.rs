//! Asking: a new question stored, given a code in its chat and queued, or stored failed when it
//! has nowhere to go; and the checks on what an asker may ask.

use super::super::db::{self, Row};
use super::super::index::Question;
use super::super::route::{self, Route};
use super::super::{DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS};
use super::{ConfirmError, ConfirmService, MAX_QUESTION_CHARS};
use crate::protocol::{ConfirmInfo, ConfirmState};

impl ConfirmService {
    /// Asks the owner: stores the question, queues it for its chat, and returns it `pending`
    /// (or `failed` when there is no chat to ask in).
    pub async fn ask(
        &self,
        question: &str,
        parent: Option<&str>,
        timeout_seconds: Option<u64>,
    ) -> Result<ConfirmInfo, ConfirmError> {
        self.ask_offering(question, parent, timeout_seconds, false)
            .await
    }

    /// [`ConfirmService::ask`], offering "always" (`A <code>`) beside yes and no when
    /// `offers_always` (an agent's tool question on an `ask_or_always` account).
    pub(super) async fn ask_offering(
        &self,
        question: &str,
        parent: Option<&str>,
        timeout_seconds: Option<u64>,
        offers_always: bool,
    ) -> Result<ConfirmInfo, ConfirmError> {
        let timeout = validate(question, timeout_seconds)?;
        let parent = route::parse_parent(parent).map_err(ConfirmError::InvalidRequest)?;
        // No parent places it: the owner's first route that can deliver now, else `notify`.
        let notify = match parent {
            route::Parent::Elsewhere => self.route_now().or(self.settings().notify),
            _ => self.settings().notify,
        };
        let route = route::resolve(
            parent,
            notify.as_ref(),
            &self.registry,
            &self.capabilities,
            &self.credentials,
        )
        .await;
        let _serial = self.ask_lock.lock().await;
        let now = self.clock.now_ms();
        let (account, chat, code, reason) = match route {
            Route::To { account, chat } => {
                let start = rand::random::<u32>() as usize;
                let code = self
                    .lock()
                    .free_code(&account, chat.as_str(), start)
                    .ok_or_else(|| {
                        ConfirmError::InvalidRequest(format!(
                            "too many open questions in {account}; wait for some to close"
                        ))
                    })?;
                (Some(account), chat.0, code, None)
            }
            Route::Nowhere { account, reason } => {
                (account, String::new(), String::new(), Some(reason))
            }
        };
        let failed = reason.is_some();
        let row = Row {
            seq: 0,
            account: account.as_ref().map(|a| a.to_string()).unwrap_or_default(),
            chat,
            code,
            question: question.trim().to_string(),
            state: if failed {
                ConfirmState::Failed
            } else {
                ConfirmState::Pending
            },
            reason,
            created_ms: now,
            deadline_unix: now / 1000 + timeout,
            message_key: String::new(),
            answer_msg: None,
            closed_ms: failed.then_some(now),
            platform_msg: None,
            platform_chat: None,
            offers_always,
            always: false,
        };
        let row = self.store.call(move |t| db::insert(t, &row)).await?;
        let q = Question::asked(row, account, now);
        match &q.row.reason {
            Some(reason) => {
                tracing::warn!(id = %q.id(), reason = %reason, "a question could not be asked")
            }
            None => tracing::info!(id = %q.id(), chat = %q.row.account, "question asked"),
        }
        self.lock().put(q.clone());
        self.changed();
        if !failed && let Err(e) = self.enqueue_question(&q).await {
            // The delivery check re-queues it (same key) shortly.
            tracing::error!(id = %q.id(), error = %e, "cannot queue a question yet");
        }
        self.wake.notify_one();
        Ok(q.info())
    }
}

/// Checks the question and the timeout; returns the timeout in seconds.
fn validate(question: &str, timeout_seconds: Option<u64>) -> Result<u64, ConfirmError> {
    let q = question.trim();
    if q.is_empty() {
        return Err(ConfirmError::InvalidRequest("the question is empty".into()));
    }
    if q.chars().count() > MAX_QUESTION_CHARS {
        return Err(ConfirmError::InvalidRequest(format!(
            "the question is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    match timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECS) {
        0 => Err(ConfirmError::InvalidRequest(
            "timeout_seconds must be at least 1".into(),
        )),
        t if t > MAX_TIMEOUT_SECS => Err(ConfirmError::InvalidRequest(format!(
            "timeout_seconds {t} is longer than the longest allowed wait, {MAX_TIMEOUT_SECS} (4 hours)"
        ))),
        t => Ok(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_default_and_refuse_more_than_four_hours() {
        assert_eq!(validate("Deploy?", None), Ok(1800));
        assert_eq!(validate("Deploy?", Some(14_400)), Ok(14_400));
        assert!(matches!(
            validate("Deploy?", Some(14_401)),
            Err(ConfirmError::InvalidRequest(_))
        ));
        assert!(validate("Deploy?", Some(0)).is_err());
        assert!(validate("  \n", None).is_err());
        assert!(validate(&"x".repeat(MAX_QUESTION_CHARS + 1), None).is_err());
    }
}
