//! One turn on a chat's connection: `turn.start`, its events, approvals, cancel and deadline.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::process::{Connection, Incoming, kind};
use super::wire::{ClientMessage, Event};
use super::{Ended, ScvAgent};
use crate::agent::{AgentError, AgentErrorKind, ApprovalRequest, Approver, SessionKey, TurnOutput};

impl ScvAgent {
    /// Runs one turn: `turn.start`, then events until the turn ends, the connection dies or
    /// `cancel` fires. Approval requests are answered at once, or asked of the owner while the
    /// turn's events keep being read; the time spent waiting for the owner does not count
    /// against the turn's deadline.
    pub(super) async fn turn_on(
        &self,
        conn: &mut Connection,
        plan: Plan<'_>,
        cancel: &CancellationToken,
    ) -> Ended {
        let dead = |e: AgentError| Ended {
            result: Err(e),
            alive: false,
        };
        let done = |result| Ended {
            result,
            alive: true,
        };
        let rid = conn.request_id();
        let start = ClientMessage::TurnStart {
            request_id: rid.clone(),
            session_id: conn.session_id.clone(),
            prompt: plan.prompt.to_string(),
            attachments: plan.attachments.iter().map(Into::into).collect(),
        };
        if let Err(e) = conn.send(&start).await {
            return dead(e);
        }
        let mut deadline = plan.deadline;
        let mut asked: FuturesUnordered<BoxFuture<'static, (Value, bool)>> =
            FuturesUnordered::new();
        let mut asking_since: Option<Instant> = None;
        // However the turn ends, questions still open are withdrawn from the chat.
        let asking = CancellationToken::new();
        let _withdraw = asking.clone().drop_guard();
        let mut turn: Option<Value> = None;
        // Both bounded: what passes the cap goes to a workspace file, never into memory.
        let mut deltas = plan.answer.start();
        let mut completed: Option<crate::agent::Answer> = None;
        loop {
            let inc = tokio::select! {
                biased;
                _ = cancel.cancelled() => return self.cancel_turn(conn, turn, &rid).await,
                _ = sleep_until_some(deadline.filter(|_| asked.is_empty())) => {
                    let mut ended = self.cancel_turn(conn, turn, &rid).await;
                    let limit = self.opts.turn_timeout.unwrap_or_default().as_secs_f64();
                    ended.result = Err(AgentError::new(
                        AgentErrorKind::Unavailable,
                        format!("the agent did not answer within {limit} s"),
                    ));
                    return ended;
                }
                Some((approval_id, approved)) = asked.next(), if !asked.is_empty() => {
                    if asked.is_empty()
                        && let Some(since) = asking_since.take()
                    {
                        deadline = deadline.map(|d| d + since.elapsed());
                    }
                    info!(approved, "the owner decided an approval request");
                    if let Err(e) = resolve(conn, approval_id, approved).await {
                        return dead(e);
                    }
                    continue;
                }
                inc = conn.next() => inc,
            };
            let ev = match inc {
                Incoming::Closed(why) => {
                    return dead(AgentError::new(AgentErrorKind::Unavailable, why));
                }
                Incoming::Event(ev, _) => ev,
            };
            let ours = |t: &Option<Value>| turn.is_some() && (t.is_none() || *t == turn);
            match ev {
                Event::TurnStarted {
                    request_id,
                    turn_id,
                } if turn.is_none()
                    && request_id.as_ref().is_none_or(|r| r.as_str() == Some(&rid)) =>
                {
                    turn = Some(turn_id);
                }
                Event::Delta { turn_id, content } if ours(&turn_id) => deltas.push(&content),
                Event::Completed { turn_id, content } if ours(&turn_id) => {
                    let mut answer = plan.answer.start();
                    answer.push(&content);
                    completed = Some(answer);
                }
                Event::ApprovalRequested {
                    approval_id,
                    name,
                    summary,
                    risk,
                } => match (&plan.approver, plan.auto_approve) {
                    (Some(approver), false) => {
                        info!(tool = %name, "asking the owner to approve a tool call");
                        if asked.is_empty() {
                            asking_since = Some(Instant::now());
                        }
                        let request = ApprovalRequest {
                            session: plan.session.clone(),
                            tool: name,
                            summary,
                            risk,
                        };
                        let decided = approver.approve(request, asking.child_token());
                        asked.push(Box::pin(async move { (approval_id, decided.await) }));
                    }
                    (_, approved) => {
                        info!(tool = %name, approved, "answering an approval request");
                        if let Err(e) = resolve(conn, approval_id, approved).await {
                            return dead(e);
                        }
                    }
                },
                Event::TurnCompleted { turn_id, usage } if ours(&turn_id) => {
                    // The last step's text wins; the deltas (and any file of theirs) go.
                    let answer = completed.unwrap_or(deltas);
                    if answer.text().trim().is_empty() {
                        return done(Err(AgentError::new(
                            AgentErrorKind::Failed,
                            "the agent finished the turn without an answer",
                        )));
                    }
                    let (text, files) = answer.finish();
                    return done(Ok(TurnOutput {
                        text,
                        usage,
                        files,
                        ..Default::default()
                    }));
                }
                Event::TurnFailed { turn_id, message } if ours(&turn_id) => {
                    return done(Err(AgentError::new(
                        AgentErrorKind::Failed,
                        format!("the agent failed: {message}"),
                    )));
                }
                Event::TurnCancelled { turn_id } if ours(&turn_id) => {
                    return done(Err(AgentError::new(
                        AgentErrorKind::Cancelled,
                        "the agent cancelled the turn",
                    )));
                }
                Event::Error {
                    request_id,
                    message,
                    fatal,
                } => {
                    if fatal {
                        return dead(AgentError::new(
                            AgentErrorKind::Unavailable,
                            format!("the agent is going away: {message}"),
                        ));
                    }
                    if request_id.as_ref().and_then(Value::as_str) == Some(&rid) {
                        return done(Err(AgentError::new(
                            AgentErrorKind::Failed,
                            format!("the agent refused the turn: {message}"),
                        )));
                    }
                    warn!(%message, "the agent reported an error");
                }
                // Answer deltas are not streamed: the answer is the last step's `completed`
                // text, which need not extend what earlier steps wrote.
                Event::Other(k) if k == "tool.started" => plan.events.status(""),
                other => debug!(event = kind(&other), "ignored agent event"),
            }
        }
    }

