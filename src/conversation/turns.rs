//! One chat's turn worker: takes journaled messages in order and runs one agent turn at a time.

use std::sync::Arc;
use std::time::Duration;

use super::body::Body;
use super::burst::{Ask, Next, answer_key};
use super::journal;
use super::message::OutboundKind;
use super::{AccountRuntime, ChatRuntime, Conversation};
use crate::agent::{AgentError, AgentErrorKind, SessionKey, TurnRequest};
use crate::supervisor::{BackoffPolicy, NoteSource, random_jitter};
use crate::words::{Lang, Msg};

/// How many times a message may end the agent (its process died, or it went silent) before it
/// is given up: a message that kills the agent every time must not block its chat for ever.
pub(super) const MAX_ENDINGS: u32 = 3;

/// Runs until the account detaches.
pub(super) async fn run(conv: Arc<Conversation>, rt: Arc<AccountRuntime>, chat: Arc<ChatRuntime>) {
    let cancel = rt.cancel.clone();
    let mut outage: Option<u32> = None;
    // The message the agent last stopped on and how often (in memory: a restart counts afresh).
    let mut endings: Option<(crate::ids::PlatformMsgId, u32)> = None;
    // The call that stores an answer also fetches the next message, saving a round trip per message.
    let mut prefetched: Option<Next> = None;
    // The last turn's horizon: what was journaled after it arrived while it ran (a burst).
    let mut horizon: Option<i64> = None;
    let gate = &chat.turn_gate;
    let _closing = gate.closing();
    loop {
        gate.seen();
        let fresh = prefetched.is_none();
        let next = match prefetched.take() {
            Some(p) => Ok(Some(p)),
            None => {
                let ask = Ask::of(&rt, &chat, &conv.backends.choice(&rt.link.account), horizon);
                conv.store.call_short(move |t| ask.next(t)).await
            }
        };
        let mut pending = match next {
            Ok(Some(p)) => p,
            Ok(None) => {
                // The chat is idle: what comes next starts a turn of its own.
                horizon = None;
                if gate.kicked() {
                    continue;
                }
                gate.park();
                tokio::select! {
                    _ = chat.turn_wake.notified() => { gate.unpark(); continue }
                    _ = cancel.cancelled() => return,
                }
            }
            Err(e) => {
                tracing::error!(account = %rt.link.account, error = %e, "cannot read the journal");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = cancel.cancelled() => return,
                }
            }
        };
        let merge_ms = conv.backends.choice(&rt.link.account).merge_ms;
        if fresh && merge_ms > 0 && !pending.away {
            // A first message after a quiet spell: wait `merge_ms` for the rest of its burst.
            if !wait_for_more(&rt, &chat, &pending, merge_ms).await {
                return;
            }
            let first = Some(pending.pending.rowid);
            let ask = Ask::of(&rt, &chat, &conv.backends.choice(&rt.link.account), first);
            match conv.store.call_short(move |t| ask.next(t)).await {
                Ok(Some(p)) => pending = p,
                // `/stop` dropped what waited.
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(account = %rt.link.account, error = %e, "cannot read the journal");
                    continue;
                }
            }
        }
        horizon = Some(pending.horizon);
        match turn(&conv, &rt, &chat, &pending).await {
            TurnEnd::Done(next) => {
                prefetched = next.map(|n| *n);
                if outage.take().is_some() {
                    rt.link.health.note(NoteSource::Agent, None);
                }
            }
            TurnEnd::Shutdown => return,
            TurnEnd::Unavailable(err) => {
                let kept = Kept {
                    conv: &conv,
                    rt: &rt,
                    chat: &chat,
                    next: &pending,
                };
                if !kept.wait(err, &mut outage, &mut endings).await {
                    return;
                }
            }
        }
    }
}

/// A message kept for a retry because the agent did not answer it.
struct Kept<'a> {
    conv: &'a Arc<Conversation>,
    rt: &'a Arc<AccountRuntime>,
    chat: &'a Arc<ChatRuntime>,
    next: &'a Next,
}

