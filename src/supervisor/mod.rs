//! Supervision: one task per account, restarted with backoff, reconciled against the desired set.
//!
//! Only the supervisor restarts; components report what happened and return.

mod backoff;
mod budget;
mod component;
mod health;
mod reconcile;
mod runner;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use backoff::{BackoffPolicy, random_jitter};
pub use budget::RestartWindow;
pub use component::{Capabilities, Component, ComponentError, ComponentFactory};
pub use health::{HealthCell, HealthHandle, HealthRegistry, NoteSource, unix_now};
pub use reconcile::{DesiredAccount, Diff, diff};
pub use runner::{LifecyclePolicy, StopOutcome, run_account};

use crate::config::AccountKey;
use crate::protocol::ComponentState;

/// What one reconcile did, reported back to whoever asked for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Accounts started for the first time.
    pub started: Vec<String>,
    /// Accounts stopped and removed.
    pub stopped: Vec<String>,
    /// Accounts stopped and started again: new settings or credentials, or they had failed.
    pub restarted: Vec<String>,
    /// Accounts whose task had to be abandoned while stopping.
    pub abandoned: Vec<String>,
}

/// One running account.
struct Running {
    desired: DesiredAccount,
    cancel: CancellationToken,
    task: Option<JoinHandle<StopOutcome>>,
}

/// Runs every account and reconciles them against a desired set.
pub struct Supervisor {
    registry: Arc<HealthRegistry>,
    running: Mutex<BTreeMap<AccountKey, Running>>,
    factory: Arc<dyn ComponentFactory>,
    policy: LifecyclePolicy,
    root: CancellationToken,
}

impl Supervisor {
    /// A supervisor with nothing running yet.
    pub fn new(factory: Arc<dyn ComponentFactory>, policy: LifecyclePolicy) -> Self {
        Self::with_registry(factory, policy, Arc::new(HealthRegistry::default()))
    }

    /// A supervisor reporting into `registry`, made before it so services built earlier (the
    /// confirm questions) read account health from the start.
    pub fn with_registry(
        factory: Arc<dyn ComponentFactory>,
        policy: LifecyclePolicy,
        registry: Arc<HealthRegistry>,
    ) -> Self {
        Supervisor {
            registry,
            running: Mutex::new(BTreeMap::new()),
            factory,
            policy,
            root: CancellationToken::new(),
        }
    }

    /// How long a stopping account may take; the daemon's stop gives the sends in flight as
    /// long (`Conversation::close`).
    pub fn stop_grace(&self) -> Duration {
        self.policy.stop_grace
    }

    /// The health registry the control socket reads.
    pub fn registry(&self) -> Arc<HealthRegistry> {
        self.registry.clone()
    }

    /// Brings the running set to `desired`: stops removed and changed accounts, then starts changed and added ones.
    ///
    /// `force` names accounts to restart even when unchanged (an explicit `channel_set`).
    /// An account in `failed` restarts on every apply: a person ran `login`, `reload` or
    /// `channel enable` because they fixed something, perhaps on the platform's side where
    /// neither the file nor the credentials change.
    pub async fn apply(
        &self,
        desired: BTreeMap<AccountKey, DesiredAccount>,
        force: &[AccountKey],
    ) -> ReloadReport {
        let mut running = self.running.lock().await;
        let current: BTreeMap<AccountKey, DesiredAccount> = running
            .iter()
            .map(|(k, r)| (k.clone(), r.desired.clone()))
            .collect();
        let mut d = diff(&current, &desired);
        let failed = current.keys().filter(|k| {
            self.registry
                .cell(&k.to_string())
                .is_some_and(|c| c.get().state == ComponentState::Failed)
        });
        let again: Vec<AccountKey> = force.iter().chain(failed).cloned().collect();
        for k in again {
            if current.contains_key(&k) && desired.contains_key(&k) && !d.change.contains(&k) {
                d.change.push(k);
            }
        }
        let mut report = ReloadReport::default();
        let stopping: Vec<(AccountKey, Running)> = d
            .remove
            .iter()
            .chain(d.change.iter())
            .filter_map(|k| running.remove(k).map(|r| (k.clone(), r)))
            .collect();
        for (key, outcome) in stop_all(stopping).await {
            if outcome == StopOutcome::Abandoned {
                report.abandoned.push(key.to_string());
            }
        }
        for k in &d.remove {
            self.registry.remove(&k.to_string());
            report.stopped.push(k.to_string());
        }
        for k in d.change.iter().chain(d.add.iter()) {
            let Some(want) = desired.get(k) else { continue };
            let restarts = self.registry.cell(&k.to_string()).map(|c| c.get().restarts);
            running.insert(k.clone(), self.spawn(want.clone(), restarts.unwrap_or(0)));
            if d.change.contains(k) {
                report.restarted.push(k.to_string());
            } else {
                report.started.push(k.to_string());
            }
        }
        report
    }

    /// Starts one account's task (or only its `disabled` health entry).
    fn spawn(&self, desired: DesiredAccount, restarts: u64) -> Running {
        let cell = HealthCell::new(&desired.spec);
        cell.update(|h| h.restarts = restarts);
        self.registry
            .insert(desired.spec.key.to_string(), cell.clone());
        let cancel = self.root.child_token();
        let task = desired.spec.enabled.then(|| {
            let component = self.factory.build(&desired.spec);
            tokio::spawn(run_account(
                component,
                cell,
                self.policy.clone(),
                cancel.clone(),
            ))
        });
        Running {
            desired,
            cancel,
            task,
        }
    }

    /// Stops every account (each within the grace period); the report names any abandoned.
    pub async fn shutdown(&self) -> ReloadReport {
        let mut running = self.running.lock().await;
        let all: Vec<(AccountKey, Running)> = std::mem::take(&mut *running).into_iter().collect();
        let mut report = ReloadReport::default();
        for (key, outcome) in stop_all(all).await {
            report.stopped.push(key.to_string());
            if outcome == StopOutcome::Abandoned {
                report.abandoned.push(key.to_string());
            }
        }
        self.root.cancel();
        report
    }
}

/// Cancels every account at once and waits for each (in parallel, each bounded by its grace period).
async fn stop_all(accounts: Vec<(AccountKey, Running)>) -> Vec<(AccountKey, StopOutcome)> {
    for (_, r) in &accounts {
        r.cancel.cancel();
    }
    let waits = accounts.into_iter().map(|(key, r)| async move {
        let outcome = match r.task {
            Some(t) => t.await.unwrap_or(StopOutcome::Abandoned),
            None => StopOutcome::Stopped,
        };
        (key, outcome)
    });
    futures_util::future::join_all(waits).await
}

#[cfg(test)]
mod pace_tests;
#[cfg(test)]
mod tests;
