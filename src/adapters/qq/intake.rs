//! One run's intake: the gateway's dispatches, each journaled with its Resume cursor in one
//! commit before the cursor is handed back to the gateway (spec §1.4: the cursor is the only
//! ack), the owner's pairing, and health from the link's own evidence (frames and heartbeat
//! ACKs, spec §1.3).

use std::sync::Arc;

use scv_qq::gateway::{
    Cursor, Delivery, Gateway, GatewayOptions, Inbound as Pushed, LinkState, LinkStatus,
};
use scv_qq::webhook::WebhookKey;
use scv_qq::{BotIdentity, Client};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::buttons::{self, Clicks};
use super::inbound::{Taken, take};
use super::login::{APP_ID_FIELD, BOT_ID_FIELD, BOT_NAME_FIELD, SECRET_FIELD};
use super::sender::QqSender;
use super::webhook;
use super::{failure, state};
use crate::conversation::{Attachment, Inbound};
use crate::failure::general;
use crate::port::pairing::Pairing;
use crate::port::{AccountPort, LinkParts, StorePause};
use crate::protocol::Senders;
use crate::secrets::Credentials;
use crate::supervisor::{ComponentError, HealthHandle, NoteSource, unix_now};

/// How long spent-reply records are kept: past the longest window, they can never be used.
const USED_KEPT_MS: u64 = 2 * 60 * 60 * 1000;

/// What `run_inner` found out before the gateway starts.
pub(super) struct Setup {
    pub port: AccountPort,
    pub client: Client,
    pub bot: BotIdentity,
    pub owner: Option<String>,
    pub pairing: Option<Pairing>,
    pub credentials: Credentials,
    pub sender: Arc<QqSender>,
    pub health: HealthHandle,
}

/// What the account note says, part by part (one note per source: these are joined).
#[derive(Default, PartialEq)]
struct Notes {
    pairing: Option<String>,
    gap: Option<String>,
    group: Option<String>,
    /// The webhook listener is reachable beyond this machine.
    exposed: Option<String>,
}

/// One run of the account, attached to the pipeline.
pub(super) struct Run {
    s: Setup,
    /// Dropping it (the run ending) stops the account's chat workers.
    attachment: Attachment,
    pause: StorePause,
    notes: Notes,
    shown: Option<String>,
}

impl Run {
    /// Attaches the account and says who the bot and the owner are.
    pub fn start(s: Setup) -> Run {
        let attachment = s.port.attach(link(&s, s.owner.clone()));
        s.health.set_ids(Some(s.bot.id.clone()), s.owner.clone());
        let mut run = Run {
            attachment,
            pause: StorePause::new(&s.health),
            s,
            notes: Notes::default(),
            shown: None,
        };
        run.refresh_pairing_note();
        run
    }