impl Kept<'_> {
    /// Gives the message up when it ended the agent too often; else tells the owner (once per
    /// outage) and waits out the backoff, which `/stop` and `/new` cut short by releasing it.
    /// False when the account is detaching.
    async fn wait(
        &self,
        err: AgentError,
        outage: &mut Option<u32>,
        endings: &mut Option<(crate::ids::PlatformMsgId, u32)>,
    ) -> bool {
        let (conv, rt, chat, next) = (self.conv, self.rt, self.chat, self.next);
        let m = &next.pending.inbound;
        if err.kind == AgentErrorKind::Ended {
            let times = match endings.take() {
                Some((id, n)) if id == m.msg_id => n + 1,
                _ => 1,
            };
            if times >= MAX_ENDINGS {
                give_up(conv, rt, next, &err, times).await;
                // Its cause went with it: the next message starts with a clean slate.
                if outage.take().is_some() {
                    rt.link.health.note(NoteSource::Agent, None);
                }
                return true;
            }
            *endings = Some((m.msg_id.clone(), times));
        }
        let attempt = outage.map_or(0, |a| a + 1);
        if outage.is_none() {
            tell_owner_once(conv, rt, next, &err).await;
        }
        *outage = Some(attempt);
        rt.link.health.note(
            NoteSource::Agent,
            Some(format!("the agent is not answering: {}", err.message)),
        );
        let delay = err.retry_after.unwrap_or_else(|| {
            BackoffPolicy::default().delay(attempt, 0.5 + random_jitter() / 2.0)
        });
        tracing::info!(account = %rt.link.account, delay_ms = delay.as_millis() as u64, "agent unavailable; the message is kept and retried");
        // `/stop` and `/new` find this wait as the chat's running turn and release it.
        let cancel = &rt.cancel;
        let release = cancel.child_token();
        chat.set_running(Some(release.clone()), next.ids());
        chat.turn_gate.wait_out();
        let released = tokio::select! {
            _ = tokio::time::sleep(delay) => false,
            _ = release.cancelled() => true,
        };
        chat.set_running(None, Vec::new());
        if cancel.is_cancelled() {
            return false;
        }
        chat.turn_gate.unpark();
        if released {
            release_kept(conv, rt, next).await;
            *endings = None;
            if outage.take().is_some() {
                rt.link.health.note(NoteSource::Agent, None);
            }
        }
        true
    }
}

/// Waits `merge_ms` for more of the chat's messages; `/stop` cuts the wait short (and drops
/// what waits, this message too: nothing of it has started). False when the account detaches.
async fn wait_for_more(
    rt: &AccountRuntime,
    chat: &ChatRuntime,
    next: &Next,
    merge_ms: u64,
) -> bool {
    let stop = rt.cancel.child_token();
    chat.set_running(Some(stop.clone()), Vec::new());
    tracing::debug!(account = %next.pending.inbound.account, merge_ms, "waiting for the rest of a burst");
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(merge_ms)) => {}
        _ = stop.cancelled() => {}
    }
    chat.set_running(None, Vec::new());
    !rt.cancel.is_cancelled()
}

/// A message older than `[chats] away_minutes`: answered with the note that it was sent while
/// the bridge was away, never by the agent as if it were new (it may ask for what no longer
/// makes sense to do), and marked done.
async fn away(conv: &Arc<Conversation>, rt: &Arc<AccountRuntime>, next: &Next) -> TurnEnd {
    let m = &next.pending.inbound;
    let minutes = conv.backends.choice(&m.account).away_after_ms / 60_000;
    tracing::info!(account = %m.account, minutes, "a message waited past the away bound; answered with the note");
    let text = crate::words::AgentWords::Away { minutes }.text(next.lang);
    if let Err(e) = conv.reply_text(rt, m, "away", &text).await {
        tracing::error!(account = %m.account, error = %e, "cannot queue the away note");
        return TurnEnd::Done(None);
    }
    finish(conv, next).await;
    TurnEnd::Done(None)
}

