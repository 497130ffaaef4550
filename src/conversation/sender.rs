//! One chat's sender: drains its outbox in order, paced, within the platform's rules.
//!
//! Each item goes through the same steps: [`next`] (the prefetched item, or the outbox, or a
//! park until something is queued), the pace ([`pause_until`] the platform's interval),
//! [`deliver`], then [`settle`]: a success is marked sent (taking the next item in the same
//! call); a failure becomes a [`Reaction`] from a pure table ([`react`]: the failure's class
//! and the attempt decide), which [`settle`] carries out.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::deliveries;
use super::journal;
use super::link::{SendError, Sent};
use super::message::{Outbound, OutboundKind};
use super::{AccountRuntime, ChatRuntime, Conversation};
use crate::failure::{Class, general};
use crate::protocol::WaitWhy;
use crate::supervisor::{BackoffPolicy, NoteSource, random_jitter};

/// How long a closed send window is left alone before trying again without news from the peer.
const WINDOW_RECHECK: Duration = Duration::from_secs(600);
/// How long a fatal send error waits (the account's own loop fails and restarts meanwhile).
const FATAL_PAUSE: Duration = Duration::from_secs(30);

/// What a failed send leads to, decided from the failure and the attempt alone.
#[derive(Debug, Clone, PartialEq)]
enum Reaction {
    /// An update the platform refused: what it should now say goes out as a new message.
    AsNew,
    /// Try the same item again after this long (a transient failure's backoff, a slow-down's
    /// exact delay, a failing account's pause), with the sends note saying so.
    Retry(Duration),
    /// Wait until the peer writes (or [`WINDOW_RECHECK`]): the platform's window is closed.
    WaitForPeer,
    /// Refused for good: marked failed, the chat goes on.
    GiveUp,
}

/// The reaction table: `kind` of the item, the failure's `class`, how many transient failures
/// came before (`attempt`), and the jitter in [0, 1) to spread retries.
fn react(kind: OutboundKind, class: &Class, attempt: u32, jitter: f64) -> Reaction {
    match class {
        Class::Rejected if kind == OutboundKind::Update => Reaction::AsNew,
        Class::Rejected => Reaction::GiveUp,
        Class::Transient => {
            Reaction::Retry(BackoffPolicy::default().delay(attempt, 0.5 + jitter / 2.0))
        }
        // Honour the platform's delay exactly; retrying sooner only extends the penalty.
        Class::SlowDown(d) => Reaction::Retry(*d),
        Class::WindowClosed => Reaction::WaitForPeer,
        Class::Fatal => Reaction::Retry(FATAL_PAUSE),
    }
}

/// The sender's own state across items.
#[derive(Default)]
struct Progress {
    /// When the last send succeeded (for the pace).
    last_sent: Option<Instant>,
    /// Transient failures in a row.
    attempt: u32,
    /// Whether this chat's sender put a note on the account's health, cleared by its next success.
    noted: bool,
    /// Marking an item sent also takes the next one, saving a round trip per message.
    prefetched: Option<Outbound>,
    /// The highest outbox id this sender took: an item handed by an answer is taken only if newer.
    taken: i64,
    /// Whether the chat's pending items may carry a reason to wait, to forget at the next
    /// success (true at the start: an earlier run may have left one).
    waits_marked: bool,
}

/// What the loop does after a step.
enum Step {
    /// Go on with the next item.
    Next,
    /// The sender is cancelled.
    Stop,
}

