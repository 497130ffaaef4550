//! The IMAP loop: baseline at UIDNEXT, claim each new UID in the store before anything else,
//! decide every open claim exactly once (pre-filter, then the model within the budget), wait.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use scv_mail::ImapSession;
use tokio_util::sync::CancellationToken;

use super::{Account, WAIT, store_error};
use crate::config::AccountSpec;
use crate::mail::triage::Outcome;
use crate::mail::triage::budget::local_day;
use crate::mail::triage::db::{self, Decided, Place};
use crate::mail::triage::rules::{OwnIdentity, PreFilter, prefilter};
use crate::supervisor::{ComponentError, HealthHandle};

/// Runs until cancelled (`Ok`) or a failure the supervisor must handle.
pub(super) async fn watch(
    acct: &Arc<Account>,
    spec: &AccountSpec,
    health: &HealthHandle,
    cancel: &CancellationToken,
) -> Result<(), ComponentError> {
    let password = acct.password().await?;
    let settings = acct.imap_settings(password);
    let mut imap = tokio::select! {
        r = ImapSession::connect(&settings) => r.map_err(|e| acct.error(spec, &e))?,
        _ = cancel.cancelled() => return Ok(()),
    };
    let mailbox = acct.mailbox();
    let mark = acct.settings.mark_triaged.unwrap_or(false);
    // EXAMINE (read-only) unless keywords are wanted: then SELECT, and still only BODY.PEEK and
    // `+FLAGS.SILENT ($ScvTriaged)` are ever sent, so `\Seen` cannot change either way.
    let opened = if mark {
        imap.select(&mailbox).await
    } else {
        imap.examine(&mailbox).await
    };
    let state = opened.map_err(|e| acct.error(spec, &e))?;
    if mark && !state.allows_keyword(scv_mail::TRIAGED_KEYWORD) {
        tracing::info!(account = %acct.id, "the server does not allow new keywords here; mail is not marked");
    }
    let place = Place {
        mailbox: mailbox.clone(),
        validity: state.uid_validity.unwrap_or(0),
    };
    let mut last_uid = position(acct, spec, &mut imap, &place, state.uid_next).await?;
    health.connected();
    let own = own_identity(acct).await?;
    loop {
        let new = imap
            .uids_from(last_uid.saturating_add(1))
            .await
            .map_err(|e| acct.error(spec, &e))?;
        acct.last_check.store(
            acct.env.clock.now_utc().timestamp().max(0) as u64,
            Ordering::Relaxed,
        );
        if !new.is_empty() {
            let (a, p, uids, now) = (acct.id.clone(), place.clone(), new.clone(), acct.now());
            let claimed = acct
                .ctx
                .store
                .call(move |t| db::claim(t, &a, &p, &uids, now))
                .await
                .map_err(store_error)?;
            last_uid = new.iter().copied().max().unwrap_or(last_uid).max(last_uid);
            tracing::debug!(account = %acct.id, claimed, "new mail claimed");
            acct.refresh_health(health).await;
            if acct.env.hooks.hit(super::CrashPoint::AfterClaim) {
                cancel.cancelled().await;
                return Ok(());
            }
        }
        decide_open(acct, spec, &mut imap, &place, &own).await?;
        acct.refresh_health(health).await;
        health.connected();
        match wait_heard(&mut imap, health, cancel).await {
            Ok(scv_mail::Wake::Cancelled) => {
                imap.logout().await;
                return Ok(());
            }
            Ok(_) => {}
            Err(e) => return Err(acct.error(spec, &e)),
        }
    }
}

/// Waits for news like [`ImapSession::wait_for_change`]; every answer the server gives
/// meanwhile (IDLE accepted, a keepalive, a NOOP) is evidence that moves `last_success`.
async fn wait_heard(
    imap: &mut ImapSession,
    health: &HealthHandle,
    cancel: &CancellationToken,
) -> scv_mail::Result<scv_mail::Wake> {
    let mut heard = imap.heard();
    let wait = imap.wait_for_change(WAIT, cancel);
    tokio::pin!(wait);
    loop {
        tokio::select! {
            woke = &mut wait => return woke,
            Ok(()) = heard.changed() => crate::port::evidence::heard(health),
        }
    }
}