    /// Runs the gateway until cancelled or a failure it cannot handle ends it.
    pub async fn run(
        mut self,
        options: GatewayOptions,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        self.sweep().await;
        let gateway = Arc::new(Gateway::new(self.s.client.clone(), options));
        let (tx, mut rx) = mpsc::channel(64);
        let stop = cancel.child_token();
        let task = tokio::spawn({
            let (gateway, stop) = (gateway.clone(), stop.clone());
            async move { gateway.run(tx, stop).await }
        });
        let mut status = gateway.status();
        loop {
            tokio::select! {
                pushed = rx.recv() => match pushed {
                    Some(p) => if !self.handle(p, &gateway, &cancel).await { break },
                    None => break,
                },
                Ok(()) = status.changed() => {
                    let now = status.borrow_and_update().clone();
                    self.link_changed(&now);
                }
            }
        }
        stop.cancel();
        let key = &self.s.port.spec().key;
        match task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(failure::failure(&e, key)),
            Err(e) => Err(ComponentError::transient(
                general::TASK_FAILED,
                e.to_string(),
            )),
        }
    }

    /// Runs webhook mode until cancelled: the listener on `listen`, each verified dispatch
    /// journaled before its request is answered ([`super::webhook`]).
    pub async fn run_webhook(
        mut self,
        listen: &str,
        key: WebhookKey,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        self.sweep().await;
        let (tx, mut rx) = mpsc::channel(64);
        let port = self.s.port.clone();
        let dropped = Box::new(move |reason: &'static str| port.dropped(reason));
        let stop = cancel.child_token();
        let clock = self.s.port.clock().clone();
        let bound = webhook::serve(listen, key, clock, tx, dropped, stop.clone())
            .await
            .map_err(|e| {
                let name = &self.s.port.spec().key.account;
                ComponentError::transient(
                    general::NETWORK,
                    format!(
                        "cannot listen for QQ webhooks on {listen} ({e}); free that port, or set webhook_listen under [qq.{name}] and run `scv-bridge reload`"
                    ),
                )
            })?;
        tracing::info!(account = %self.s.port.spec().key, %bound, "qq webhook listening");
        if !bound.ip().is_loopback() {
            let name = &self.s.port.spec().key.account;
            self.notes.exposed = Some(format!(
                "QQ webhooks are received on {bound}, reachable beyond this machine; keep it behind an HTTPS proxy, or set webhook_listen = \"127.0.0.1:8443\" under [qq.{name}] and run `scv-bridge reload`"
            ));
            self.refresh_note();
        }
        // The listener is all the link there is until QQ posts; every request is evidence too.
        crate::port::evidence::heard(&self.s.health);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                hooked = rx.recv() => {
                    let Some(h) = hooked else { break };
                    crate::port::evidence::heard(&self.s.health);
                    let batch = self.take_event(h.event.as_ref().ok()).await;
                    let stored = self.journal(batch, None, &cancel).await;
                    // A dropped request (its client gone) was not answered 200: QQ resends it.
                    let _ = h.done.send(stored);
                    if !stored {
                        break;
                    }
                }
            }
        }
        stop.cancel();
        Ok(())
    }

    /// Health from the link: every frame and heartbeat ACK is evidence; a socket that ended
    /// shows why while the gateway reconnects.
    fn link_changed(&self, status: &LinkStatus) {
        match status.state {
            LinkState::Connected => crate::port::evidence::heard(&self.s.health),
            LinkState::Disconnected => {
                if let Some(e) = &status.last_error {
                    self.s
                        .health
                        .disconnected(format!("QQ gateway: {e}; reconnecting"));
                }
            }
            LinkState::Connecting => {}
        }
    }

    /// One thing the gateway pushed. False when cancelled before it was stored.
    async fn handle(
        &mut self,
        pushed: Pushed,
        gateway: &Gateway,
        cancel: &CancellationToken,
    ) -> bool {
        match pushed {
            Pushed::Ready {
                cursor, resumed, ..
            } => {
                tracing::info!(account = %self.s.port.spec().key, resumed, "qq gateway session ready");
                self.journal(Vec::new(), Some((cursor, gateway)), cancel)
                    .await
            }
            Pushed::SessionLost { .. } => {
                self.notes.gap = Some(
                    "QQ could not resume the gateway session; messages sent while the link was down may be lost (QQ does not replay them)"
                        .into(),
                );
                self.refresh_note();
                true
            }
            Pushed::Event(d) => self.delivery(d, gateway, cancel).await,
        }
    }

    async fn delivery(
        &mut self,
        d: Delivery,
        gateway: &Gateway,
        cancel: &CancellationToken,
    ) -> bool {
        let batch = self.take_event(d.event.as_ref().ok()).await;
        self.journal(batch, Some((d.cursor, gateway)), cancel).await
    }

    /// What one event gives the journal (a message), or does at once (pairing, a click).
    async fn take_event(&mut self, event: Option<&scv_qq::Event>) -> Vec<Inbound> {
        let key = self.s.port.spec().key.clone();
        let Some(event) = event else {
            self.s.port.dropped("undecodable");
            return Vec::new();
        };
        let mut batch = Vec::new();
        match take(&key, event, self.s.port.clock().now_ms()) {
            Taken::Message(m) if self.is_pairing_attempt(&m) => self.pairing_attempt(&m).await,
            Taken::Message(m) => {
                self.note_group_stranger(&m);
                batch.push(m);
            }
            Taken::Click(click) => {
                let cx = Clicks {
                    client: &self.s.client,
                    account: &key,
                    owner: self.s.owner.as_deref(),
                    answers: self.s.port.answers(),
                    language: self.s.port.spec().language,
                };
                if let Some(reason) = buttons::handle(&cx, &click).await {
                    self.s.port.dropped(reason);
                }
            }
            Taken::Dropped(reason) => self.s.port.dropped(reason),
        }
        batch
    }

    /// Journals `batch` and, in the same commit, the gateway's `cursor` (none in webhook mode);
    /// only then does the gateway get the cursor for its next Resume. While the journal cannot
    /// commit the batch is kept and retried (nothing further is read meanwhile). False when
    /// cancelled before it was stored.
    async fn journal(
        &self,
        batch: Vec<Inbound>,
        cursor: Option<(Cursor, &Gateway)>,
        cancel: &CancellationToken,
    ) -> bool {
        let key = &self.s.port.spec().key;
        let arrived = std::time::Instant::now();
        let mut attempt = 0;
        loop {
            let (bot, c) = (self.s.bot.id.clone(), cursor.as_ref().map(|c| c.0.clone()));
            let stored = self
                .s
                .port
                .accept_with(batch.clone(), arrived, move |s| match &c {
                    Some(c) => state::save_cursor_in(s, &bot, c),
                    None => Ok(()),
                })
                .await;
            let Err(e) = stored else {
                self.pause.committed(key);
                if let Some((c, gateway)) = cursor {
                    gateway.commit(c);
                }
                return true;
            };
            self.pause.failed(key, &e);
            if self.pause.wait(attempt, cancel).await {
                return false;
            }
            attempt += 1;
        }
    }

    /// Forgets spent-reply records past every window.
    async fn sweep(&self) {
        let before = self.s.port.clock().now_ms().saturating_sub(USED_KEPT_MS);
        if let Err(e) = self
            .s
            .port
            .state()
            .call(move |s| state::sweep_in(s, before))
            .await
        {
            tracing::debug!(account = %self.s.port.spec().key, error = %e, "cannot sweep reply records");
        }
    }

    /// A one-to-one, code-shaped message while a code is open (or a replay of one judged),
    /// checked before any policy so the code never reaches the agent. Never from a group
    /// (spec §3.3).
    fn is_pairing_attempt(&self, m: &Inbound) -> bool {
        !m.chat.as_str().starts_with("g:")
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
        self.refresh_pairing_note();
    }

    /// Makes `m`'s sender the owner: stored first, then in force, then announced to them (in
    /// reply to the code, inside its window).
    async fn pair(&mut self, m: &Inbound) {
        // The login's own fields; the spent code goes.
        let keep = [APP_ID_FIELD, SECRET_FIELD, BOT_ID_FIELD, BOT_NAME_FIELD];
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
            .set_ids(Some(self.s.bot.id.clone()), Some(owner));
        let trigger = super::inbound::ReplyRef::parse(&m.reply);
        if let Err(e) = state::note_latest(self.s.port.state(), m.chat.as_str(), &trigger).await {
            let key = &self.s.port.spec().key;
            tracing::warn!(account = %key, error = %e, "cannot keep the pairing message's trigger");
        }
        self.s.port.greet_owner(m).await;
    }

    /// A group message from someone who is not the owner, on an owner-only account: says once
    /// why the owner may not be recognised there (spec §3.1: a member id may differ from the
    /// one-to-one id, unconfirmed).
    fn note_group_stranger(&mut self, m: &Inbound) {
        let owner_only = self.s.port.spec().senders == Senders::Owner;
        let stranger = self.s.owner.as_deref() != Some(m.sender.as_str());
        if !owner_only
            || !stranger
            || !m.chat.as_str().starts_with("g:")
            || self.notes.group.is_some()
        {
            return;
        }
        self.notes.group = Some(
            "a group message was not answered: QQ gives a group member another id than their one-to-one chat, so the owner counts in a group only when QQ gives the same id; write to the bot one-to-one"
                .into(),
        );
        self.refresh_note();
    }

    /// Says why nobody is answered, when that is the case.
    fn refresh_pairing_note(&mut self) {
        let spec = self.s.port.spec();
        self.notes.pairing = crate::port::pairing::owner_note(
            spec,
            self.s.owner.is_some(),
            self.s.pairing.as_ref(),
            "the bot in a one-to-one QQ chat",
        );
        self.refresh_note();
    }

    fn refresh_note(&mut self) {
        let n = &self.notes;
        let parts: Vec<&str> = [&n.pairing, &n.gap, &n.group, &n.exposed]
            .into_iter()
            .filter_map(|n| n.as_deref())
            .collect();
        let note = (!parts.is_empty()).then(|| parts.join("; "));
        if note != self.shown {
            self.shown = note.clone();
            self.s.health.note(NoteSource::Account, note);
        }
    }
}

/// What this run tells the pipeline about the account with `owner`.
fn link(s: &Setup, owner: Option<String>) -> LinkParts {
    LinkParts {
        health: s.health.clone(),
        label: "QQ",
        capabilities: super::CAPABILITIES,
        owner,
        sender: s.sender.clone(),
    }
}