/// Runs until the account detaches.
pub(super) async fn run(conv: Arc<Conversation>, rt: Arc<AccountRuntime>, chat: Arc<ChatRuntime>) {
    let cancel = rt.cancel.clone();
    let limits = rt.link.sender.limits();
    let mut p = Progress {
        waits_marked: true,
        ..Progress::default()
    };
    let gate = &chat.send_gate;
    let _closing = gate.closing();
    // The account's last run may still be in a send on this chat (see `senders`).
    let _lane = tokio::select! {
        lane = conv.senders.lane(&rt.link.account, &chat.chat) => lane,
        _ = cancel.cancelled() => return,
    };
    loop {
        // Between sends is where a cancelled sender ends (every wait below also ends on it).
        if cancel.is_cancelled() {
            return;
        }
        gate.seen();
        let msg = match next(&conv, &rt, &chat, &mut p).await {
            Some(Ok(m)) => m,
            Some(Err(Step::Next)) => continue,
            Some(Err(Step::Stop)) | None => return,
        };
        // Pace: queue, never drop.
        if let Some(t) = p.last_sent
            && pause_until(t + limits.min_interval, &cancel).await
        {
            return;
        }
        // Listen for the peer before sending: a message arriving during the send reopens the window.
        let peer_wrote = chat.window_wake.notified();
        tokio::pin!(peer_wrote);
        peer_wrote.as_mut().enable();
        // Counted until the outcome is stored: a stop waits for it (see `senders`).
        let sending = conv.senders.sending();
        let result = deliver(&rt, &msg).await;
        let wait = match result {
            Ok(sent) => {
                succeeded(&conv, &rt, &chat, &mut p, &msg, sent).await;
                continue;
            }
            Err(e) => match settle(&conv, &rt, &chat, &mut p, &msg, e).await {
                None => continue,
                Some(wait) => wait,
            },
        };
        drop(sending);
        let step = match wait {
            Wait::Peer => {
                gate.wait_for_peer();
                tokio::select! {
                    _ = peer_wrote => Step::Next,
                    _ = tokio::time::sleep(WINDOW_RECHECK) => Step::Next,
                    _ = cancel.cancelled() => Step::Stop,
                }
            }
            // Transient failures, slow-downs and a failing account wait out the platform.
            Wait::For(d) => {
                gate.wait_out();
                if pause(d, &cancel).await {
                    Step::Stop
                } else {
                    Step::Next
                }
            }
        };
        if let Step::Stop = step {
            return;
        }
        gate.unpark();
    }
}

/// The next item to send: the one prefetched or handed by an answer, else the oldest pending
/// one; parks while there is none. `Err(Step::Next)`: look again; `None` or `Err(Step::Stop)`:
/// the sender is cancelled.
async fn next(
    conv: &Conversation,
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    p: &mut Progress,
) -> Option<Result<Outbound, Step>> {
    let read = match p.prefetched.take() {
        Some(m) => Ok(Some(m)),
        None => {
            let (a, c) = (rt.link.account.clone(), chat.chat.clone());
            conv.store
                .call_short(move |t| journal::next_outbound(t, &a, &c))
                .await
        }
    };
    let gate = &chat.send_gate;
    match read {
        Ok(Some(m)) => {
            p.taken = p.taken.max(m.id);
            Some(Ok(m))
        }
        Ok(None) => {
            if gate.kicked() {
                return Some(Err(Step::Next));
            }
            gate.park();
            tokio::select! {
                _ = chat.send_wake.notified() => {
                    gate.unpark();
                    p.prefetched = chat.take_handed(p.taken);
                    Some(Err(Step::Next))
                }
                _ = rt.cancel.cancelled() => None,
            }
        }
        Err(e) => {
            tracing::error!(account = %rt.link.account, error = %e, "cannot read the outbox");
            if pause(Duration::from_secs(1), &rt.cancel).await {
                return None;
            }
            Some(Err(Step::Next))
        }
    }
}

/// A send the platform took: counted, the note cleared, marked sent with the next item read in
/// the same call, and the delivery observer told.
async fn succeeded(
    conv: &Conversation,
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    p: &mut Progress,
    msg: &Outbound,
    sent: Sent,
) {
    conv.stats.sent(&rt.link.account);
    p.last_sent = Some(Instant::now());
    p.attempt = 0;
    if p.noted {
        p.noted = false;
        rt.link.health.note(NoteSource::Sends, None);
    }
    let (a, c, s, id) = (
        rt.link.account.clone(),
        chat.chat.clone(),
        sent.clone(),
        msg.id,
    );
    // Only a change of the proactive counts recounts them (answers are not counted).
    let (clear, board) = (p.waits_marked, conv.outbox.board.clone());
    let recount = clear || msg.kind == OutboundKind::Proactive;
    let settled = conv
        .store
        .call_short(move |t| {
            journal::mark_sent(t, id, &s)?;
            if clear {
                deliveries::clear_waiting(t, &a, &c)?;
            }
            let count = match recount {
                true => Some((board.stamp(), deliveries::count(t)?)),
                false => None,
            };
            Ok((journal::next_outbound(t, &a, &c)?, count))
        })
        .await;
    match settled {
        Ok((next, count)) => {
            p.waits_marked = false;
            if let Some((stamp, count)) = count {
                conv.outbox.board.publish(stamp, count);
            }
            p.prefetched = next;
            if let Some(obs) = conv.delivery_observer() {
                obs.delivered(&rt.link.account, &msg.idempotency_key, &sent)
                    .await;
            }
        }
        Err(e) => {
            tracing::error!(account = %rt.link.account, error = %e, "cannot mark a message sent")
        }
    }
}