    /// Sends `turn.cancel` and returns at once; before the turn id is known, waits a little for it
    /// and otherwise drops the connection, which stops the turn for certain.
    async fn cancel_turn(&self, conn: &mut Connection, turn: Option<Value>, rid: &str) -> Ended {
        let turn = match turn {
            Some(t) => Some(t),
            None => {
                let wait = async {
                    loop {
                        match conn.next().await {
                            Incoming::Event(
                                Event::TurnStarted {
                                    request_id,
                                    turn_id,
                                },
                                _,
                            ) if request_id.as_ref().is_none_or(|r| r.as_str() == Some(rid)) => {
                                return Some(turn_id);
                            }
                            Incoming::Closed(_) => return None,
                            Incoming::Event(..) => {}
                        }
                    }
                };
                tokio::time::timeout(self.opts.cancel_grace, wait)
                    .await
                    .ok()
                    .flatten()
            }
        };
        let Some(turn_id) = turn else {
            return Ended {
                result: Err(cancelled()),
                alive: false,
            };
        };
        let request_id = conn.request_id();
        let msg = ClientMessage::TurnCancel {
            request_id,
            session_id: conn.session_id.clone(),
            turn_id,
        };
        let alive = conn.send(&msg).await.is_ok();
        Ended {
            result: Err(cancelled()),
            alive,
        }
    }
}

/// What one turn runs under.
pub(super) struct Plan<'a> {
    /// Approve every request without asking.
    pub(super) auto_approve: bool,
    /// Ask the owner instead (owner sessions with `approvals = "ask"`).
    pub(super) approver: Option<Arc<dyn Approver>>,
    /// The chat, where the owner is asked.
    pub(super) session: &'a SessionKey,
    /// The user's text.
    pub(super) prompt: &'a str,
    /// The files the owner sent with it.
    pub(super) attachments: &'a [crate::agent::Attachment],
    /// When the turn gives up (extended by the time spent waiting for the owner).
    pub(super) deadline: Option<Instant>,
    /// Where the turn's tool steps are reported (as a nameless status: chat users never see
    /// tool calls, agent-protocol.md), so a long turn's silence can be explained.
    pub(super) events: &'a crate::agent::TurnEvents,
    /// How much of the answer the chat gets; the rest goes to a workspace file.
    pub(super) answer: crate::agent::AnswerCap,
}

/// Sends `approval.resolve`.
async fn resolve(
    conn: &mut Connection,
    approval_id: Value,
    approved: bool,
) -> Result<(), AgentError> {
    let answer = ClientMessage::ApprovalResolve {
        request_id: conn.request_id(),
        session_id: conn.session_id.clone(),
        approval_id,
        approved,
    };
    conn.send(&answer).await
}

pub(super) fn cancelled() -> AgentError {
    AgentError::new(AgentErrorKind::Cancelled, "the turn was cancelled")
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
