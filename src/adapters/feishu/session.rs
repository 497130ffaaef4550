//! One run's event handling: journal, then ACK; pairing; card clicks; link status to health.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::task::Poll;

use scv_feishu::event::{CardAction, EventBody, parse_event};
use scv_feishu::ws::{AckResponse, LinkState, LinkStatus};
use tokio::sync::Semaphore;

use super::cards::{self, CardAnswerHandler, ClickCache};
use super::delivery::{Incoming, Reply};
use super::inbound::{ReplyRef, to_inbound};
use super::pairing::Pairing;
use super::sender::FeishuSender;
use crate::config::AccountKey;
use crate::conversation::{Attachment, Inbound};
use crate::port::{AccountPort, LinkParts, StorePause};
use crate::secrets::Credentials;
use crate::supervisor::{HealthHandle, NoteSource, unix_now};

/// Event ids remembered to drop re-pushes before they reach the store.
const RECENT_EVENTS: usize = 4096;
/// Events journaled and not yet committed, at most; beyond it `handle` waits, so the delivery
/// queue and then the socket hold the rest (nothing is dropped). A few batches: enough for the
/// store to group them in one commit, few enough that none waits long for its ACK.
const IN_FLIGHT: usize = 256;

/// Credential fields kept when the pairing fields are dropped.
const KEPT_FIELDS: &[&str] = &["app_id", "app_secret", "encrypt_key", "verification_token"];

/// What `setup` found out before the connection opens.
pub(super) struct SessionSetup {
    /// The `cli_…` app id (events for another app are dropped).
    pub app_id: String,
    /// The bot's open_id (mentions, self-echo filter).
    pub bot_open_id: String,
    /// The owner's open_id, if known.
    pub owner: Option<String>,
    /// A pending pairing code.
    pub pairing: Option<Pairing>,
    /// The open_id whose first private message binds them as the owner (a scan's candidate).
    pub pending_owner: Option<String>,
    /// The stored credentials (rewritten once when someone pairs).
    pub credentials: Credentials,
}

/// One run of the account.
pub(super) struct Session {
    account: AccountKey,
    port: AccountPort,
    setup: SessionSetup,
    /// Shared with click tasks, which answer while the session goes on.
    owner: Arc<RwLock<Option<String>>>,
    sender: Arc<FeishuSender>,
    attachment: Attachment,
    health: HealthHandle,
    note: Option<String>,
    connected: bool,
    /// Shared with commit tasks, which remember an event once it is stored.
    recent: Arc<Mutex<RecentIds>>,
    /// Permits for events whose commit is pending (one each).
    in_flight: Arc<Semaphore>,
    /// Whether journal writes fail (status says so; events are answered 500 meanwhile).
    pause: StorePause,
    clicks: Arc<ClickCache>,
    cards: Option<Arc<dyn CardAnswerHandler>>,
}

impl Session {
    /// Attaches the account to the pipeline and reports who the bot and the owner are.
    pub fn start(
        setup: SessionSetup,
        client: scv_feishu::Client,
        port: &AccountPort,
        health: HealthHandle,
        cards: Option<Arc<dyn CardAnswerHandler>>,
    ) -> Self {
        let sender = Arc::new(
            FeishuSender::new(client, port.spec().key.clone())
                .with_state(port.state().clone(), health.clone()),
        );
        let attachment = port.attach(link(&health, &sender, setup.owner.as_deref()));
        health.set_ids(Some(setup.bot_open_id.clone()), setup.owner.clone());
        let mut session = Session {
            account: port.spec().key.clone(),
            port: port.clone(),
            owner: Arc::new(RwLock::new(setup.owner.clone())),
            setup,
            sender,
            attachment,
            pause: StorePause::new(&health),
            health,
            note: None,
            connected: false,
            recent: Arc::default(),
            in_flight: Arc::new(Semaphore::new(IN_FLIGHT)),
            clicks: Arc::new(ClickCache::default()),
            cards,
        };
        session.refresh_note();
        session
    }

    /// Callback mode: the listener is bound and the app's token works, so events can arrive.
    pub fn listening(&mut self) {
        if !self.connected {
            self.connected = true;
            self.health.connected();
        }
    }