/// How the sender waits before its next try.
enum Wait {
    /// Until the peer writes (a closed window).
    Peer,
    /// This long.
    For(Duration),
}

/// Carries out the reaction to a failed send; `None`: go on at once with the next item.
async fn settle(
    conv: &Conversation,
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    p: &mut Progress,
    msg: &Outbound,
    failure: SendError,
) -> Option<Wait> {
    let account = &rt.link.account;
    let id = msg.id;
    match react(msg.kind, &failure.class, p.attempt, random_jitter()) {
        Reaction::AsNew => {
            // The old message stays as it was; what it should now say goes out as a new one.
            conv.stats.send_failed(account, "update_refused");
            let e = failure.message;
            tracing::info!(account = %account, error = %e, "cannot update a sent message; sending a new one");
            let turned = conv
                .store
                .call(move |t| journal::update_as_new(t, id, &e))
                .await;
            if let Err(e) = turned {
                tracing::error!(account = %account, error = %e, "cannot turn an update into a new message");
                return Some(Wait::For(Duration::from_secs(1)));
            }
            None
        }
        Reaction::GiveUp => {
            conv.stats.send_failed(account, "rejected");
            let e = failure.message;
            tracing::warn!(account = %account, error = %e, "the platform refused a message for good");
            if let Err(e) = conv
                .store
                .call(move |t| journal::mark_failed(t, id, &e))
                .await
            {
                tracing::error!(account = %account, error = %e, "cannot mark a message failed");
            }
            if msg.kind == OutboundKind::Proactive {
                recount(conv).await;
            }
            None
        }
        Reaction::WaitForPeer => {
            mark_waits(conv, rt, chat, p, WaitWhy::SendWindow).await;
            let n = waiting(conv, rt, chat).await;
            let plural = if n == 1 {
                "message waits"
            } else {
                "messages wait"
            };
            let reason = &failure.message;
            rt.link
                .health
                .note(NoteSource::Sends, Some(format!("{n} {plural}: {reason}")));
            p.noted = true;
            conv.stats.send_failed(account, "window_closed");
            Some(Wait::Peer)
        }
        Reaction::Retry(d) => {
            let why = match failure.class {
                Class::SlowDown(_) => WaitWhy::Throttle,
                Class::Fatal => WaitWhy::AccountDown,
                _ => WaitWhy::SendsFailing,
            };
            mark_waits(conv, rt, chat, p, why).await;
            retry_noted(conv, rt, chat, p, &failure, d).await;
            Some(Wait::For(d))
        }
    }
}

/// Logs and counts a failure the sender retries, and says in the sends note what failed, how
/// many wait and when the next try is (the note first: whoever sees the failure counted finds
/// it explained).
async fn retry_noted(
    conv: &Conversation,
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    p: &mut Progress,
    failure: &SendError,
    d: Duration,
) {
    let account = &rt.link.account;
    let (counter, shown) = match failure.class {
        Class::SlowDown(_) => {
            tracing::info!(account = %account, error = %failure.message, delay_ms = d.as_millis() as u64, "platform asked to slow down");
            ("slow_down", failure.message.clone())
        }
        Class::Fatal => {
            // What failed and what to do about it: the note is all a person sees of it.
            let e = failure.to_string();
            tracing::warn!(account = %account, error = %e, "the account cannot send");
            ("fatal", e)
        }
        _ => {
            tracing::info!(account = %account, error = %failure.message, "send failed; retrying");
            p.attempt = p.attempt.saturating_add(1);
            ("transient", failure.message.clone())
        }
    };
    note_failing(conv, rt, chat, &shown, d).await;
    p.noted = true;
    conv.stats.send_failed(account, counter);
}

/// Writes why the chat's items wait and publishes the new count (`status` shows it).
async fn mark_waits(
    conv: &Conversation,
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    p: &mut Progress,
    why: WaitWhy,
) {
    let (a, c, board) = (
        rt.link.account.clone(),
        chat.chat.clone(),
        conv.outbox.board.clone(),
    );
    let marked = conv
        .store
        .call(move |t| {
            deliveries::mark_waiting(t, &a, &c, why)?;
            Ok((board.stamp(), deliveries::count(t)?))
        })
        .await;
    match marked {
        Ok((stamp, count)) => {
            p.waits_marked = true;
            conv.outbox.board.publish(stamp, count);
        }
        Err(e) => {
            tracing::error!(account = %rt.link.account, error = %e, "cannot store why messages wait")
        }
    }
}

