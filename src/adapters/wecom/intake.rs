//! One run's intake: the long connection's callbacks, each journaled before anything else is
//! done with it (WeCom has no acknowledgement and no redelivery, spec §2.1: a callback not
//! journaled is lost, so nothing may come first), deduplicated on `msgid` by the journal; the
//! owner's pairing and card clicks; health from the link's own evidence (every frame, pongs
//! included); and the link's final stops (superseded, refused credentials) ending the run.

use std::sync::Arc;

use scv_wecom::{Connection, Delivery, LinkState, LinkStatus};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::buttons::{self, ClickContext, SeenClicks};
use super::failure;
use super::handles::Handles;
use super::inbound::{Taken, take};
use super::login::{BOT_ID_FIELD, SECRET_FIELD};
use super::sender::WecomSender;
use crate::conversation::{Attachment, Inbound};
use crate::ids::{OutboxKey, PlatformMsgId};
use crate::port::pairing::Pairing;
use crate::port::{AccountPort, LinkParts, StorePause};
use crate::secrets::Credentials;
use crate::supervisor::{ComponentError, HealthHandle, NoteSource, unix_now};

/// Callbacks the intake reads ahead of the journal (the crate keeps more in memory, in order).
const QUEUE: usize = 256;
/// Callbacks journaled in one commit at most.
const BATCH: usize = 64;

/// What `run_inner` found out before the link.
pub(super) struct Setup {
    pub port: AccountPort,
    pub conn: Connection,
    pub owner: Option<String>,
    pub pairing: Option<Pairing>,
    pub credentials: Credentials,
    pub sender: Arc<WecomSender>,
    pub handles: Arc<Handles>,
    pub held: crate::port::held::HeldSends,
    pub health: HealthHandle,
}

/// One run of the account, attached to the pipeline.
pub(super) struct Run {
    s: Setup,
    /// Dropping it (the run ending) stops the account's chat workers.
    attachment: Attachment,
    pause: StorePause,
    clicks: SeenClicks,
    note: Option<String>,
}

impl Run {
    /// Attaches the account and says who the bot and the owner are.
    pub fn start(s: Setup) -> Run {
        let attachment = s.port.attach(link(&s, s.owner.clone()));
        s.health
            .set_ids(Some(s.conn.bot_id().to_string()), s.owner.clone());
        let mut run = Run {
            attachment,
            pause: StorePause::new(&s.health),
            s,
            clicks: SeenClicks::default(),
            note: None,
        };
        run.refresh_note();
        run
    }

