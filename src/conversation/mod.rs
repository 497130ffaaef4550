//! The conversation pipeline: inbound → journal → policy → agent → outbox → platform.
//!
//! No code here branches on the platform: adapters produce [`Inbound`] and consume [`Outbound`].
//! Every message is journaled before [`Conversation::accept`] returns, so an adapter advances its
//! platform cursor (or ACKs) only after that; work is then pulled from the journal and the outbox
//! by one turn worker and one sender per chat, so order holds per chat, chats run in parallel, and
//! a crash at any point resumes from what was stored. An outbox item may also be an update of an
//! earlier message (a card showing how a question ended); the platform's message id of each sent
//! item is stored for that, and an update the platform refuses goes out as a new message.

mod backend;
pub mod body;
mod burst;
mod cap;
mod chat;
mod choice;
mod chunk;
mod commands;
mod deliveries;
mod depth;
mod hooks;
mod journal;
mod lang;
mod link;
mod media;
mod media_in;
mod message;
mod moves;
mod outbox;
mod quiet;
mod sender;
mod senders;
mod spawner;
mod stats;
mod stream;
mod turns;
mod typing;
mod voice;
mod voice_mode;
mod voice_out;
mod waits;
mod which;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use crate::ids::{ChatId, DeliveryState, OutboxKey, PlatformMsgId, SenderId};
pub use body::Body;
pub use chunk::split;
pub(crate) use commands::MAIL_ACCOUNTS_START;
pub use hooks::{
    AnswerClaim, AnswerInterceptor, ButtonAnswers, ButtonPress, DeliveryObserver, Hooks,
    MailChatHandler, PressOutcome,
};
pub use journal::{DEDUPE_WINDOW_SECS, Delivery};
pub use link::{AccountLink, ChatSender, SendError, SendLimits, Sent, StreamMode};
pub use message::{Inbound, MediaRef, Outbound, OutboundKind, ReplyContext};
pub use moves::{AlsoMove, Moved, PendingMessage};
/// Store reads of moved messages, for the confirm service's start (`confirm/service/moved.rs`).
pub mod moved {
    pub use super::moves::{moved_from, moved_to};
}
pub use outbox::Outbox;
pub use stats::Stats;
pub use waits::AccountWaits;

use crate::agent::{Agent, Approver};
use crate::config::AccountKey;
use crate::policy::Decision;
use crate::store::{Store, StoreError};
use chat::ChatRuntime;
use journal::{Entry, FastRoute, JournalState};

/// The most messages one journal write may hold and still run as a short store call (on the
/// caller's thread when the store's writer is idle): a poll's few, not a burst's hundreds.
const SHORT_BATCH: usize = 16;

/// What [`Conversation::accept`] did with a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accepted {
    /// Messages journaled for the first time.
    pub new: usize,
    /// Messages already journaled (redeliveries): ignored.
    pub duplicates: usize,
}

/// The pipeline shared by every account.
pub struct Conversation {
    store: Store,
    /// The agent and what status says about it (its description and how its turns end);
    /// a reload may swap it (`replace_agent`).
    backends: backend::Backends,
    /// The outbox handle; it shares the attached accounts, so what it queues wakes their chats.
    outbox: Outbox,
    /// Set by the first mail account that starts; mail-chat messages wait for it. The one hook
    /// not given at construction: the handler is the mail triage of whichever mail account
    /// starts first (it lives in that account's component, built by the supervisor after the
    /// pipeline), and the pipeline's chats may attach before it.
    mail_chat: watch::Sender<Option<Arc<dyn MailChatHandler>>>,
    /// Mail-chat messages waiting for that handler, their busy units lent (see `quiet`).
    mail_waiting: Mutex<usize>,
    /// Who plugs into the pipeline (confirm answers, approvals, deliveries, `/status`); fixed
    /// at construction.
    hooks: Hooks,
    stats: Stats,
    /// Counts busy workers and unseen wake-ups, for [`Conversation::quiescent`].
    quiet: quiet::Quiet,
    /// Every chat's sender, so a stop waits for the sends in flight.
    senders: senders::Senders,
    /// Runs the pipeline's tasks on the runtime that built it (see `spawner`).
    spawner: spawner::Spawner,
    /// The speech server (`[speech]`), set by the daemon at start and on reload (`voice`).
    speech: arc_swap::ArcSwapOption<crate::speech::Speech>,
    /// The owner tools, set by the daemon once its owner service runs (built after the pipeline).
    owner_tools: std::sync::RwLock<Option<Arc<dyn crate::agent::tool_access::ToolAccess>>>,
}