    /// Follows the link: `connected` on protocol evidence, `disconnected` between sockets.
    ///
    /// Every pong and frame publishes a new status, and each is evidence: `last_success` follows
    /// them, not only the moment the socket came up.
    pub fn link_status(&mut self, s: &LinkStatus) {
        match s.state {
            LinkState::Connected if !self.connected => {
                self.connected = true;
                self.health.connected();
            }
            LinkState::Connected => crate::port::evidence::heard(&self.health),
            LinkState::Disconnected if self.connected => {
                self.connected = false;
                let why = s
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "the long connection dropped".into());
                self.health.disconnected(format!("{why}; reconnecting"));
            }
            _ => {}
        }
    }

    /// Handles a batch of deliveries: journal what the pipeline should see, then ACK each one.
    ///
    /// Returns once the batch's journal write is queued, not committed: its ACKs are written
    /// by a task when the commit lands, so the next batch is read while this one commits and
    /// the store groups them (the fast path of a burst).
    pub async fn handle(&mut self, batch: Vec<Incoming>) {
        if self.connected {
            // An event is Feishu talking (the only evidence in callback mode).
            crate::port::evidence::heard(&self.health);
        }
        let mut pending: Vec<(Inbound, Reply, String)> = Vec::new();
        for d in batch {
            let event = match parse_event(&d.payload) {
                Ok(e) => e,
                Err(e) => {
                    // Unreadable: ACK it anyway, or it is re-pushed for ever.
                    tracing::warn!(account = %self.account, error = %e, "ignoring an unreadable event");
                    self.port.dropped("undecodable");
                    d.reply.send(AckResponse::Ok);
                    continue;
                }
            };
            let event_id = event.header.event_id.clone();
            let foreign = event
                .header
                .app_id
                .as_deref()
                .is_some_and(|a| a != self.setup.app_id);
            if foreign || self.seen(&event_id) {
                // Another app's event, or one this run already journaled (a re-push).
                self.port
                    .dropped(if foreign { "foreign_app" } else { "duplicate" });
                d.reply.send(AckResponse::Ok);
                continue;
            }
            match event.body {
                EventBody::Message(m) => {
                    let now_ms = unix_now().saturating_mul(1000);
                    match to_inbound(&self.account, &m, &self.setup.bot_open_id, now_ms) {
                        Err(skip) => {
                            tracing::debug!(account = %self.account, reason = skip.as_str(), "message not for the bot");
                            self.port.dropped(skip.as_str());
                            d.reply.send(AckResponse::Ok);
                            self.remember(event_id);
                        }
                        Ok(inbound) if self.is_pending_owner(&inbound) => {
                            self.journal(std::mem::take(&mut pending)).await;
                            tracing::info!(account = %self.account, "the scanner's first private message");
                            // The code is dropped from the store by `pair`; close it here too,
                            // or someone could still pair with it until a restart.
                            self.setup.pairing = None;
                            self.pair(&inbound).await;
                            self.refresh_note();
                            d.reply.send(AckResponse::Ok);
                            self.remember(event_id);
                        }
                        Ok(inbound) if self.is_pairing_attempt(&inbound) => {
                            // Earlier messages first, so they are judged under the old owner.
                            self.journal(std::mem::take(&mut pending)).await;
                            self.pairing_attempt(&inbound).await;
                            d.reply.send(AckResponse::Ok);
                            self.remember(event_id);
                        }
                        Ok(inbound) => pending.push((inbound, d.reply, event_id)),
                    }
                }
                EventBody::CardAction(click) => self.click(click, d.reply),
                EventBody::Other(_) => {
                    d.reply.send(AckResponse::Ok);
                    self.remember(event_id);
                }
            }
        }
        self.journal(pending).await;
    }

    /// Queues the messages' journal write, and ACKs them once it committed (a store failure
    /// ACKs 500 so Feishu re-pushes). Durability: no ACK before the commit.
    async fn journal(&mut self, pending: Vec<(Inbound, Reply, String)>) {
        if pending.is_empty() {
            return;
        }
        let want = u32::try_from(pending.len().min(IN_FLIGHT)).unwrap_or(1);
        let Ok(permit) = self.in_flight.clone().acquire_many_owned(want).await else {
            return;
        };
        let (batch, rest): (Vec<Inbound>, Vec<(Reply, String)>) =
            pending.into_iter().map(|(i, a, e)| (i, (a, e))).unzip();
        let port = self.port.clone();
        let mut commit = Box::pin(async move { port.accept(batch).await });
        let (account, recent) = (self.account.clone(), self.recent.clone());
        let pause = self.pause.clone();
        let answer = move |stored: Result<_, _>| {
            answer_after_commit(&account, &recent, &pause, stored, rest);
            drop(permit);
        };
        // The first poll classifies the batch and queues its write in the store's urgent lane,
        // so batches commit in the order they arrived even though none is awaited here.
        match futures_util::poll!(commit.as_mut()) {
            Poll::Ready(stored) => answer(stored),
            Poll::Pending => {
                tokio::spawn(async move { answer(commit.await) });
            }
        }
    }

    fn seen(&self, event_id: &str) -> bool {
        self.recent.lock().is_ok_and(|r| r.contains(event_id))
    }

    fn remember(&self, event_id: String) {
        if let Ok(mut r) = self.recent.lock() {
            r.insert(event_id);
        }
    }

    /// A private, code-shaped message while a code is open, or a re-push of one already judged
    /// (checked before any policy, so the code never reaches the agent).
    fn is_pairing_attempt(&self, m: &Inbound) -> bool {
        !ReplyRef::parse(&m.reply).group
            && super::pairing::looks_like_code(&m.text)
            && self
                .setup
                .pairing
                .as_ref()
                .is_some_and(|p| p.is_open(unix_now()) || p.has_judged(m.msg_id.as_str()))
    }

    /// A private message from the scan's candidate while nobody owns the account (A1.8:
    /// never from a group).
    fn is_pending_owner(&self, m: &Inbound) -> bool {
        self.setup.owner.is_none()
            && !ReplyRef::parse(&m.reply).group
            && self.setup.pending_owner.as_deref() == Some(m.sender.as_str())
    }

    async fn pairing_attempt(&mut self, m: &Inbound) {
        let Some(p) = self.setup.pairing.as_mut() else {
            return;
        };
        if self.port.judge_pairing(p, m) {
            self.pair(m).await;
        }
        self.refresh_note();
    }

    /// Makes `m`'s sender the owner: stored first, then in force, then announced to them.
    async fn pair(&mut self, m: &Inbound) {
        let paired = self
            .port
            .pair_owner(&self.setup.credentials, KEPT_FIELDS, m)
            .await;
        if let Some(stored) = paired.stored {
            self.setup.credentials = stored;
        }
        let owner = paired.owner;
        self.setup.owner = Some(owner.clone());
        // Either way of becoming the owner ends the other (its stored fields were dropped).
        self.setup.pending_owner = None;
        if let Ok(mut o) = self.owner.write() {
            *o = Some(owner.clone());
        }
        // A new link carries the new owner; the old attachment is dropped after it.
        self.attachment = self
            .port
            .attach(link(&self.health, &self.sender, Some(&owner)));
        self.health
            .set_ids(Some(self.setup.bot_open_id.clone()), Some(owner));
        self.port.greet_owner(m).await;
    }

    /// Answers a card click on its own task, so a slow handler never holds up messages.
    fn click(&self, click: CardAction, handle: Reply) {
        let (account, owner, cards, clicks) = (
            self.account.clone(),
            self.owner.clone(),
            self.cards.clone(),
            self.clicks.clone(),
        );
        tokio::spawn(async move {
            let owner = owner.read().ok().and_then(|o| o.clone());
            let response = cards::respond(
                &account,
                owner.as_deref(),
                cards.as_deref(),
                &clicks,
                &click,
            )
            .await;
            handle.send(AckResponse::card(&response));
        });
    }

    /// Says why nobody is answered, when that is the case.
    fn refresh_note(&mut self) {
        let note = crate::port::pairing::owner_note(
            self.port.spec(),
            self.setup.owner.is_some(),
            self.setup.pairing.as_ref(),
            "the bot in a private chat",
        );
        if note != self.note {
            self.note = note.clone();
            self.health.note(NoteSource::Account, note);
        }
    }
}

