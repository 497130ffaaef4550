//! Digests and health counters: report items become one numbered digest per interval (at once
//! when one is urgent), at most `max_digests_per_day`, each handed to the outbox exactly once.

use crate::ids::DeliveryState;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Account;
use crate::config::AccountKey;
use crate::conversation::ChatId;
use crate::mail::triage::budget::{local_day, next_midnight};
use crate::mail::triage::db::{self, Unsent};
use crate::mail::triage::digest::render;
use crate::protocol::MailCounts;
use crate::store::StoreError;
use crate::supervisor::HealthHandle;

/// What one [`Account::flush`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flush {
    /// A digest went to the outbox.
    Sent,
    /// Nothing waits.
    Nothing,
    /// Items wait; the next digest is due at this Unix time.
    NotDue(i64),
    /// The daily cap is reached; items wait for the next local day.
    CapReached,
    /// No mail chat, or its owner is not known yet: items wait.
    NoChat,
    /// A test stop point was reached.
    Halted,
}

/// Sends due digests and keeps the counters fresh until cancelled.
pub(super) async fn digest_loop(
    acct: Arc<Account>,
    health: HealthHandle,
    cancel: CancellationToken,
) {
    let mut jumps = acct.env.clock.jumps();
    loop {
        let flushed = match acct.flush(false).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(account = %acct.id, error = %e, "cannot build a digest");
                Flush::Nothing
            }
        };
        if flushed == Flush::Halted {
            cancel.cancelled().await;
            return;
        }
        let undelivered = acct.check_delivered().await;
        acct.refresh_health(&health).await;
        let now = acct.env.clock.now_utc();
        // Re-check each minute anyway: delivery states and counters change without a wake-up.
        let mut wait = Duration::from_secs(if undelivered { 1 } else { 60 });
        let midnight = (next_midnight(now, acct.env.timezone) - now)
            .to_std()
            .unwrap_or_default();
        wait = wait.min(midnight + Duration::from_millis(10));
        if let Flush::NotDue(at) = flushed {
            let until = Duration::from_secs(at.saturating_sub(now.timestamp()).max(0) as u64);
            wait = wait.min(until);
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = acct.wake.notified() => {}
            _ = jumps.changed() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

impl Account {
    /// The clock's Unix seconds.
    pub(super) fn now(&self) -> i64 {
        self.env.clock.now_utc().timestamp()
    }

    /// The local day, as stored (`2026-03-01`).
    pub(super) fn today(&self) -> String {
        local_day(self.env.clock.now_utc(), self.env.timezone).to_string()
    }

    /// The outbox key of digest `id`: stable, so a resend after a crash is dropped.
    fn digest_key(&self, id: i64) -> String {
        format!("mail:{}/digest/{id}", self.key.account)
    }

    /// Where a digest goes now: the first of [`digest_routes`] whose owner is known, and that
    /// owner's chat (their user id).
    pub(super) async fn digest_chat(&self) -> Option<(AccountKey, ChatId)> {
        let (routes, now) = self.ctx.conversation.owner_routes();
        let order = digest_routes(self.report_to.as_ref(), &routes, now);
        for to in order {
            if let Some(owner) = self.owner_of(&to).await {
                return Some((to, ChatId::new(owner)));
            }
        }
        None
    }

    /// The owner of chat account `to`, as its login stored it.
    async fn owner_of(&self, to: &AccountKey) -> Option<String> {
        let creds = self.ctx.credentials.clone();
        let id = to.to_string();
        tokio::task::spawn_blocking(move || creds.load(&id))
            .await
            .ok()?
            .ok()
            .flatten()?
            .owner()
    }

    /// Sends what is due (everything waiting when `force`), after re-sending any digest a
    /// crash left between build and outbox.
    pub(super) async fn flush(&self, force: bool) -> Result<Flush, StoreError> {
        let _one = self.digest_lock.lock().await;
        let a = self.id.clone();
        for u in self.ctx.store.call(move |t| db::unsent(t, &a)).await? {
            self.enqueue(u).await?;
        }
        let Some((report_to, chat)) = self.digest_chat().await else {
            return Ok(Flush::NoChat);
        };
        let (a, day, now) = (self.id.clone(), self.today(), self.now());
        let d = day.clone();
        let (waiting, counters, today) = self
            .ctx
            .store
            .call(move |t| {
                Ok((
                    db::waiting(t, &a)?,
                    db::day_counters(t, &a, &d)?,
                    db::digests_on(t, &a, &d)?,
                ))
            })
            .await?;
        let (urgent, oldest, count) = waiting;
        let untold = counters[4].saturating_sub(counters[5]);
        if count == 0 && !(force && untold > 0) {
            return Ok(Flush::Nothing);
        }
        let due_at = oldest.map_or(now, |o| o + self.interval.num_seconds());
        if !(force || urgent || now >= due_at) {
            return Ok(Flush::NotDue(due_at));
        }
        if today >= self.max_digests {
            return Ok(Flush::CapReached);
        }
        let (a, chat_s, to_s) = (
            self.id.clone(),
            chat.as_str().to_string(),
            report_to.to_string(),
        );
        let name = self.key.account.clone();
        let fixed = self.language.fixed();
        let built = self
            .ctx
            .store
            .call(move |t| {
                // The mail chat's language: the account's fixed one, else the chat's remembered.
                let lang = match fixed {
                    Some(l) => l,
                    None => crate::words::remembered(t, &report_to, &chat)?.unwrap_or_default(),
                };
                db::build_digest(t, &a, &day, now, &chat_s, &to_s, |lines, untriaged| {
                    render(&name, lines, untriaged, lang)
                })
            })
            .await?;
        let Some(u) = built else {
            return Ok(Flush::Nothing);
        };
        tracing::info!(account = %self.id, digest = u.id, "digest built");
        if self.env.hooks.hit(super::CrashPoint::AfterDigestBuild) {
            return Ok(Flush::Halted);
        }
        self.enqueue(u).await?;
        Ok(Flush::Sent)
    }

    /// Hands a stored digest to the outbox (idempotent by its key), then drops its text.
    async fn enqueue(&self, u: Unsent) -> Result<(), StoreError> {
        let Some(account) = AccountKey::parse(&u.report_to) else {
            return Ok(());
        };
        let key = self.digest_key(u.id);
        self.ctx
            .conversation
            .send_proactive(&account, &ChatId::new(u.chat.clone()), &u.text, None, &key)
            .await?;
        let id = u.id;
        self.ctx.store.call(move |t| db::mark_queued(t, id)).await?;
        tracing::info!(account = %self.id, digest = id, "digest queued for the mail chat");
        Ok(())
    }

    /// Marks digests the chat has delivered (until then their items count as `queued`).
    /// Returns whether some still wait in the outbox.
    pub(super) async fn check_delivered(&self) -> bool {
        let a = self.id.clone();
        let Ok(ids) = self
            .ctx
            .store
            .call(move |t| db::queued_digests(t, &a))
            .await
        else {
            return false;
        };
        let mut waiting = false;
        for id in ids {
            let key = self.digest_key(id);
            let state = self.ctx.conversation.delivery_state(&key).await;
            // `failed` digests will never arrive; counting them as waiting forever helps nobody.
            // A `moved` one went on as a copy to the owner's next route, which delivers it.
            if matches!(
                state.ok().flatten(),
                Some(DeliveryState::Sent | DeliveryState::Failed | DeliveryState::Moved)
            ) {
                let _ = self
                    .ctx
                    .store
                    .call(move |t| db::mark_delivered(t, id))
                    .await;
            } else {
                waiting = true;
            }
        }
        waiting
    }

    /// Publishes the counters (counts only) in the account's health.
    pub(super) async fn refresh_health(&self, health: &HealthHandle) {
        let (a, day, now) = (self.id.clone(), self.today(), self.now());
        let counts = self
            .ctx
            .store
            .call(move |t| {
                db::purge(t, &a, now - 30 * 86_400)?;
                Ok((
                    db::day_counters(t, &a, &day)?,
                    db::live_counts(t, &a, now - 86_400)?,
                ))
            })
            .await;
        let Ok((c, (claimed, queued, messages_24h))) = counts else {
            return;
        };
        let last = self.last_check.load(Ordering::Relaxed);
        health.set_mail(MailCounts {
            claimed,
            queued,
            seen_today: c[0],
            triaged_today: c[1],
            reported_today: c[2],
            tokens_today: c[3],
            token_budget: self.budget,
            messages_24h,
            last_check_unix_seconds: (last > 0).then_some(last),
        });
    }
}

/// The routes a digest may take, first choice first. `report_to` among the owner's routes (or
/// none set): like `send`, the first route that can deliver now (`now`), then `report_to`,
/// then the other routes in order (the mover takes it on from a route that waits).
/// `report_to` outside the routes (a chat of its own): only it.
fn digest_routes(
    report_to: Option<&AccountKey>,
    routes: &[AccountKey],
    now: Option<AccountKey>,
) -> Vec<AccountKey> {
    let follows = report_to.is_none_or(|r| routes.contains(r));
    if !follows {
        return report_to.cloned().into_iter().collect();
    }
    let mut order: Vec<AccountKey> = Vec::with_capacity(routes.len() + 1);
    for r in now.iter().chain(report_to).chain(routes) {
        if !order.contains(r) {
            order.push(r.clone());
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Channel;

    #[test]
    fn a_digest_takes_the_route_that_can_deliver_now_when_report_to_is_one_of_them() {
        // Any two chat platforms do: the choice reads the routes, never the platform.
        let (first, second) = (Channel::ALL[0], Channel::ALL[1]);
        let (phone, work, group) = (
            AccountKey::new(first, "phone"),
            AccountKey::new(second, "work"),
            AccountKey::new(second, "group"),
        );
        let routes = vec![phone.clone(), work.clone()];
        assert_eq!(
            digest_routes(Some(&phone), &routes, Some(work.clone())),
            vec![work.clone(), phone.clone()]
        );
        assert_eq!(
            digest_routes(Some(&phone), &routes, None),
            vec![phone.clone(), work.clone()],
            "nothing delivers now: report_to first, the mover takes it on"
        );
        assert_eq!(
            digest_routes(Some(&group), &routes, Some(work.clone())),
            vec![group.clone()],
            "a chat of its own stays"
        );
        assert_eq!(
            digest_routes(None, &routes, Some(work.clone())),
            vec![work.clone(), phone.clone()]
        );
        assert_eq!(digest_routes(Some(&phone), &[], None), vec![phone]);
    }
}
