//! One chat's sender: drains its outbox in order, paced, within the platform's rules.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::journal;
use super::link::{SendError, Sent};
use super::message::{Outbound, OutboundKind};
use super::{AccountRuntime, ChatRuntime, Conversation};
use crate::failure::{Class, general};
use crate::supervisor::{BackoffPolicy, NoteSource, random_jitter};

/// How long a closed send window is left alone before trying again without news from the peer.
const WINDOW_RECHECK: Duration = Duration::from_secs(600);
/// How long a fatal send error waits (the account's own loop fails and restarts meanwhile).
const FATAL_PAUSE: Duration = Duration::from_secs(30);

/// Runs until the account detaches.
pub(super) async fn run(conv: Arc<Conversation>, rt: Arc<AccountRuntime>, chat: Arc<ChatRuntime>) {
    let cancel = rt.cancel.clone();
    let limits = rt.link.sender.limits();
    let mut last_sent: Option<Instant> = None;
    let mut attempt: u32 = 0;
    // Whether this chat's sender put a note on the account's health, cleared by its next success.
    let mut noted = false;
    // Marking an item sent also takes the next one, saving a round trip per message.
    let mut prefetched: Option<super::Outbound> = None;
    // The highest outbox id this sender took: an item handed by an answer is taken only if newer.
    let mut taken: i64 = 0;
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
        let next = match prefetched.take() {
            Some(m) => Ok(Some(m)),
            None => {
                let (a, c) = (rt.link.account.clone(), chat.chat.clone());
                conv.store
                    .call_short(move |t| journal::next_outbound(t, &a, &c))
                    .await
            }
        };
        let msg = match next {
            Ok(Some(m)) => {
                taken = taken.max(m.id);
                m
            }
            Ok(None) => {
                if gate.kicked() {
                    continue;
                }
                gate.park();
                tokio::select! {
                    _ = chat.send_wake.notified() => {
                        gate.unpark();
                        prefetched = chat.take_handed(taken);
                        continue
                    }
                    _ = cancel.cancelled() => return,
                }
            }
            Err(e) => {
                tracing::error!(account = %rt.link.account, error = %e, "cannot read the outbox");
                if pause(Duration::from_secs(1), &cancel).await {
                    return;
                }
                continue;
            }
        };
        // Pace: queue, never drop.
        if let Some(t) = last_sent
            && pause_until(t + limits.min_interval, &cancel).await
        {
            return;
        }
        let id = msg.id;
        // Listen for the peer before sending: a message arriving during the send reopens the window.
        let peer_wrote = chat.window_wake.notified();
        tokio::pin!(peer_wrote);
        peer_wrote.as_mut().enable();
        // Counted until the outcome is stored: a stop waits for it (see `senders`).
        let sending = conv.senders.sending();
        let result = deliver(&rt, &msg).await;
        let delay = match result {
            Ok(sent) => {
                conv.stats.sent(&rt.link.account);
                last_sent = Some(Instant::now());
                attempt = 0;
                if noted {
                    noted = false;
                    rt.link.health.note(NoteSource::Sends, None);
                }
                let (a, c, s) = (rt.link.account.clone(), chat.chat.clone(), sent.clone());
                let settled = conv
                    .store
                    .call_short(move |t| {
                        journal::mark_sent(t, id, &s)?;
                        journal::next_outbound(t, &a, &c)
                    })
                    .await;
                match settled {
                    Ok(next) => {
                        prefetched = next;
                        if let Some(obs) = conv.delivery_observer() {
                            obs.delivered(&rt.link.account, &msg.idempotency_key, &sent)
                                .await;
                        }
                    }
                    Err(e) => {
                        tracing::error!(account = %rt.link.account, error = %e, "cannot mark a message sent")
                    }
                }
                continue;
            }
            Err(SendError {
                class: Class::Rejected,
                message: e,
                ..
            }) if msg.kind == OutboundKind::Update => {
                // The old message stays as it was; what it should now say goes out as a new one.
                conv.stats.send_failed(&rt.link.account, "update_refused");
                tracing::info!(account = %rt.link.account, error = %e, "cannot update a sent message; sending a new one");
                if let Err(e) = conv
                    .store
                    .call(move |t| journal::update_as_new(t, id, &e))
                    .await
                {
                    tracing::error!(account = %rt.link.account, error = %e, "cannot turn an update into a new message");
                    Duration::from_secs(1)
                } else {
                    continue;
                }
            }
            Err(SendError {
                class: Class::Transient,
                message: e,
                ..
            }) => {
                tracing::info!(account = %rt.link.account, error = %e, "send failed; retrying");
                let d = BackoffPolicy::default().delay(attempt, 0.5 + random_jitter() / 2.0);
                attempt = attempt.saturating_add(1);
                // The note first: whoever sees the failure counted finds it explained.
                note_failing(&conv, &rt, &chat, &e, d).await;
                noted = true;
                conv.stats.send_failed(&rt.link.account, "transient");
                d
            }
            Err(SendError {
                class: Class::SlowDown(d),
                message: e,
                ..
            }) => {
                // Honour the platform's delay exactly; retrying sooner only extends the penalty.
                tracing::info!(account = %rt.link.account, error = %e, delay_ms = d.as_millis() as u64, "platform asked to slow down");
                note_failing(&conv, &rt, &chat, &e, d).await;
                noted = true;
                conv.stats.send_failed(&rt.link.account, "slow_down");
                d
            }
            Err(SendError {
                class: Class::WindowClosed,
                message: reason,
                ..
            }) => {
                let n = waiting(&conv, &rt, &chat).await;
                let plural = if n == 1 {
                    "message waits"
                } else {
                    "messages wait"
                };
                rt.link
                    .health
                    .note(NoteSource::Sends, Some(format!("{n} {plural}: {reason}")));
                noted = true;
                conv.stats.send_failed(&rt.link.account, "window_closed");
                drop(sending);
                gate.wait_for_peer();
                tokio::select! {
                    _ = peer_wrote => {}
                    _ = tokio::time::sleep(WINDOW_RECHECK) => {}
                    _ = cancel.cancelled() => return,
                }
                gate.unpark();
                continue;
            }
            Err(SendError {
                class: Class::Rejected,
                message: e,
                ..
            }) => {
                conv.stats.send_failed(&rt.link.account, "rejected");
                tracing::warn!(account = %rt.link.account, error = %e, "the platform refused a message for good");
                if let Err(e) = conv
                    .store
                    .call(move |t| journal::mark_failed(t, id, &e))
                    .await
                {
                    tracing::error!(account = %rt.link.account, error = %e, "cannot mark a message failed");
                }
                continue;
            }
            Err(
                failure @ SendError {
                    class: Class::Fatal,
                    ..
                },
            ) => {
                // What failed and what to do about it: the note is all a person sees of it.
                let e = failure.to_string();
                conv.stats.send_failed(&rt.link.account, "fatal");
                tracing::warn!(account = %rt.link.account, error = %e, "the account cannot send");
                note_failing(&conv, &rt, &chat, &e, FATAL_PAUSE).await;
                noted = true;
                FATAL_PAUSE
            }
        };
        // Transient failures, slow-downs and a failing account wait out the platform.
        drop(sending);
        gate.wait_out();
        if pause(delay, &cancel).await {
            return;
        }
        gate.unpark();
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
