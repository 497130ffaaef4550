//! Alerts across routes: when one of the owner's routes turns `failed`, the owner is told on
//! another route that runs (what stopped, why, the fix command), once per failure.
//!
//! "Once" is per stretch of the failure: the alert's outbox key names the route and when its
//! state last changed (`since_unix_seconds`), so a repeat of the same failure queues nothing,
//! and a new failure after the route ran again is told again. A daemon restart runs the account
//! again; if it fails again that is a new stretch, told again.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;

use super::OwnerService;
use crate::config::AccountKey;
use crate::confirm::route::{self, Parent, Route};
use crate::conversation::OutboxKey;
use crate::protocol::ComponentState;

/// Runs until the service stops.
pub(super) async fn run(svc: Arc<OwnerService>) {
    let mut jumps = svc.parts.clock.jumps();
    // Route → the stretch (its `since`) already told.
    let mut told: HashMap<String, u64> = HashMap::new();
    loop {
        // Listen before looking, so a change during the pass wakes the next wait: the routes'
        // cells (their state) and the registry (cells replaced by a reconcile).
        let mut membership = svc.parts.registry.subscribe();
        let mut cells: Vec<watch::Receiver<u64>> = svc
            .settings()
            .routes
            .iter()
            .filter_map(|r| svc.parts.registry.cell(&r.to_string()))
            .map(|c| c.subscribe())
            .collect();
        let now = svc.parts.clock.now_ms();
        pass(&svc, &mut told).await;
        svc.alerted_up_to.send_replace(now);
        let any_cell = async {
            if cells.is_empty() {
                return std::future::pending().await;
            }
            let changes = cells.iter_mut().map(|c| Box::pin(c.changed()));
            let _ = futures_util::future::select_all(changes).await;
        };
        tokio::select! {
            _ = svc.cancel.cancelled() => return,
            _ = membership.changed() => {}
            _ = jumps.changed() => {}
            _ = any_cell => {}
        }
    }
}

/// Tells the owner about each failed route not told yet, on the first other route that runs.
async fn pass(svc: &OwnerService, told: &mut HashMap<String, u64>) {
    let s = svc.settings();
    if s.routes.len() < 2 {
        return;
    }
    let p = &svc.parts;
    let health = |r: &AccountKey| p.registry.cell(&r.to_string()).map(|c| c.get());
    let attached = p.outbox.attached_accounts();
    for r in &s.routes {
        let id = r.to_string();
        let Some(h) = health(r) else { continue };
        if h.state != ComponentState::Failed {
            told.remove(&id);
            continue;
        }
        let since = h.since_unix_seconds.unwrap_or(0);
        if told.get(&id) == Some(&since) {
            continue;
        }
        let runs = |o: &&AccountKey| {
            *o != r
                && attached.contains(&o.to_string())
                && health(o).is_some_and(|h| h.state == ComponentState::Connected)
        };
        let Some(target) = s.routes.iter().find(runs) else {
            // Nowhere to tell it now; looked at again at the next change.
            continue;
        };
        let resolved = route::resolve(
            Parent::Account(target.clone()),
            None,
            &p.registry,
            &p.capabilities,
            &p.credentials,
        )
        .await;
        let Route::To { account, chat } = resolved else {
            continue;
        };
        let alert = crate::words::RouteStopped {
            route: id.clone(),
            why: h.error.clone().unwrap_or_else(|| "failed".into()),
            fix: h.command.clone(),
        };
        let language = s.languages.get(&account).copied().unwrap_or_default();
        let key = OutboxKey::owner_alert(r, since);
        let text = alert.text_for(language);
        match p
            .outbox
            .send_proactive(&account, &chat, &text, None, key.as_str())
            .await
        {
            Ok(()) => {
                tracing::info!(route = %id, to = %account, "told the owner on another route that a route stopped");
                told.insert(id, since);
            }
            Err(e) => tracing::error!(error = %e, "cannot queue an alert for the owner"),
        }
    }
}
