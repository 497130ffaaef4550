//! Asking from inside the daemon: an in-process asker's wait, and agent tool approvals
//! (`approvals = "ask"`) as confirm questions in the chat that started the turn.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{Closed, ConfirmError, ConfirmService};
use crate::agent::{ApprovalRequest, Approver, Decision};
use crate::protocol::{ConfirmInfo, ConfirmState};

/// How often an in-process asker renews its question (well inside the one-minute withdrawal).
const KEEP_ALIVE_MS: u64 = 20_000;
/// How long the owner has to decide a tool call (seconds); the turn waits meanwhile.
pub const APPROVAL_TIMEOUT_SECS: u64 = 1800;

impl ConfirmService {
    /// Asks and waits for the outcome, keeping the question alive meanwhile: for askers inside
    /// the daemon that have no socket to poll. When `stop` fires first, the question is withdrawn
    /// at once (the chat is told) and its final state returned.
    pub async fn ask_and_wait(
        &self,
        question: &str,
        parent: Option<&str>,
        timeout_seconds: Option<u64>,
        stop: &CancellationToken,
    ) -> Result<ConfirmInfo, ConfirmError> {
        self.ask_and_wait_offering(question, parent, timeout_seconds, false, stop)
            .await
    }

    /// [`ConfirmService::ask_and_wait`], offering "always" beside yes and no when
    /// `offers_always`; [`ConfirmService::answered_always`] tells afterwards which yes it was.
    async fn ask_and_wait_offering(
        &self,
        question: &str,
        parent: Option<&str>,
        timeout_seconds: Option<u64>,
        offers_always: bool,
        stop: &CancellationToken,
    ) -> Result<ConfirmInfo, ConfirmError> {
        let mut closes = self.closes.subscribe();
        let mut info = self
            .ask_offering(question, parent, timeout_seconds, offers_always)
            .await?;
        while info.state == ConfirmState::Pending {
            let renew = self.clock.now_ms() + KEEP_ALIVE_MS;
            tokio::select! {
                _ = self.clock.sleep_until(renew) => {}
                _ = closes.changed() => {}
                _ = stop.cancelled() => {
                    self.withdraw(&info.id).await?;
                    return self.status(&info.id).await;
                }
                _ = self.cancel.cancelled() => {
                    return Err(ConfirmError::Internal("the daemon is stopping".into()));
                }
            }
            info = self.status(&info.id).await?;
        }
        Ok(info)
    }

    /// Whether question `id` was answered "always" (a yes on a question that offered it).
    fn answered_always(&self, id: &str) -> bool {
        super::parse_id(id)
            .and_then(|seq| self.lock().get(seq).map(|q| q.row.always))
            .unwrap_or(false)
    }

    /// Withdraws a pending question now and tells its chat; a closed one stays as it is.
    pub async fn withdraw(&self, id: &str) -> Result<ConfirmState, ConfirmError> {
        let seq = super::parse_id(id).ok_or_else(|| ConfirmError::NotFound(id.to_string()))?;
        match self
            .close(seq, ConfirmState::Withdrawn, None, None, None, false)
            .await?
        {
            Closed::Now(q) => {
                tracing::info!(id = %q.id(), "question withdrawn by its asker");
                self.tell_closed(&q).await;
                Ok(ConfirmState::Withdrawn)
            }
            Closed::Already(row) => Ok(row.state),
        }
    }
}

/// The confirm questions as the agent backends' [`Approver`].
pub(super) struct ConfirmApprover {
    // Strong: the service holds no pipeline (it queues through an outbox handle), so the
    // pipeline holding this approver makes no cycle.
    svc: Arc<ConfirmService>,
}

impl ConfirmApprover {
    /// An approver asking through `svc`.
    pub(super) fn new(svc: &Arc<ConfirmService>) -> Self {
        ConfirmApprover { svc: svc.clone() }
    }
}

impl Approver for ConfirmApprover {
    fn approve(
        &self,
        request: ApprovalRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, bool> {
        let decided = self.decide(request, false, cancel);
        Box::pin(async move { decided.await != Decision::Reject })
    }

    fn decide(
        &self,
        request: ApprovalRequest,
        offer_always: bool,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Decision> {
        let svc = self.svc.clone();
        // "Always" only where the agent offers it AND the account allows it.
        let offer_always = offer_always && svc.settings().always.contains(&request.session.account);
        // Its own task, so the question is withdrawn even when the turn's future is dropped.
        let task = tokio::spawn(async move {
            let parent = request.session.parent();
            let lang = svc
                .lang_of(&request.session.account, request.session.chat.as_str())
                .await;
            let asked = svc
                .ask_and_wait_offering(
                    &request.question(lang),
                    Some(&parent),
                    Some(APPROVAL_TIMEOUT_SECS),
                    offer_always,
                    &cancel,
                )
                .await;
            match asked {
                Ok(info) => {
                    let decision = match info.state {
                        ConfirmState::Yes if svc.answered_always(&info.id) => Decision::AllowAlways,
                        ConfirmState::Yes => Decision::AllowOnce,
                        _ => Decision::Reject,
                    };
                    match &info.reason {
                        Some(reason) => {
                            tracing::warn!(session = %parent, id = %info.id, reason = %reason, "a tool approval could not be asked; denied")
                        }
                        None => {
                            tracing::info!(session = %parent, id = %info.id, decision = ?decision, "tool approval decided")
                        }
                    }
                    Some(decision)
                }
                // Stopping is nobody's "no": the turn is cancelled by the shutdown and its message
                // kept, so after the restart the agent asks again.
                Err(_) if svc.cancel.is_cancelled() => None,
                Err(e) => {
                    tracing::warn!(session = %parent, error = %e, "a tool approval could not be asked; denied");
                    Some(Decision::Reject)
                }
            }
        });
        Box::pin(async move {
            match task.await {
                Ok(Some(decision)) => decision,
                Ok(None) => std::future::pending().await,
                Err(_) => Decision::Reject,
            }
        })
    }
}
