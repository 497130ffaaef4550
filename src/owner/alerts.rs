//! Alerts across routes: when one of the owner's routes turns `failed`, or its messages
//! (replies too) wait longer than `[owner] alert_after_seconds`, the owner is told on another
//! route that runs (what, why, the fix), in that route's language, and told again only when it
//! changes: a new failure, a worse reason to wait, or the route delivering again
//! (`owner/stuck.rs` decides; this file watches and queues).
//!
//! Never on the route it is about: the alert goes to the first other route that is attached and
//! connected, one whose own messages do not wait first. Each alert's outbox key names the route
//! and the stretch (`OutboxKey::owner_alert*`), so a repeat queues nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::watch;

use super::stuck::{Condition, News, RouteWatch, Step, rank};
use super::{OwnerService, OwnerSettings};
use crate::config::AccountKey;
use crate::confirm::route::{self, Parent, Route};
use crate::conversation::OutboxKey;
use crate::protocol::{ComponentState, WaitWhy};
use crate::words::{RouteBack, RouteStopped, RouteWaiting, WaitFix};

/// How long a pass that could not read the store waits before looking again (ms).
const STORE_RETRY_MS: u64 = 1000;

/// Runs until the service stops.
pub(super) async fn run(svc: Arc<OwnerService>) {
    let mut jumps = svc.parts.clock.jumps();
    let mut changes = svc.parts.outbox.delivery_changes();
    let mut watches: HashMap<String, RouteWatch> = HashMap::new();
    loop {
        // Listen before looking, so a change during the pass wakes the next wait: the routes'
        // cells (their state), the registry (cells replaced by a reconcile), the outbox's
        // waits (marked and cleared by the senders).
        let mut membership = svc.parts.registry.subscribe();
        let mut cells: Vec<watch::Receiver<u64>> = svc
            .settings()
            .routes
            .iter()
            .filter_map(|r| svc.parts.registry.cell(&r.to_string()))
            .map(|c| c.subscribe())
            .collect();
        changes.borrow_and_update();
        let now = svc.parts.clock.now_ms();
        let next = pass(&svc, &mut watches, now).await;
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
            _ = changes.changed() => {}
            _ = any_cell => {}
            _ = svc.sleep_until(next) => {}
        }
    }
}

/// Looks at every route and tells what is news; returns when to look again (a wait reaching
/// the bound, or a store that failed).
async fn pass(
    svc: &OwnerService,
    watches: &mut HashMap<String, RouteWatch>,
    now: u64,
) -> Option<u64> {
    let s = svc.settings();
    if s.routes.len() < 2 {
        watches.clear();
        return None;
    }
    let bound = s.alert_after.as_millis() as u64;
    let attached = svc.parts.outbox.attached_accounts();
    let mut conditions = Vec::with_capacity(s.routes.len());
    let mut next: Option<u64> = None;
    let mut soonest = |t: u64| next = Some(next.map_or(t, |n| n.min(t)));
    for r in &s.routes {
        let c = condition(svc, r, &attached).await;
        if c.is_none() {
            soonest(now + STORE_RETRY_MS);
        }
        conditions.push(c);
    }
    watches.retain(|k, _| s.routes.iter().any(|r| r.to_string() == *k));
    for (r, c) in s.routes.iter().zip(&conditions) {
        let Some(c) = c else { continue };
        let w = watches.entry(r.to_string()).or_default();
        match w.step(c, now, bound) {
            Step::Nothing => {}
            Step::LookAt(t) => soonest(t),
            Step::Tell(news) => {
                if tell(svc, &s, r, &conditions, &attached, &news).await {
                    w.told(&news);
                }
            }
        }
    }
    next
}

/// Route `r`'s condition now; `None` when the store cannot say (looked at again soon) or the
/// account has no health cell (not running in this daemon).
async fn condition(
    svc: &OwnerService,
    r: &AccountKey,
    attached: &HashSet<String>,
) -> Option<Condition> {
    let id = r.to_string();
    let h = svc.parts.registry.cell(&id)?.get();
    if h.state == ComponentState::Failed {
        return Some(Condition::Failed {
            since: h.since_unix_seconds.unwrap_or(0),
            why: h.error.clone().unwrap_or_else(|| "failed".into()),
            command: h.command.clone(),
        });
    }
    let waits = match svc.parts.outbox.account_waits(r).await {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot read how a route's messages wait");
            return None;
        }
    };
    let why = match (waits.pending, attached.contains(&id)) {
        (0, _) => None,
        // Nothing sends them while the account is not attached, whatever they said before.
        (_, false) => Some(WaitWhy::AccountDown),
        (_, true) => waits.whys.into_iter().max_by_key(|w| rank(*w)),
    };
    Some(match why {
        None => Condition::Fine,
        Some(why) => Condition::Waits {
            why,
            command: h.command.clone(),
        },
    })
}

/// Queues `news` about route `r` on the first other route that can take it; whether it did.
async fn tell(
    svc: &OwnerService,
    s: &OwnerSettings,
    r: &AccountKey,
    conditions: &[Option<Condition>],
    attached: &HashSet<String>,
    news: &News,
) -> bool {
    let p = &svc.parts;
    let runs = |o: &AccountKey| {
        o != r
            && attached.contains(&o.to_string())
            && p.registry
                .cell(&o.to_string())
                .is_some_and(|c| c.get().state == ComponentState::Connected)
    };
    let fine = |i: usize| matches!(conditions.get(i), Some(Some(Condition::Fine)));
    let candidates = s.routes.iter().enumerate().filter(|(_, o)| runs(o));
    let target = candidates
        .clone()
        .find(|(i, _)| fine(*i))
        .or_else(|| candidates.clone().next());
    let Some((_, target)) = target else {
        // Nowhere to tell it now; looked at again at the next change.
        return false;
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
        return false;
    };
    let language = s.languages.get(&account).copied().unwrap_or_default();
    let (key, text) = words(r, news, language);
    match p
        .outbox
        .send_proactive(&account, &chat, &text, None, key.as_str())
        .await
    {
        Ok(()) => {
            tracing::info!(route = %r, to = %account, "told the owner on another route how a route delivers");
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot queue an alert for the owner");
            false
        }
    }
}

/// The alert's key and text.
fn words(r: &AccountKey, news: &News, language: crate::words::Language) -> (OutboxKey, String) {
    let route = r.to_string();
    match news {
        News::Stopped {
            since,
            why,
            command,
        } => {
            let alert = RouteStopped {
                route,
                why: why.clone(),
                fix: command.clone(),
            };
            (
                OutboxKey::owner_alert(r, *since),
                alert.text_for(language).into(),
            )
        }
        News::Waits {
            why,
            since_ms,
            minutes,
            command,
        } => {
            let fix = match (why, command) {
                (WaitWhy::SendWindow, _) => WaitFix::WriteThere,
                (WaitWhy::Throttle, _) => WaitFix::Nothing,
                (_, Some(c)) => WaitFix::Command(c.clone()),
                (WaitWhy::AccountDown, None) => WaitFix::Command(crate::config::command("status")),
                (_, None) => WaitFix::Command(crate::config::command("doctor")),
            };
            let alert = RouteWaiting {
                route,
                platform: crate::adapters::platform(r.channel).label(),
                minutes: *minutes,
                why: *why,
                fix,
            };
            let key = OutboxKey::owner_alert_wait(r, *since_ms, why.as_str());
            (key, alert.text_for(language).into())
        }
        News::Back { stretch } => {
            let notice = RouteBack { route };
            let key = OutboxKey::owner_alert_back(r, stretch);
            (key, notice.text_for(language).into())
        }
    }
}