/// ACKs each event of a committed batch and remembers its id; a failed commit ACKs 500 (so
/// Feishu pushes it again: while the journal cannot commit, nothing is taken) and says so in
/// status until a commit succeeds.
fn answer_after_commit(
    account: &AccountKey,
    recent: &Mutex<RecentIds>,
    pause: &StorePause,
    stored: Result<crate::conversation::Accepted, crate::store::StoreError>,
    events: Vec<(Reply, String)>,
) {
    match stored {
        Ok(_) => {
            pause.committed(account);
            let mut recent = recent.lock().ok();
            for (reply, event_id) in events {
                reply.send(AckResponse::Ok);
                if let Some(r) = recent.as_mut() {
                    r.insert(event_id);
                }
            }
        }
        Err(e) => {
            pause.failed(account, &e);
            tracing::warn!(account = %account, error = %e, "cannot journal events; asking Feishu to re-push");
            for (reply, _) in events {
                reply.send(AckResponse::Failed);
            }
        }
    }
}

/// What this run tells the pipeline about the account with `owner`.
fn link(health: &HealthHandle, sender: &Arc<FeishuSender>, owner: Option<&str>) -> LinkParts {
    LinkParts {
        health: health.clone(),
        label: "Feishu",
        capabilities: super::sender::CAPABILITIES,
        owner: owner.map(str::to_string),
        sender: sender.clone(),
    }
}

/// A bounded set of recent event ids (oldest forgotten first).
#[derive(Default)]
struct RecentIds {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl RecentIds {
    fn contains(&self, id: &str) -> bool {
        !id.is_empty() && self.set.contains(id)
    }

    fn insert(&mut self, id: String) {
        if id.is_empty() || !self.set.insert(id.clone()) {
            return;
        }
        self.order.push_back(id);
        while self.order.len() > RECENT_EVENTS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_ids_are_bounded() {
        let mut r = RecentIds::default();
        for i in 0..(RECENT_EVENTS + 10) {
            r.insert(format!("ev_{i}"));
        }
        assert!(!r.contains("ev_0"));
        assert!(r.contains(&format!("ev_{}", RECENT_EVENTS + 9)));
        assert_eq!(r.set.len(), RECENT_EVENTS);
        r.insert(String::new());
        assert!(!r.contains(""));
    }
}