/// One attached account: its link and its chats' workers.
struct AccountRuntime {
    link: AccountLink,
    /// The pipeline it is attached to (weak: the pipeline owns its runtimes), for outbox
    /// handles that wake one of its chats.
    conversation: Weak<Conversation>,
    /// Tags fast-lane claims of this attachment, so a restart can tell its own from a crashed one's.
    run: String,
    /// When it attached, in Unix milliseconds: what was journaled before waited through a stop.
    attached_ms: u64,
    cancel: CancellationToken,
    chats: Mutex<HashMap<ChatId, Arc<ChatRuntime>>>,
}

/// Keeps an account attached; dropping it stops the account's workers (journaled work stays).
pub struct Attachment {
    conversation: Arc<Conversation>,
    account: AccountKey,
    cancel: CancellationToken,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Ok(mut map) = self.conversation.outbox.attached.lock()
            && map
                .get(&self.account)
                .is_some_and(|rt| rt.cancel.is_cancelled())
        {
            map.remove(&self.account);
        }
    }
}

impl Conversation {
    /// A pipeline over `store` answering with `agent`, with no hooks (no confirm questions).
    pub fn new(store: Store, agent: Arc<dyn Agent>) -> Arc<Self> {
        Self::build(Outbox::new(store), agent, Hooks::default())
    }

    /// A pipeline over `outbox`'s store answering with `agent`; `hooks` say who claims answers,
    /// approves tools, learns of deliveries and writes `/status`'s second line. Services built
    /// before the pipeline (the confirm service) queue their messages through `outbox`.
    pub fn build(outbox: Outbox, agent: Arc<dyn Agent>, hooks: Hooks) -> Arc<Self> {
        Arc::new(Conversation {
            store: outbox.store.clone(),
            backends: backend::Backends::new(agent),
            outbox,
            mail_chat: watch::channel(None).0,
            mail_waiting: Mutex::new(0),
            hooks,
            stats: Stats::default(),
            quiet: quiet::Quiet::default(),
            senders: senders::Senders::default(),
            spawner: spawner::Spawner::default(),
            speech: arc_swap::ArcSwapOption::empty(),
            owner_tools: std::sync::RwLock::new(None),
        })
    }

    /// The outbox handle the pipeline sends from.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// Resolves once every chat worker is parked waiting for input (or waiting out a closed send
    /// window, a slow-down or an agent outage) and no fast-lane task runs (but one waiting for
    /// the mail accounts to start): what tests await to show that nothing more happens.
    pub fn quiescent(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.quiet.wait()
    }

    /// At shutdown, once every account has detached: waits up to `grace` for the sends in
    /// flight to be answered and marked, so none goes again at the next start; then releases
    /// the agent backend (child processes, connections).
    pub async fn close(&self, grace: std::time::Duration) {
        self.senders.settle(grace).await;
        self.backends.close().await;
    }

    /// Counters of what happened (received, dropped by reason, answered, sent, failures).
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Counts a message not answered, and shows the account's counts in its status.
    pub(crate) fn count_drop(&self, account: &AccountKey, reason: &str) {
        self.stats.dropped(account, reason);
        if let Some(rt) = self.runtime(account) {
            rt.link.health.set_dropped(self.stats.dropped_of(account));
        }
    }

    /// Sets who handles the owner's messages in `purpose = "mail"` chats (the mail triage).
    pub fn set_mail_chat_handler(&self, h: Arc<dyn MailChatHandler>) {
        let mut waiting = lock(&self.mail_waiting);
        self.mail_chat.send_replace(Some(h));
        // The waiters now have work: the barrier holds until they have done it.
        self.quiet.reclaim(std::mem::take(&mut *waiting));
    }

