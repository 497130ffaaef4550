//! The model's decisions on mail the pre-filter passed: batches of `triage_batch` mails per
//! call, at most `triage_parallel` calls at once, each batch admitted only when its estimate fits
//! what is left of the day's budget, and each batch's decisions stored as soon as its call ends.
//!
//! Exactly once: a decision is stored with the claim it closes (`db::decide` changes only claims
//! still open), so a crash mid-call leaves those claims open and they are asked again at the next
//! start, never decided twice.

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use scv_mail::MailItem;

use super::{Account, store_error};
use crate::mail::triage::budget::fits;
use crate::mail::triage::db::{self, Decided, Place};
use crate::mail::triage::digest::item_line;
use crate::mail::triage::model::Verdict;
use crate::mail::triage::{Outcome, Urgency};
use crate::supervisor::ComponentError;

/// Mails per call when `triage_batch` is not set: the instructions are paid once for ten mails.
pub const DEFAULT_BATCH: usize = 10;

/// Calls at once when `triage_parallel` is not set.
pub const DEFAULT_PARALLEL: usize = 4;

/// Decides `items` (all passed by the pre-filter), storing each batch's decisions when made.
pub(super) async fn judge_all(
    acct: &Arc<Account>,
    place: &Place,
    items: Vec<MailItem>,
) -> Result<(), ComponentError> {
    if items.is_empty() {
        return Ok(());
    }
    let Some(model) = acct.model.clone() else {
        // No model configured: every mail is reported, without a summary.
        let ds = items
            .iter()
            .map(|i| report(i, Urgency::Normal, None, false, 0))
            .collect();
        return store(acct, place, ds).await;
    };
    let size = acct
        .settings
        .triage_batch
        .map_or(DEFAULT_BATCH, |n| n as usize)
        .max(1);
    let parallel = acct
        .settings
        .triage_parallel
        .map_or(DEFAULT_PARALLEL, |n| n as usize)
        .max(1);
    let mut queue: VecDeque<Vec<MailItem>> = chunks(items, size);
    let mut spent = spent_today(acct).await?;
    let mut reserved = 0u64;
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < parallel {
            let Some(mut batch) = queue.pop_front() else {
                break;
            };
            let fitting = admit(&*model, &batch, spent.saturating_add(reserved), acct.budget);
            if fitting == 0 {
                if !running.is_empty() {
                    // What is in flight may cost less than its estimate: decide after it ends.
                    queue.push_front(batch);
                    break;
                }
                let over = batch.iter().map(|i| over_budget(i.uid)).collect();
                store(acct, place, over).await?;
                continue;
            }
            if fitting < batch.len() {
                queue.push_front(batch.split_off(fitting));
            }
            let estimate = model.estimate(&batch);
            reserved += estimate;
            let model = model.clone();
            running.push(async move {
                let verdicts = model.triage(&batch).await;
                (estimate, batch, verdicts)
            });
        }
        let Some((estimate, batch, verdicts)) = running.next().await else {
            break;
        };
        reserved = reserved.saturating_sub(estimate);
        spent = spent.saturating_add(verdicts.iter().map(|v| v.tokens).sum());
        // A model that returned too few verdicts still reports the rest: never a silent drop.
        let mut verdicts = verdicts.into_iter();
        let ds: Vec<Decided> = batch
            .iter()
            .map(|item| match verdicts.next() {
                Some(v) => decided(item, v),
                None => report(item, Urgency::Normal, None, false, 0),
            })
            .collect();
        store(acct, place, ds).await?;
    }
    Ok(())
}

/// `items` in batches of `size`, in order.
fn chunks(items: Vec<MailItem>, size: usize) -> VecDeque<Vec<MailItem>> {
    let mut queue = VecDeque::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        queue.push_back(items.by_ref().take(size).collect());
    }
    queue
}