/// The message ended the agent `times` times: it is answered with a note saying so (the reason
/// only in the owner's chat: it may quote the agent's stderr), counted, and marked done.
async fn give_up(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    next: &Next,
    err: &AgentError,
    times: u32,
) {
    let m = &next.pending.inbound;
    let owner = rt.link.owner.as_ref().is_some_and(|o| o == &m.sender);
    tracing::info!(account = %m.account, times, "a message stopped the agent each time it was tried; it is dropped");
    conv.stats.dropped(&m.account, "agent_ended");
    let text = Msg::AgentEndedDropped {
        times,
        reason: owner.then(|| err.message.clone()),
    }
    .text(next.lang);
    if let Err(e) = conv.reply_text(rt, m, "dropped", &text).await {
        tracing::error!(account = %m.account, error = %e, "cannot queue the note of a dropped message");
    }
    finish(conv, next).await;
}

/// `/stop` or `/new` released a message kept for a retry: it is counted and marked done (the
/// command's own answer tells the owner).
async fn release_kept(conv: &Arc<Conversation>, rt: &Arc<AccountRuntime>, next: &Next) {
    let m = &next.pending.inbound;
    tracing::info!(account = %rt.link.account, "the owner released a message kept for a retry");
    conv.stats.dropped(&m.account, "stopped_by_owner");
    finish(conv, next).await;
}

/// Marks every message of `next` done without an answer of its own.
pub(super) async fn finish(conv: &Arc<Conversation>, next: &Next) {
    let (a, ids) = (next.pending.inbound.account.clone(), next.ids());
    let done = conv
        .store
        .call(move |t| ids.iter().try_for_each(|id| journal::finish(t, &a, id)))
        .await;
    if let Err(e) = done {
        tracing::error!(account = %next.pending.inbound.account, error = %e, "cannot mark a message done");
    }
}

/// How one turn ended.
enum TurnEnd {
    /// Answered (or failed for good and told so): the message is done; carries the chat's next one.
    Done(Option<Box<Next>>),
    /// The account is detaching: the message stays journaled for the next start.
    Shutdown,
    /// The agent could not be reached, or stopped while answering (`Ended`): keep the message
    /// and try again later.
    Unavailable(AgentError),
}

async fn turn(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    chat: &Arc<ChatRuntime>,
    next: &Next,
) -> TurnEnd {
    let (p, lang) = (&next.pending, next.lang);
    let m = &p.inbound;
    if next.away {
        return away(conv, rt, next).await;
    }
    let turn_cancel = rt.cancel.child_token();
    chat.set_running(Some(turn_cancel.clone()), next.ids());
    // The agent of this moment answers the whole turn, even if a reload swaps it meanwhile.
    let (_, backend) = super::choice::answering(conv, rt, m, next.chosen.as_deref());
    let max = backend.monitor.info().max_message_bytes;
    let cut = super::cap::cut(&m.text, max);
    if cut.is_some() {
        tracing::info!(account = %m.account, bytes = m.text.len(), max, "a message is longer than the agent is handed; cut");
    }
    let media = super::media_in::prepare(conv, rt, p, lang).await;
    let key = answer_key(m);
    let (events, streamed) = crate::agent::TurnEvents::channel();
    // Streaming: what an earlier run of this turn already queued, and the turn's live view.
    let live = super::stream::Live::new(
        conv,
        rt,
        chat,
        m,
        key.clone(),
        lang,
        // Notes before the answer (a cut message, media not passed on) come first: no streaming.
        cut.is_none() && !media.has_notes(),
        next.committed,
    );
    let req = request(
        conv,
        rt,
        next,
        media.prompt(cut.unwrap_or(&m.text)),
        &media,
        events,
    );
    let started = std::time::Instant::now();
    let turn = backend.agent.turn(req, turn_cancel.clone());
    let ((result, streamed), typing) = super::typing::beside(rt, m, live.run(streamed, turn)).await;
    crate::telemetry::turn(&m.account.to_string(), started.elapsed());
    chat.set_running(None, Vec::new());
    if rt.cancel.is_cancelled() {
        // The message is asked again at the next start; what the agent keeps of it goes then.
        if let Ok(out) = &result {
            out.keep.forget();
        }
        typing.clear().await;
        return TurnEnd::Shutdown;
    }
    backend.monitor.record(result.as_ref().map(|_| ()));
    let said = match said(conv, m, lang, result) {
        Ok(said) => said,
        Err(e) => {
            typing.clear().await;
            return TurnEnd::Unavailable(e);
        }
    };
    let cut_from = cut.map(|_| (m.text.len(), max));
    let answer = compose(rt, key, lang, cut_from, &media, said, streamed);
    let spoken = answer.spoken.clone();
    let end = store_answer(conv, rt, chat, next, answer, typing.pending()).await;
    // Cleared beside the send; the worker takes its next message after.
    typing.clear().await;
    // The text is queued (and going out): now its voice, when the chat wants one.
    super::voice_out::after_answer(conv, rt, m, &spoken).await;
    end
}

