//! The mover: a message to the owner that waits on a route longer than `[owner]
//! move_after_seconds` (a closed window, an account down, failing sends) moves to the next
//! route, once per route.
//!
//! It wakes on every change of the delivery counts, on clock jumps and when the oldest wait it
//! watches reaches the bound. A wait is timed from when the mover first saw it, on the daemon's
//! clock, kept in memory: after a restart the bound starts again, so a message moves later than
//! it might, never earlier. Only messages in the route's owner chat move (a reply to someone
//! else stays). A question moves with its message, in the same transaction
//! (`ConfirmService::follow`), so it is answered where it arrives and no longer where it
//! waited, wherever a crash falls.
//!
//! Unconfirmed: a sender retrying the same item at the very moment it is moved could still
//! deliver the first copy; the mover only takes items whose chat is waiting (the sender then
//! reads the outbox again before its next try), which leaves only that instant.

use std::collections::HashMap;
use std::sync::Arc;

use super::OwnerService;
use crate::config::AccountKey;
use crate::confirm::route::{self, Parent, Route};
use crate::conversation::PendingMessage;

/// Runs until the service stops.
pub(super) async fn run(svc: Arc<OwnerService>) {
    let mut changes = svc.parts.outbox.delivery_changes();
    let mut jumps = svc.parts.clock.jumps();
    // Message key → when the mover first saw it waiting (daemon clock, ms).
    let mut seen: HashMap<String, u64> = HashMap::new();
    loop {
        changes.borrow_and_update();
        let now = svc.parts.clock.now_ms();
        let next = pass(&svc, &mut seen, now).await;
        svc.moved_up_to.send_replace(now);
        tokio::select! {
            _ = svc.cancel.cancelled() => return,
            _ = changes.changed() => {}
            _ = jumps.changed() => {}
            _ = until(&svc, next) => {}
        }
    }
}

async fn until(svc: &OwnerService, next: Option<u64>) {
    match next {
        Some(t) => svc.parts.clock.sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// One look: moves what has waited long enough; returns when the next wait reaches the bound.
async fn pass(svc: &OwnerService, seen: &mut HashMap<String, u64>, now: u64) -> Option<u64> {
    let settings = svc.settings();
    let bound = settings.move_after.as_millis() as u64;
    let routes = settings.routes;
    if routes.len() < 2 {
        seen.clear();
        return None;
    }
    let from: Vec<String> = routes[..routes.len() - 1]
        .iter()
        .map(|r| r.to_string())
        .collect();
    let pending = match svc.parts.outbox.pending_messages(from).await {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "cannot read the messages waiting for the owner");
            return Some(now + 1000);
        }
    };
    let attached = svc.parts.outbox.attached_accounts();
    let waiting: Vec<PendingMessage> = pending
        .into_iter()
        .filter(|m| m.why.is_some() || !attached.contains(&m.account))
        .collect();
    seen.retain(|k, _| waiting.iter().any(|m| &m.key == k));
    let mut next: Option<u64> = None;
    for m in waiting {
        let since = *seen.entry(m.key.clone()).or_insert(now);
        if now < since + bound {
            next = Some(next.map_or(since + bound, |n| n.min(since + bound)));
            continue;
        }
        let at = routes.iter().position(|r| r.to_string() == m.account);
        let Some(to) = at.and_then(|i| routes.get(i + 1)) else {
            continue;
        };
        if move_one(svc, &m, to).await {
            seen.remove(&m.key);
        }
    }
    next
}

/// Moves `m` to `to`'s owner chat when it sits in its own route's owner chat; true when done
/// (or nothing is left to do for it).
async fn move_one(svc: &OwnerService, m: &PendingMessage, to: &AccountKey) -> bool {
    let Some(from) = AccountKey::parse(&m.account) else {
        return true;
    };
    let p = &svc.parts;
    let owner_chat = |account: AccountKey| async move {
        match route::resolve(
            Parent::Account(account),
            None,
            &p.registry,
            &p.capabilities,
            &p.credentials,
        )
        .await
        {
            Route::To { chat, .. } => Some(chat),
            Route::Nowhere { .. } => None,
        }
    };
    if owner_chat(from.clone()).await.as_ref() != Some(&m.chat) {
        return true;
    }
    let Some(chat) = owner_chat(to.clone()).await else {
        // The next route cannot take it now (disabled, no owner): it stays and is looked at
        // again at the next change.
        return false;
    };
    // The question the message asks moves in the message's own transaction.
    let follow = p.confirm.as_ref().and_then(|c| c.follow(&m.key, to, &chat));
    let also = follow.as_ref().map(|f| f.change());
    let moved = match p.outbox.move_message(m, to, &chat, also).await {
        Ok(Some(moved)) => moved,
        Ok(None) => return true,
        Err(e) => {
            tracing::error!(error = %e, "cannot move a message to the owner's next route");
            return false;
        }
    };
    tracing::info!(from = %m.account, to = %to, "a message to the owner waited too long and moved to the next route");
    if let (Some(confirm), Some(f)) = (&p.confirm, &follow)
        && moved.also
    {
        confirm.followed(f, &moved.copy);
    }
    true
}