    /// Runs the link and reads its callbacks until cancelled or the link stops for good.
    pub async fn run(&mut self, cancel: CancellationToken) -> Result<(), ComponentError> {
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let link_cancel = cancel.child_token();
        let mut link: JoinHandle<Result<(), scv_wecom::Error>> = tokio::spawn({
            let (conn, c) = (self.s.conn.clone(), link_cancel.clone());
            async move { conn.run(tx, c).await }
        });
        let mut status = self.s.conn.status();
        let ended = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break None,
                got = rx.recv() => match got {
                    Some(d) => {
                        let mut batch = vec![d];
                        while batch.len() < BATCH && let Ok(d) = rx.try_recv() {
                            batch.push(d);
                        }
                        if !self.take(batch, &cancel).await {
                            break None;
                        }
                    }
                    // The link ended; its result says why.
                    None => break Some((&mut link).await),
                },
                changed = status.changed() => {
                    if changed.is_err() {
                        break Some((&mut link).await);
                    }
                    let now = status.borrow_and_update().clone();
                    self.link_status(&now);
                }
            }
        };
        link_cancel.cancel();
        let ended = match ended {
            Some(e) => e,
            None => {
                let _ = link.await;
                return Ok(());
            }
        };
        let key = self.s.port.spec().key.clone();
        match ended {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                tracing::warn!(account = %key, error = %e, "the WeCom long connection stopped for good");
                Err(failure::failure(&e, &key))
            }
            Err(e) => Err(ComponentError::transient(
                crate::failure::general::TASK_FAILED,
                format!("the WeCom connection task ended: {e}"),
            )),
        }
    }

    /// Health from the link: every frame on a subscribed socket is evidence; a socket between
    /// reconnects shows as disconnected with its reason.
    fn link_status(&self, now: &LinkStatus) {
        match now.state {
            LinkState::Connected if now.last_evidence.is_some() => {
                crate::port::evidence::heard(&self.s.health)
            }
            LinkState::Disconnected => {
                if let Some(why) = &now.last_error {
                    self.s
                        .health
                        .disconnected(format!("{why}; reconnecting with backoff"));
                }
            }
            _ => {}
        }
    }

    /// Reads a batch of callbacks: messages journaled in one commit before any other step,
    /// pairing codes and clicks handled in order around them. False when cancelled before the
    /// batch was stored.
    async fn take(&mut self, batch: Vec<Delivery>, cancel: &CancellationToken) -> bool {
        let key = self.s.port.spec().key.clone();
        let mut pending = Vec::new();
        for d in batch {
            let taken = match d.callback() {
                Ok(c) => take(&key, d.req_id(), c),
                Err(_) => Taken::Dropped("undecodable"),
            };
            let (_, handle) = d.journaled();
            match taken {
                Taken::Message(m) if self.is_again(&m) => {
                    // Earlier messages first; then the held replies go before what follows.
                    if !self.journal(std::mem::take(&mut pending), cancel).await {
                        return false;
                    }
                    self.s.held.answer_again(&self.s.port, &m).await;
                }
                Taken::Message(m) if self.is_pairing_attempt(&m) => {
                    // Earlier messages first, so they are judged under the owner they met.
                    if !self.journal(std::mem::take(&mut pending), cancel).await {
                        return false;
                    }
                    self.pairing_attempt(&m).await;
                }
                Taken::Message(m) => {
                    // Kept before the commit so an answer finds it; it carries nothing to the
                    // platform until the journal holds the message.
                    if let Some(h) = handle {
                        self.s.handles.insert(h);
                    }
                    pending.push(m);
                }
                Taken::Click(c) => {
                    if !self.clicks.first(&c.msgid) {
                        self.s.port.dropped("redelivered_copy");
                        continue;
                    }
                    if let Some(reason) = self.click(&c, handle).await {
                        self.s.port.dropped(reason);
                    }
                }
                Taken::Unsupported(u) => {
                    self.s.port.dropped("unsupported");
                    self.unsupported(&u).await;
                }
                Taken::Dropped(reason) => self.s.port.dropped(reason),
            }
        }
        self.journal(pending, cancel).await
    }

    async fn click(
        &self,
        c: &super::inbound::Click,
        handle: Option<scv_wecom::ReplyHandle>,
    ) -> Option<&'static str> {
        let answers = self.s.port.answers();
        let cx = ClickContext {
            conn: &self.s.conn,
            account: &self.s.port.spec().key,
            owner: self.s.owner.as_deref(),
            answers: answers.as_ref(),
            language: self.s.port.spec().language,
        };
        buttons::handle(&cx, c, handle).await
    }

    /// Tells the owner, in a direct chat, that a message type cannot be read; others hear
    /// nothing.
    async fn unsupported(&self, u: &super::inbound::Unsupported) {
        if !u.direct || self.s.owner.as_deref() != Some(u.userid.as_str()) {
            return;
        }
        let key = &self.s.port.spec().key;
        tracing::info!(account = %key, "a WeCom message type the bridge does not read");
        let text = crate::words::Card::Unsupported {
            msgtype: u.msgtype.clone(),
        };
        let text = text.text_for(self.s.port.spec().language);
        let out = OutboxKey::reply(key, &PlatformMsgId::new(u.msgid.clone()), "unsupported");
        let chat = crate::ids::ChatId::new(u.userid.clone());
        if let Err(e) = self.s.port.announce(&chat, &text, out).await {
            tracing::warn!(account = %key, error = %e, "cannot queue the unsupported-type notice");
        }
    }

    /// Journals `batch`; while the journal cannot commit the batch is kept and retried (the
    /// callbacks behind it wait in the queue). False when cancelled before it was stored.
    async fn journal(&self, batch: Vec<Inbound>, cancel: &CancellationToken) -> bool {
        if batch.is_empty() {
            return true;
        }
        let key = &self.s.port.spec().key;
        let arrived = std::time::Instant::now();
        let mut attempt = 0;
        loop {
            let stored = self
                .s
                .port
                .accept_with(batch.clone(), arrived, |_| Ok(()))
                .await;
            let Err(e) = stored else {
                self.pause.committed(key);
                self.download_early(&batch);
                return true;
            };
            self.pause.failed(key, &e);
            if self.pause.wait(attempt, cancel).await {
                return false;
            }
            attempt += 1;
        }
    }

    /// Starts downloading the media of the journaled messages the pipeline will answer: WeCom's
    /// URLs expire in minutes (§2.6), and a turn may reach them later than that.
    fn download_early(&self, batch: &[Inbound]) {
        let spec = self.s.port.spec();
        for m in batch.iter().filter(|m| !m.media.is_empty()) {
            let decision = crate::policy::decide(
                spec.senders,
                spec.remote_tools,
                spec.purpose,
                self.s.owner.as_deref(),
                m.sender.as_str(),
            );
            if matches!(decision, crate::policy::Decision::Answer { .. }) {
                m.media.iter().for_each(|r| self.s.sender.download_early(r));
            }
        }
    }

    /// The owner's `/again`: send the replies held in this chat again (see `port::held`).
    fn is_again(&self, m: &Inbound) -> bool {
        crate::port::held::is_again(&m.text) && self.s.owner.as_deref() == Some(m.sender.as_str())
    }

    /// A direct, code-shaped message while a code is open (or a replay of one judged), checked
    /// before any policy so the code never reaches the agent. Never from a group (§3).
    fn is_pairing_attempt(&self, m: &Inbound) -> bool {
        !super::inbound::ReplyRef::parse(&m.reply).g
            && crate::port::pairing::looks_like_code(&m.text)
            && self
                .s
                .pairing
                .as_ref()
                .is_some_and(|p| p.is_open(unix_now()) || p.has_judged(m.msg_id.as_str()))
    }

    async fn pairing_attempt(&mut self, m: &Inbound) {
        let Some(p) = self.s.pairing.as_mut() else {
            return;
        };
        if self.s.port.judge_pairing(p, m) {
            self.pair(m).await;
        }
        self.refresh_note();
    }

    /// Makes `m`'s sender the owner: stored first, then in force, then announced to them.
    async fn pair(&mut self, m: &Inbound) {
        // The login's own fields; the spent code goes.
        let keep = [BOT_ID_FIELD, SECRET_FIELD];
        let paired = self.s.port.pair_owner(&self.s.credentials, &keep, m).await;
        if let Some(stored) = paired.stored {
            self.s.credentials = stored;
        }
        let owner = paired.owner;
        self.s.owner = Some(owner.clone());
        // A new link carries the new owner; the old attachment is dropped after it.
        self.attachment = self.s.port.attach(link(&self.s, Some(owner.clone())));
        self.s
            .health
            .set_ids(Some(self.s.conn.bot_id().to_string()), Some(owner));
        self.s.port.greet_owner(m).await;
    }

    /// Says why nobody is answered, when that is the case.
    fn refresh_note(&mut self) {
        let spec = self.s.port.spec();
        let note = crate::port::pairing::owner_note(
            spec,
            self.s.owner.is_some(),
            self.s.pairing.as_ref(),
            "the bot in a direct chat",
        );
        if note != self.note {
            self.note = note.clone();
            self.s.health.note(NoteSource::Account, note);
        }
    }
}

/// What this run tells the pipeline about the account with `owner`.
fn link(s: &Setup, owner: Option<String>) -> LinkParts {
    LinkParts {
        health: s.health.clone(),
        label: "WeCom",
        capabilities: super::CAPABILITIES,
        owner,
        sender: s.sender.clone(),
    }
}