    /// The mail-chat handler, waiting up to `wait` for a mail account to set it: the chat may
    /// attach (and resume or receive the owner's messages) before any mail account has started.
    pub(crate) async fn mail_chat_handler(
        &self,
        wait: std::time::Duration,
    ) -> Option<Arc<dyn MailChatHandler>> {
        let mut rx = self.mail_chat.subscribe();
        {
            // Checked and counted under one lock with the setter, so no waiter is missed.
            let mut waiting = lock(&self.mail_waiting);
            if let Some(h) = rx.borrow().clone() {
                return Some(h);
            }
            *waiting += 1;
            self.quiet.lend();
        }
        let found = match tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await {
            Ok(Ok(h)) => h.clone(),
            _ => None,
        };
        let mut waiting = lock(&self.mail_waiting);
        // Still counted: no setter handed this wait its unit back, so take it back here.
        if *waiting > 0 {
            *waiting -= 1;
            self.quiet.reclaim(1);
        }
        found
    }

    /// Who may claim a message as an answer before it reaches the agent, if anyone.
    fn answers(&self) -> Option<&Arc<dyn AnswerInterceptor>> {
        self.hooks.answers.as_ref()
    }

    /// Who asks the owner before a tool runs on `approvals = "ask"` accounts, if anyone.
    pub fn approver(&self) -> Option<Arc<dyn Approver>> {
        self.hooks.approver.clone()
    }

    /// Offers `tools` to the turns the policy gives tools (served by `crate::mcp`).
    pub fn set_owner_tools(&self, tools: Arc<dyn crate::agent::tool_access::ToolAccess>) {
        *self.owner_tools.write().unwrap_or_else(|p| p.into_inner()) = Some(tools);
    }