/// The stored cursor, after a first-start baseline or a UIDVALIDITY re-baseline when needed.
async fn position(
    acct: &Account,
    spec: &AccountSpec,
    imap: &mut ImapSession,
    place: &Place,
    uid_next: Option<u32>,
) -> Result<u32, ComponentError> {
    let (a, m) = (acct.id.clone(), place.mailbox.clone());
    let stored = acct
        .ctx
        .store
        .call(move |t| db::cursor(t, &a, &m))
        .await
        .map_err(store_error)?;
    if let Some((validity, last)) = stored
        && validity == place.validity
    {
        return Ok(last);
    }
    let next = match uid_next {
        Some(n) => n,
        None => {
            let all = imap
                .uid_search("ALL")
                .await
                .map_err(|e| acct.error(spec, &e))?;
            all.last().copied().unwrap_or(0).saturating_add(1)
        }
    };
    let baseline = next.saturating_sub(1);
    let backfill = match (stored.is_none(), acct.settings.backfill_days) {
        (true, Some(days)) if days > 0 => {
            let since = local_day(acct.env.clock.now_utc(), acct.env.timezone)
                .checked_sub_days(chrono::Days::new(u64::from(days)))
                .unwrap_or_default();
            imap.uids_since(since)
                .await
                .map_err(|e| acct.error(spec, &e))?
        }
        _ => Vec::new(),
    };
    if stored.is_some() {
        tracing::info!(account = %acct.id, "UIDVALIDITY changed: starting again at new mail");
    }
    let (a, p, now) = (acct.id.clone(), place.clone(), acct.now());
    acct.ctx
        .store
        .call(move |t| {
            db::baseline(t, &a, &p, baseline, now)?;
            let old: Vec<u32> = backfill.into_iter().filter(|u| *u <= baseline).collect();
            db::claim(t, &a, &p, &old, now)
        })
        .await
        .map_err(store_error)?;
    Ok(baseline)
}

async fn own_identity(acct: &Account) -> Result<OwnIdentity, ComponentError> {
    let a = acct.id.clone();
    let ids = acct
        .ctx
        .store
        .call(move |t| db::sent_ids(t, &a))
        .await
        .map_err(store_error)?;
    let mut addresses = vec![acct.own_address().await.to_ascii_lowercase()];
    if acct.settings.username.contains('@') {
        addresses.push(acct.settings.username.to_ascii_lowercase());
    }
    Ok(OwnIdentity {
        addresses,
        message_ids: ids.into_iter().collect(),
    })
}

/// Decides every open claim: one batched FETCH per 200, pre-filter decisions stored per FETCH,
/// the model's decisions per model call (`judge`).
async fn decide_open(
    acct: &Arc<Account>,
    spec: &AccountSpec,
    imap: &mut ImapSession,
    place: &Place,
    own: &OwnIdentity,
) -> Result<(), ComponentError> {
    let (a, p) = (acct.id.clone(), place.clone());
    let open = acct
        .ctx
        .store
        .call(move |t| db::open_claims(t, &a, &p))
        .await
        .map_err(store_error)?;
    for batch in open.chunks(200) {
        let items = imap
            .fetch_items(batch)
            .await
            .map_err(|e| acct.error(spec, &e))?;
        let found: HashSet<u32> = items.iter().map(|i| i.uid).collect();
        let mut quick: Vec<Decided> = batch
            .iter()
            .filter(|u| !found.contains(u))
            .map(|&uid| Decided {
                uid,
                outcome: Outcome::Gone,
                tokens: 0,
                line: None,
            })
            .collect();
        let mut for_model = Vec::new();
        for item in items {
            match prefilter(&item, own) {
                PreFilter::Automated | PreFilter::Own => quick.push(Decided {
                    uid: item.uid,
                    outcome: Outcome::Rule,
                    tokens: 0,
                    line: None,
                }),
                PreFilter::Pass => for_model.push(item),
            }
        }
        let decided: Vec<u32> = batch
            .iter()
            .copied()
            .filter(|u| found.contains(u))
            .collect();
        super::judge::store_decisions(acct, place, quick).await?;
        super::judge::judge_all(acct, place, for_model).await?;
        // After the decisions are stored: a keyword is only ever a mirror of the store.
        mark_decided(acct, spec, imap, &decided).await?;
    }
    Ok(())
}

/// Sets `$ScvTriaged` on decided mail when `mark_triaged` is on and the server allows it.
/// A refusal (NO) is noted and skipped; a broken connection is the session's error as usual.
async fn mark_decided(
    acct: &Account,
    spec: &AccountSpec,
    imap: &mut ImapSession,
    uids: &[u32],
) -> Result<(), ComponentError> {
    if !acct.settings.mark_triaged.unwrap_or(false) || uids.is_empty() {
        return Ok(());
    }
    match imap.mark_triaged(uids).await {
        Ok(_) => Ok(()),
        Err(e @ scv_mail::MailError::ServerNo { .. }) => {
            tracing::warn!(account = %acct.id, error = %e, "the server refused the triaged keyword");
            Ok(())
        }
        Err(e) => Err(acct.error(spec, &e)),
    }
}
