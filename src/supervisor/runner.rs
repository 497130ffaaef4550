//! One account's lifecycle: start, watch, classify the failure, back off or fail, stop.
//!
//! Only what a person must fix (rejected credentials, bad configuration: `Fatal`) ends in
//! `failed`. Every transient failure is retried for ever: attempts that never connected only
//! grow the backoff; runs that connected and then dropped count toward the restart budget, and
//! a spent budget holds retries at the cap instead of giving up. Once the account has connected
//! (since it was started with its present settings), retries wait at most the short reconnect
//! cap, so a platform coming back is noticed within it whatever happened before; the long cap
//! is for an account that has never connected (a wrong host, a platform down since the start).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::backoff::BackoffPolicy;
use super::component::{Component, ComponentError};
use super::health::{HealthCell, HealthHandle, unix_now};
use crate::failure::{Class, Code, Failure, general};
use crate::protocol::ComponentState;

/// The knobs of every account's lifecycle.
#[derive(Clone)]
pub struct LifecyclePolicy {
    /// Restart delays of an account that has not connected since it started.
    pub backoff: BackoffPolicy,
    /// The longest delay once the account has connected: outages end on the platform's
    /// schedule, and this bounds how late the account notices.
    pub reconnect_cap: Duration,
    /// Connected this long resets the backoff.
    pub healthy_after: Duration,
    /// More restarts of a connected account than this within the last hour hold its retries
    /// at the backoff cap (it keeps retrying; it never fails for this).
    pub budget_max: usize,
    /// How long a stopping component may take before it is abandoned.
    pub stop_grace: Duration,
    /// The jitter source: a draw in `[0, 1]`.
    pub jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
}

impl Default for LifecyclePolicy {
    fn default() -> Self {
        LifecyclePolicy {
            backoff: BackoffPolicy::default(),
            reconnect_cap: Duration::from_secs(10),
            healthy_after: Duration::from_secs(60),
            budget_max: 10,
            stop_grace: Duration::from_secs(5),
            jitter: Arc::new(super::backoff::random_jitter),
        }
    }
}

impl LifecyclePolicy {
    /// The backoff curve for the next retry: capped at [`Self::reconnect_cap`] once the account
    /// has connected (the platform was reachable; it will be again soon), else the full curve.
    pub fn backoff_for(&self, has_connected: bool) -> BackoffPolicy {
        if has_connected {
            BackoffPolicy {
                base: self.backoff.base,
                cap: self.backoff.cap.min(self.reconnect_cap),
            }
        } else {
            self.backoff
        }
    }
}

/// How an account's task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// It stopped within the grace period (or was not running).
    Stopped,
    /// It did not stop in time and was abandoned (aborted).
    Abandoned,
}

/// Runs `component` under the lifecycle until `cancel` fires.
pub async fn run_account(
    component: Arc<dyn Component>,
    cell: Arc<HealthCell>,
    policy: LifecyclePolicy,
    cancel: CancellationToken,
) -> StopOutcome {
    let mut attempt: u32 = 0;
    loop {
        cell.set_state(ComponentState::Starting);
        let connects_before = cell.connects();
        let child = cancel.child_token();
        let handle = HealthHandle::for_run(cell.clone());
        let mut task = tokio::spawn(component.clone().run(handle, child.clone()));
        let ended = tokio::select! {
            r = &mut task => r,
            _ = cancel.cancelled() => return stop(task, child, &cell, policy.stop_grace).await,
        };
        let err = match ended {
            Ok(Ok(())) => Failure::transient(
                general::STOPPED_UNASKED,
                "stopped by itself without being asked",
            ),
            Ok(Err(e)) => e,
            Err(join) => {
                let (code, message) = panic_message(join);
                Failure::transient(code, message)
            }
        };
        if err.class == Class::Fatal {
            return fail(&cell, &err, &cancel).await;
        }
        if cell.connected_for() >= policy.healthy_after {
            attempt = 0;
        }
        // A run that never connected is one more failed attempt, not a restart: it only grows
        // the backoff. A run that connected and then dropped is a restart and spends budget.
        let had_connected = cell.connects() > connects_before;
        let within_budget = !had_connected || cell.record_restart() <= policy.budget_max;
        let backoff = policy.backoff_for(cell.connects() > 0);
        // Everything but a slow-down backs off: `Transient`, and `Rejected` or `WindowClosed`
        // should a run end with one (they describe one request; the run is simply retried).
        let mut delay = match err.class {
            Class::SlowDown(d) => d,
            _ => {
                let d = backoff.delay(attempt, (policy.jitter)());
                attempt = attempt.saturating_add(1);
                d
            }
        };
        let reason = if within_budget {
            err.message.clone()
        } else {
            // Connects and drops over and over: slow down to the cap, but never give up.
            delay = delay.max(backoff.cap);
            let recent = cell.recent_restarts();
            tracing::warn!(account = %cell.get().id, recent, "restart budget spent; retries wait the backoff cap");
            format!(
                "{recent} failures in the last hour, so retries wait {}; last error: {}",
                human_secs(backoff.cap),
                err.message
            )
        };
        tracing::info!(account = %cell.get().id, error = %err.message, code = %err.code, delay_ms = delay.as_millis() as u64, "account restarts after a delay");
        cell.set_state(ComponentState::Backoff);
        let retry_at = unix_now() + delay.as_secs_f64().ceil() as u64;
        cell.set_reason_with(Some(reason), Some(err.code), |h| {
            h.next_retry_unix_seconds = Some(retry_at);
        });
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cancel.cancelled() => {
                cell.set_state(ComponentState::Stopped);
                return StopOutcome::Stopped;
            }
        }
    }
}

/// "5 min", "40 s": how long retries wait, for people.
fn human_secs(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 && s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

/// Publishes the failure, then says so in the log (whoever reads the line finds status showing
/// it), then waits to be stopped.
async fn fail(cell: &HealthCell, failure: &Failure, cancel: &CancellationToken) -> StopOutcome {
    cell.set_failed(failure);
    tracing::warn!(account = %cell.get().id, error = %failure, code = %failure.code, "account failed; it will not restart until its configuration or credentials change");
    cancel.cancelled().await;
    StopOutcome::Stopped
}

/// Asks the running task to stop and waits at most `grace`; a task that overstays is aborted.
async fn stop(
    mut task: JoinHandle<Result<(), ComponentError>>,
    child: CancellationToken,
    cell: &HealthCell,
    grace: Duration,
) -> StopOutcome {
    cell.set_state(ComponentState::Stopping);
    child.cancel();
    match tokio::time::timeout(grace, &mut task).await {
        Ok(_) => {
            cell.set_state(ComponentState::Stopped);
            StopOutcome::Stopped
        }
        Err(_) => {
            task.abort();
            let msg = format!(
                "did not stop within {} s and was abandoned",
                grace.as_secs()
            );
            tracing::warn!(account = %cell.get().id, "{msg}");
            cell.set_state(ComponentState::Stopped);
            cell.set_reason(Some(msg));
            StopOutcome::Abandoned
        }
    }
}

/// The code and a person-readable description of a task that panicked or was cancelled.
///
/// The panic payload may quote input (message or mail text), so it goes to debug logs only.
fn panic_message(join: tokio::task::JoinError) -> (Code, String) {
    if !join.is_panic() {
        return (general::TASK_FAILED, "task was cancelled".to_string());
    }
    let payload = join.into_panic();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::debug!(panic = %text, "component panicked");
    (
        general::CRASHED,
        "crashed (a bug; please report it); restarting".to_string(),
    )
}