    /// The owner tools, if the daemon set them; `turns.rs` passes them only to tool sessions.
    pub fn owner_tools(&self) -> Option<Arc<dyn crate::agent::tool_access::ToolAccess>> {
        self.owner_tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Who learns what the platform said about items as they go out, if anyone.
    fn delivery_observer(&self) -> Option<Arc<dyn DeliveryObserver>> {
        self.hooks.deliveries.clone()
    }

    /// What `/status` reports about the whole bridge (its second line).
    fn status_line(&self) -> crate::words::Bridge {
        self.hooks
            .status_line
            .as_ref()
            .map_or(crate::words::Bridge::Running, |f| f())
    }

    /// Attaches a running account: its chats' workers start, and work left by a crash resumes.
    pub fn attach(self: &Arc<Self>, link: AccountLink) -> Attachment {
        let cancel = CancellationToken::new();
        let account = link.account.clone();
        let rt = Arc::new(AccountRuntime {
            link,
            conversation: Arc::downgrade(self),
            run: format!("{:016x}", rand::random::<u64>()),
            attached_ms: crate::clock::wall_ms(),
            cancel: cancel.clone(),
            chats: Mutex::new(HashMap::new()),
        });
        if let Ok(mut map) = self.outbox.attached.lock()
            && let Some(old) = map.insert(account.clone(), rt.clone())
        {
            old.cancel.cancel();
        }
        let me = self.clone();
        let busy = self.quiet.hold();
        self.spawner.spawn(async move {
            me.resume(rt).await;
            drop(busy);
        });
        Attachment {
            conversation: self.clone(),
            account,
            cancel,
        }
    }

    /// Starts workers for every chat with open work, and replays fast-lane messages.
    async fn resume(self: Arc<Self>, rt: Arc<AccountRuntime>) {
        media::sweep_partials(&self, &rt);
        let account = rt.link.account.clone();
        let (a, run) = (account.clone(), rt.run.clone());
        let loaded = self
            .store
            .call(move |t| {
                journal::purge_old(t)?;
                Ok((
                    journal::open_chats(t, &a)?,
                    journal::fast_to_resume(t, &a, &run)?,
                ))
            })
            .await;
        match loaded {
            Ok((chats, fast)) => {
                for chat in chats {
                    self.chat(&rt, &chat);
                }
                for p in fast {
                    self.spawn_fast(rt.clone(), p.inbound, p.route);
                }
            }
            Err(e) => {
                tracing::error!(account = %account, error = %e, "cannot resume journaled work")
            }
        }
    }

    /// Journals a batch and returns once it is stored; then the adapter may advance its cursor.
    ///
    /// Redeliveries (same account and platform message id within the dedupe window) are ignored.
    pub async fn accept(self: &Arc<Self>, batch: Vec<Inbound>) -> Result<Accepted, StoreError> {
        if batch.is_empty() {
            return Ok(Accepted::default());
        }
        let entries: Vec<Entry> = batch.into_iter().map(|m| self.classify(m)).collect();
        self.journal(entries, |_| Ok(())).await
    }

    /// [`Conversation::accept`], with `account`'s own state (`also`: peer tokens, the poll
    /// cursor) written in the same transaction, so the batch and where to poll next are stored
    /// together or not at all, in one commit. `also` runs even for an empty batch.
    pub async fn accept_with<F>(
        self: &Arc<Self>,
        account: &AccountKey,
        batch: Vec<Inbound>,
        also: F,
    ) -> Result<Accepted, StoreError>
    where
        F: FnOnce(&crate::store::StateTxn<'_>) -> Result<(), crate::store::StateError>
            + Send
            + 'static,
    {
        let entries: Vec<Entry> = batch.into_iter().map(|m| self.classify(m)).collect();
        let account = account.to_string();
        self.journal(entries, move |t| {
            crate::store::state_within(t, &account, also)
        })
        .await
    }

    /// Stores classified entries (and `also`) in one commit, then wakes what handles the new ones.
    async fn journal<F>(
        self: &Arc<Self>,
        entries: Vec<Entry>,
        also: F,
    ) -> Result<Accepted, StoreError>
    where
        F: FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()> + Send + 'static,
    {
        let total = entries.len();
        let write = move |t: &rusqlite::Transaction<'_>| {
            also(t)?;
            journal::insert(t, &entries).map(|fresh| (entries, fresh))
        };
        // The urgent lane: the platform's ACK (or cursor) waits on this commit, so it must not
        // queue behind turns' and the outbox's writes. A few messages (a chat's poll) are
        // written here at once when the writer is idle; a burst's batch is not short.
        let (entries, fresh) = if total <= SHORT_BATCH {
            self.store.call_urgent_short(write).await?
        } else {
            self.store.call_urgent(write).await?
        };
        let mut was_fresh = vec![false; entries.len()];
        for i in &fresh {
            was_fresh[*i] = true;
            self.route(&entries[*i]);
        }
        // A message journaled before (a redelivery with the same id) is a provable copy: it is
        // not answered again, and counted.
        for (e, _) in entries.iter().zip(&was_fresh).filter(|(_, f)| !**f) {
            self.count_drop(&e.inbound.account, "duplicate");
        }
        Ok(Accepted {
            new: fresh.len(),
            duplicates: total - fresh.len(),
        })
    }

    /// Decides a message's path before it is journaled.
    fn classify(&self, m: Inbound) -> Entry {
        let Some(rt) = self.runtime(&m.account) else {
            // Not attached (should not happen): keep it for the next attach, decided then.
            return Entry {
                inbound: m,
                state: JournalState::New,
                tools: false,
                route: None,
                dropped: None,
            };
        };
        let (decision, is_owner) = rt.link.decide(&m.sender);
        let answer = self.answers();
        let fast = |route| (JournalState::Fast, false, Some(route));
        let mut dropped = None;
        let (state, tools, route) = match decision {
            Decision::Drop(reason) => {
                dropped = Some(reason.as_str());
                (JournalState::Dropped, false, None)
            }
            Decision::MailChat => fast(FastRoute::MailChat),
            Decision::Answer { tools } => {
                let claim = answer.map_or(AnswerClaim::None, |a| {
                    a.claim(&m.account, &m.chat, is_owner, &m.text)
                });
                // Digests reported to an ordinary chat: their commands never reach the agent.
                let mail = is_owner && self.for_mail(&m);
                if let Some(route) = claim.route(mail) {
                    fast(route)
                } else if commands::parse(&m.text).is_some() {
                    if is_owner {
                        fast(FastRoute::Command)
                    } else {
                        dropped = Some("command_not_owner");
                        (JournalState::Dropped, false, None)
                    }
                } else {
                    (JournalState::New, tools, None)
                }
            }
        };
        Entry {
            inbound: m,
            state,
            tools,
            route,
            dropped,
        }
    }

    /// Whether the mail accounts reporting to this ordinary chat claim the owner's message.
    fn for_mail(&self, m: &Inbound) -> bool {
        self.mail_chat
            .borrow()
            .as_ref()
            .is_some_and(|h| h.wants(&m.account, &m.chat, &m.text))
    }

    /// Wakes whatever must handle a freshly journaled message.
    fn route(self: &Arc<Self>, e: &Entry) {
        let m = &e.inbound;
        self.stats.received(&m.account);
        if e.state == JournalState::Dropped {
            self.count_drop(&m.account, e.dropped.unwrap_or("policy"));
            return;
        }
        let Some(rt) = self.runtime(&m.account) else {
            return;
        };
        let chat = self.chat(&rt, &m.chat);
        chat.send_gate.kick_peer();
        chat.window_wake.notify_waiters();
        match e.state {
            JournalState::New => chat.wake_turn(),
            JournalState::Fast => self.spawn_fast(rt, m.clone(), e.route),
            _ => {}
        }
    }

    /// Queues a message the bridge writes on its own; see [`Outbox::send_proactive`].
    pub async fn send_proactive(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        text: &str,
        body: Option<&Body>,
        key: &str,
    ) -> Result<(), StoreError> {
        self.outbox
            .send_proactive(account, chat, text, body, key)
            .await
    }

    /// Queues an update of an earlier message; see [`Outbox::update_proactive`].
    pub async fn update_proactive(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        target: &str,
        text: &str,
        body: &Body,
        key: &str,
    ) -> Result<(), StoreError> {
        self.outbox
            .update_proactive(account, chat, target, text, body, key)
            .await
    }

    /// Where the outbox item queued under `key` (piece 0) stands.
    pub async fn delivery_state(&self, key: &str) -> Result<Option<DeliveryState>, StoreError> {
        self.outbox.delivery_state(key).await
    }

    /// Where the outbox item queued under `key` (piece 0) stands, and what the platform said
    /// about it once sent (its message id, the chat it landed in).
    pub async fn delivery(&self, key: &str) -> Result<Option<Delivery>, StoreError> {
        self.outbox.delivery(key).await
    }

    /// Answers message `m` with `text` (split to the account's limit) under `<account>/<msg>/<suffix>`.
    async fn reply_text(
        self: &Arc<Self>,
        rt: &Arc<AccountRuntime>,
        m: &Inbound,
        suffix: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        let key = String::from(OutboxKey::reply(&m.account, &m.msg_id, suffix));
        let pieces = split(text, rt.link.sender.limits().max_chars);
        self.outbox
            .enqueue(
                &m.account,
                &m.chat,
                &pieces,
                &Body::Text,
                &key,
                &m.reply,
                OutboundKind::Reply,
            )
            .await?;
        self.chat(rt, &m.chat).wake_send();
        Ok(())
    }

    fn runtime(&self, account: &AccountKey) -> Option<Arc<AccountRuntime>> {
        self.outbox.runtime(account)
    }

    /// The chat's runtime, starting its turn worker and sender on first use.
    fn chat(self: &Arc<Self>, rt: &Arc<AccountRuntime>, chat: &ChatId) -> Arc<ChatRuntime> {
        let mut chats = match rt.chats.lock() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        };
        if let Some(c) = chats.get(chat) {
            return c.clone();
        }
        let c = Arc::new(ChatRuntime::new(chat.clone(), &self.quiet));
        chats.insert(chat.clone(), c.clone());
        self.spawner
            .spawn(turns::run(self.clone(), rt.clone(), c.clone()));
        self.senders.spawn(
            &self.spawner,
            sender::run(self.clone(), rt.clone(), c.clone()),
        );
        c
    }

    fn spawn_fast(self: &Arc<Self>, rt: Arc<AccountRuntime>, m: Inbound, route: Option<FastRoute>) {
        let busy = self.quiet.hold();
        let me = self.clone();
        self.spawner.spawn(async move {
            commands::handle_fast(me, rt, m, route).await;
            drop(busy);
        });
    }
}

/// Locks `m`, going on with the data if a panicking holder poisoned it (a count stays usable).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