/// How many of `batch`'s first mails fit in one call within the budget (0 when not even one).
fn admit(
    model: &dyn crate::mail::triage::model::TriageModel,
    batch: &[MailItem],
    committed: u64,
    budget: u64,
) -> usize {
    (1..=batch.len())
        .rev()
        .find(|&k| fits(committed, model.estimate(&batch[..k]), budget))
        .unwrap_or(0)
}

async fn spent_today(acct: &Account) -> Result<u64, ComponentError> {
    let (a, day) = (acct.id.clone(), acct.today());
    let counters = acct
        .ctx
        .store
        .call(move |t| db::day_counters(t, &a, &day))
        .await
        .map_err(store_error)?;
    Ok(counters[3])
}

/// Stores decisions and wakes the digest loop when one is to be reported.
async fn store(acct: &Account, place: &Place, ds: Vec<Decided>) -> Result<(), ComponentError> {
    let wake = ds
        .iter()
        .any(|d| matches!(d.outcome, Outcome::Report { .. }));
    store_decisions(acct, place, ds).await?;
    if wake {
        acct.wake.notify_one();
    }
    Ok(())
}

fn decided(item: &MailItem, v: Verdict) -> Decided {
    if v.report {
        report(item, v.urgency, v.summary, true, v.tokens)
    } else {
        Decided {
            uid: item.uid,
            outcome: Outcome::ModelNo,
            tokens: v.tokens,
            line: None,
        }
    }
}

fn over_budget(uid: u32) -> Decided {
    Decided {
        uid,
        outcome: Outcome::Budget,
        tokens: 0,
        line: None,
    }
}

fn report(
    item: &MailItem,
    urgency: Urgency,
    summary: Option<String>,
    triaged: bool,
    tokens: u64,
) -> Decided {
    let line = item_line(item, summary.as_deref(), urgency == Urgency::Urgent);
    Decided {
        uid: item.uid,
        outcome: Outcome::Report {
            urgency,
            summary,
            triaged,
        },
        tokens,
        line: Some(line),
    }
}

/// Stores `ds` as the decisions of `place` today, in one store call.
pub(super) async fn store_decisions(
    acct: &Account,
    place: &Place,
    ds: Vec<Decided>,
) -> Result<(), ComponentError> {
    if ds.is_empty() {
        return Ok(());
    }
    let (a, p, now) = (acct.id.clone(), place.clone(), acct.now());
    let day = acct.today();
    acct.ctx
        .store
        .call(move |t| db::decide(t, &a, &p, &day, now, &ds))
        .await
        .map_err(store_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mail::triage::model::TriageModel;
    use futures_util::future::BoxFuture;

    /// Costs 100 tokens a call plus 10 a mail.
    struct Priced;

    impl TriageModel for Priced {
        fn estimate(&self, items: &[MailItem]) -> u64 {
            100 + 10 * items.len() as u64
        }
        fn triage<'a>(&'a self, _items: &'a [MailItem]) -> BoxFuture<'a, Vec<Verdict>> {
            Box::pin(async { Vec::new() })
        }
    }

    #[test]
    fn a_batch_shrinks_to_what_the_budget_has_left() {
        let batch = vec![MailItem::default(); 5];
        assert_eq!(admit(&Priced, &batch, 0, 1_000), 5);
        assert_eq!(admit(&Priced, &batch, 0, 130), 3);
        assert_eq!(admit(&Priced, &batch, 900, 1_000), 0);
        assert_eq!(admit(&Priced, &batch, 880, 1_000), 2);
    }

    #[test]
    fn mail_is_batched_in_order() {
        let items: Vec<MailItem> = (1..=7)
            .map(|uid| MailItem {
                uid,
                ..MailItem::default()
            })
            .collect();
        let q = chunks(items, 3);
        let uids: Vec<Vec<u32>> = q
            .iter()
            .map(|b| b.iter().map(|i| i.uid).collect())
            .collect();
        assert_eq!(uids, vec![vec![1, 2, 3], vec![4, 5, 6], vec![7]]);
    }
}