/// The answer a turn stores: what the agent said, after the notes (a message cut from
/// `cut_from` = (its length, the most handed on); media not passed on), without the files it
/// sends, as pieces of the platform's size less what streaming already queued.
fn compose(
    rt: &AccountRuntime,
    key: String,
    lang: Lang,
    cut_from: Option<(usize, usize)>,
    media: &super::media::Prepared,
    said: Said,
    streamed: super::stream::Streamed,
) -> Answer {
    let said_text = said.text.clone();
    let mut text = said.text;
    if let Some((len, max)) = cut_from {
        let note = super::cap::note(len, max, lang);
        text = if text.is_empty() {
            note
        } else {
            format!("{note}\n\n{text}")
        };
    }
    text = media.with_notes(text);
    let files = super::media::outgoing(rt, &mut text, &said.files, lang);
    // Only what streaming did not already queue (all of it when nothing streamed).
    let max = rt.link.sender.limits().max_chars;
    let (first, mut pieces) = super::stream::rest(streamed.queued, &text, max);
    // A message shown while the turn ran is finished by the first piece; a turn that ended
    // with nothing to say (cancelled) finishes it with what it shows, so it is never left
    // half-written.
    if pieces.is_empty()
        && let Some(shown) = streamed.shown
    {
        pieces = super::chunk::split(&shown, max);
    }
    Answer {
        key,
        first,
        pieces,
        files,
        keep: said.keep,
        spoken: said_text,
    }
}

/// What the agent is asked for message `next`: its prompt (the text, cut, with the media
/// lines), its tools as the policy and the approvals setting grant them, and its events.
fn request(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    next: &Next,
    prompt: String,
    media: &super::media::Prepared,
    events: crate::agent::TurnEvents,
) -> TurnRequest {
    let (p, m) = (&next.pending, &next.pending.inbound);
    let asks = rt.link.approvals.asks();
    TurnRequest {
        session: SessionKey {
            account: m.account.clone(),
            chat: m.chat.clone(),
        },
        prompt,
        no_tools: !p.tools,
        auto_approve: p.tools && !asks,
        approver: if p.tools && asks {
            conv.approver()
        } else {
            None
        },
        workspace: rt.link.workspace.clone(),
        channel_label: rt.link.channel_label,
        language: next.lang,
        attachments: media.attachments.clone(),
        events,
        owner_tools: if p.tools { conv.owner_tools() } else { None },
    }
}

/// What a turn has to say: its text, the files it named, and what the agent keeps of it.
struct Said {
    text: String,
    files: Vec<std::path::PathBuf>,
    keep: Option<crate::agent::KeepWrite>,
}

/// What the agent's result says in the chat; an outage (the agent unavailable, refusing the
/// key, or ended while answering) is the error: the message stays for the retry.
fn said(
    conv: &Conversation,
    m: &super::message::Inbound,
    lang: crate::words::Lang,
    result: Result<crate::agent::TurnOutput, crate::agent::AgentError>,
) -> Result<Said, crate::agent::AgentError> {
    let mut said = Said {
        text: String::new(),
        files: Vec::new(),
        keep: None,
    };
    match result {
        Ok(out) => {
            conv.stats.answered(&m.account);
            // What the agent keeps of the turn commits with its answer (or not at all).
            said.keep = out.keep.take();
            said.files = out.files;
            said.text = out.text;
        }
        Err(e) if e.kind == AgentErrorKind::Cancelled => {}
        Err(e)
            if matches!(
                e.kind,
                AgentErrorKind::Unavailable | AgentErrorKind::Auth | AgentErrorKind::Ended
            ) =>
        {
            return Err(e);
        }
        Err(e) => {
            said.text = Msg::AgentFailed { reason: e.message }
                .text(lang)
                .into_owned();
        }
    }
    Ok(said)
}