/// Recounts the proactive items after a change of one's state.
async fn recount(conv: &Conversation) {
    if let Err(e) = conv.outbox.refresh_deliveries().await {
        tracing::error!(error = %e, "cannot count the outbox's delivery states");
    }
}

/// How many items of this chat wait in the outbox (at least the one being sent).
async fn waiting(conv: &Conversation, rt: &AccountRuntime, chat: &ChatRuntime) -> u64 {
    let (a, c) = (rt.link.account.clone(), chat.chat.clone());
    conv.store
        .call(move |t| journal::pending_count(t, &a, &c))
        .await
        .unwrap_or(1)
        .max(1)
}

/// Shows send-path trouble in the account's health while it lasts:
/// "sends failing: HTTP 500; 3 waiting; retry in 8 s" (cleared by the next success).
async fn note_failing(
    conv: &Conversation,
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    error: &str,
    retry_in: Duration,
) {
    let n = waiting(conv, rt, chat).await;
    let secs = retry_in.as_secs_f64().ceil().max(1.0) as u64;
    rt.link.health.note(
        NoteSource::Sends,
        Some(format!(
            "sends failing: {error}; {n} waiting; retry in {secs} s"
        )),
    );
}

/// [`deliver_once`], timed for the metrics page.
async fn deliver(rt: &AccountRuntime, msg: &Outbound) -> Result<Sent, SendError> {
    let started = std::time::Instant::now();
    let out = deliver_once(rt, msg).await;
    crate::telemetry::send(&rt.link.account.to_string(), started.elapsed());
    out
}

/// Sends an item, or for an update replaces its target; an update with nothing to replace is
/// refused like one the platform refused, so it goes out as a new message.
async fn deliver_once(rt: &AccountRuntime, msg: &Outbound) -> Result<Sent, SendError> {
    if msg.kind != OutboundKind::Update {
        return rt.link.sender.send(msg).await;
    }
    let Some(target) = &msg.target else {
        return Err(SendError::rejected(
            general::UPDATE_TARGET_MISSING,
            "the message to update was not sent or has no platform id",
        ));
    };
    rt.link.sender.update(target, msg).await?;
    Ok(Sent {
        msg_id: Some(target.clone()),
        chat: None,
    })
}

/// Sleeps `d`; true when cancelled first.
async fn pause(d: Duration, cancel: &tokio_util::sync::CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = cancel.cancelled() => true,
    }
}

/// Sleeps until `t`; true when cancelled first.
async fn pause_until(t: Instant, cancel: &tokio_util::sync::CancellationToken) -> bool {
    // A time already past is no pause: a timer set for it would still wait for the timer
    // wheel's next millisecond tick, half a millisecond on every send on average.
    if t <= Instant::now() {
        return cancel.is_cancelled();
    }
    tokio::select! {
        _ = tokio::time::sleep_until(t) => false,
        _ = cancel.cancelled() => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_class_has_one_reaction() {
        let (reply, update) = (OutboundKind::Reply, OutboundKind::Update);
        let d = Duration::from_secs(7);
        assert_eq!(react(update, &Class::Rejected, 0, 0.0), Reaction::AsNew);
        assert_eq!(react(reply, &Class::Rejected, 0, 0.0), Reaction::GiveUp);
        assert_eq!(
            react(reply, &Class::WindowClosed, 3, 0.5),
            Reaction::WaitForPeer
        );
        assert_eq!(
            react(reply, &Class::SlowDown(d), 9, 0.9),
            Reaction::Retry(d)
        );
        assert_eq!(
            react(update, &Class::Fatal, 0, 0.0),
            Reaction::Retry(FATAL_PAUSE)
        );
        // Transient failures back off with the attempt, jittered within [half, whole].
        let delay = |attempt, jitter| match react(reply, &Class::Transient, attempt, jitter) {
            Reaction::Retry(d) => d,
            other => panic!("{other:?}"),
        };
        let full = BackoffPolicy::default().delay(4, 1.0);
        assert_eq!(delay(4, 1.0), full);
        assert_eq!(delay(4, 0.0), BackoffPolicy::default().delay(4, 0.5));
        assert!(delay(0, 1.0) < delay(4, 1.0));
    }
}