/// An answer ready to store: its pieces from index `first` under `key`, then its files.
struct Answer {
    key: String,
    first: usize,
    pieces: Vec<String>,
    files: Vec<(String, Body)>,
    keep: Option<crate::agent::KeepWrite>,
    /// What the agent said, before notes and files: what a voice answer reads aloud.
    spoken: String,
}

/// Stores the answer, what the agent keeps of the turn and the message's end in one
/// transaction that also reads the chat's next message and the answer's first outbox item,
/// which goes straight to the parked sender.
async fn store_answer(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    chat: &Arc<ChatRuntime>,
    next: &Next,
    answer: Answer,
    typing_pending: bool,
) -> TurnEnd {
    let m = &next.pending.inbound;
    let (a, ids, reply, chat_id, ask) = (
        m.account.clone(),
        next.ids(),
        m.reply.clone(),
        m.chat.clone(),
        Ask::of(
            rt,
            chat,
            &conv.backends.choice(&m.account),
            Some(next.horizon),
        ),
    );
    // Stored first: the typing sign is cleared after, beside the send.
    let store = conv.store.call_short(move |t| {
        let Answer {
            key,
            first,
            pieces,
            files,
            keep,
            ..
        } = answer;
        let texts = pieces.iter().map(|p| (p, &Body::Text));
        let items: Vec<journal::NewOutbound<'_>> = texts
            .chain(files.iter().map(|(t, b)| (t, b)))
            .enumerate()
            .map(|(i, (piece, body))| journal::NewOutbound {
                chat: &chat_id,
                text: piece,
                body,
                key: crate::ids::OutboxKey::piece(&key, first + i).into(),
                reply: &reply,
                kind: OutboundKind::Reply,
            })
            .collect();
        let queued = !items.is_empty();
        if let Some(keep) = keep {
            crate::agent::keep_made_in(t, keep)?;
        }
        journal::enqueue(t, &a, &items)?;
        // Every message of a burst is answered by this one answer, in this one commit.
        for id in &ids {
            journal::finish(t, &a, id)?;
        }
        // Read here, the sender need not read it again (`ChatRuntime::hand_send`).
        let first = match queued {
            true => journal::next_outbound(t, &a, &chat_id)?,
            false => None,
        };
        Ok((ask.next(t)?, first))
    });
    match store.await {
        Ok((next, first)) => {
            let handed = first.is_some();
            chat.hand_send(first);
            if handed && typing_pending {
                // The sender, just woken on this thread, goes first: clearing the typing sign
                // sends a request of its own, and polled here it left ahead of the answer
                // (`benches/round_trip.rs` shows the answer's way to the platform).
                tokio::task::yield_now().await;
            }
            TurnEnd::Done(next.map(Box::new))
        }
        Err(e) => {
            tracing::error!(account = %m.account, error = %e, "cannot store an answer; it will be produced again");
            TurnEnd::Done(None)
        }
    }
}

/// Tells the owner, once per outage, that the agent is down and the message is kept.
async fn tell_owner_once(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    next: &Next,
    err: &AgentError,
) {
    let m = &next.pending.inbound;
    let owner_chat = rt.link.owner.as_ref().is_some_and(|o| o == &m.sender);
    if !owner_chat {
        return;
    }
    let lang = next.lang;
    let text = Msg::AgentDown {
        reason: err.message.clone(),
    }
    .text(lang);
    if let Err(e) = conv.reply_text(rt, m, "unavailable", &text).await {
        tracing::error!(account = %m.account, error = %e, "cannot tell the owner the agent is down");
    }
}
