//! The confirm service: the public API (ask, status, answer) and the I/O around each state
//! change (the store, the outbox, health notes). The changes themselves are the question
//! store's (`confirm/index.rs`, pure and unit-tested); this service stores, queues and tells
//! around them.

use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

mod answers;
mod approvals;
mod ask;
mod console;
pub use console::{CONSOLE_ANSWERER, OpenQuestion};
mod counts;
mod deadlines;
mod delivery;
mod driver;
mod health;
mod moved;
mod routes;
mod words;

use super::db::{self, Row};
use super::index::{Index, KEEP_CLOSED_MS, Pick, Question};
use super::question::parse_id;
use super::route::CapabilityLookup;
use crate::clock::Clock;
use crate::config::{AccountKey, Config};
use crate::conversation::{Body, Hooks, Outbox};
use crate::protocol::{ConfirmInfo, ConfirmState};
use crate::secrets::CredentialStore;
use crate::store::{Store, StoreError};
use crate::supervisor::{Capabilities, HealthRegistry};

/// What the service is built from; none of it is set later.
pub struct ConfirmParts {
    /// Where questions are stored.
    pub store: Store,
    /// Where question messages are queued (the conversation's outbox, before the pipeline).
    pub outbox: Outbox,
    /// Where account owners are stored (for routing a question to the owner's chat).
    pub credentials: CredentialStore,
    /// Deadlines and withdrawal run on it.
    pub clock: Clock,
    /// What each account can do: buttons, editing in place, a send window, questions at all.
    pub capabilities: CapabilityLookup,
    /// Account health: who the owner is, whether it is up, where notes about waiting go.
    pub registry: Arc<HealthRegistry>,
}

/// The longest question accepted, in characters.
const MAX_QUESTION_CHARS: usize = 4000;
/// Closed questions are deleted from the store this long after closing.
const PURGE_AFTER_MS: u64 = 7 * 24 * 3600 * 1000;

/// What the service takes from the configuration; replaced on reload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfirmSettings {
    /// Where questions go when no parent names a chat: that account's owner chat.
    pub notify: Option<AccountKey>,
    /// The zone deadlines are shown in; `None` is the system's.
    pub timezone: Option<chrono_tz::Tz>,
    /// Each account's `language`; an account not named here is `auto`.
    pub languages: std::collections::BTreeMap<AccountKey, crate::words::Language>,
    /// The accounts whose tool questions may offer "always" (`approvals = "ask_or_always"`).
    pub always: std::collections::BTreeSet<AccountKey>,
}

impl ConfirmSettings {
    /// The settings in `config`.
    pub fn from_config(config: &Config) -> Self {
        ConfirmSettings {
            notify: config.notify.clone(),
            timezone: config.timezone,
            languages: config
                .accounts
                .iter()
                .map(|(k, s)| (k.clone(), s.language))
                .collect(),
            always: config
                .accounts
                .iter()
                .filter(|(_, s)| s.approvals == crate::config::Approvals::AskOrAlways)
                .map(|(k, _)| k.clone())
                .collect(),
        }
    }
}

/// Why a confirm request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfirmError {
    /// The request is malformed (timeout too long, empty question, bad parent).
    #[error("{0}")]
    InvalidRequest(String),
    /// No question has this id.
    #[error("no question {0}")]
    NotFound(String),
    /// The store failed.
    #[error("{0}")]
    Internal(String),
}

impl From<StoreError> for ConfirmError {
    fn from(e: StoreError) -> Self {
        ConfirmError::Internal(e.to_string())
    }
}

/// An owner's answer: yes or no, and whether the yes was "always".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Answer {
    yes: bool,
    always: bool,
}

impl Answer {
    /// A plain yes or no (buttons, `confirm_answer`).
    pub(super) fn once(yes: bool) -> Self {
        Answer { yes, always: false }
    }
}

/// What an answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// The answer counts: the question is now in this state.
    Recorded(ConfirmState),
    /// The question had already closed in this state; the answer changed nothing.
    AlreadyClosed(ConfirmState),
}

/// A question as the service knows it, with what the wire does not carry (code, reason, chat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionView {
    /// What `confirm_status` reports.
    pub info: ConfirmInfo,
    /// The account asked (its owner may answer), when there was one.
    pub account: Option<AccountKey>,
    /// The chat asked.
    pub chat: String,
    /// The short code shown with it.
    pub code: String,
    /// Why it failed, when it did.
    pub reason: Option<String>,
    /// The platform's id of the question message once it went out (the Feishu card updated
    /// when the question closes), when the platform gives one.
    pub message_id: Option<String>,
}

/// How a close attempt ended.
enum Closed {
    /// This call closed it.
    Now(Question),
    /// It had already closed (or closed meanwhile); its stored row.
    Already(Row),
}

/// Owner yes/no questions; shared by the control socket, the pipeline and the deadline loop.
pub struct ConfirmService {
    store: Store,
    outbox: Outbox,
    credentials: CredentialStore,
    clock: Clock,
    capabilities: CapabilityLookup,
    index: Mutex<Index>,
    settings: RwLock<ConfirmSettings>,
    registry: Arc<HealthRegistry>,
    /// Serializes asks so two questions in one chat never pick the same code.
    ask_lock: tokio::sync::Mutex<()>,
    wake: Notify,
    /// Counts closes, so in-process askers wake on an answer instead of their next poll.
    closes: watch::Sender<u64>,
    /// Counts asks and closes, for the console's live page.
    changes: watch::Sender<u64>,
    cancel: CancellationToken,
    /// `[owner] routes` (`routes.rs`).
    routes: RwLock<Vec<AccountKey>>,
}

impl ConfirmService {
    /// A service that queues its messages in `parts.outbox`; build it before the pipeline and
    /// give the pipeline its [`ConfirmService::hooks`].
    pub fn new(parts: ConfirmParts) -> Arc<Self> {
        Arc::new(ConfirmService {
            store: parts.store,
            outbox: parts.outbox,
            credentials: parts.credentials,
            clock: parts.clock,
            capabilities: parts.capabilities,
            index: Mutex::new(Index::default()),
            settings: RwLock::new(ConfirmSettings::default()),
            registry: parts.registry,
            ask_lock: tokio::sync::Mutex::new(()),
            wake: Notify::new(),
            closes: watch::channel(0).0,
            changes: watch::channel(0).0,
            cancel: CancellationToken::new(),
            routes: RwLock::new(Vec::new()),
        })
    }

    /// What the pipeline is built with so questions work: this service claims answers, asks
    /// before tools run, and learns where question messages landed.
    pub fn hooks(self: &Arc<Self>) -> Hooks {
        Hooks {
            answers: Some(self.clone()),
            approver: Some(Arc::new(approvals::ConfirmApprover::new(self))),
            deliveries: Some(self.clone()),
            status_line: None,
        }
    }

    /// Loads stored questions (re-queueing pending ones, idempotently) and starts the deadline loop.
    ///
    /// Call before the accounts start, so an answer arriving first finds its question.
    pub async fn start(self: &Arc<Self>, settings: ConfirmSettings) -> Result<(), StoreError> {
        self.set_settings(settings);
        let now = self.clock.now_ms();
        let rows = self
            .store
            .call(move |t| {
                db::purge(t, now.saturating_sub(PURGE_AFTER_MS))?;
                db::open(t, now.saturating_sub(KEEP_CLOSED_MS))
            })
            .await?;
        let mut pending = Vec::new();
        for row in rows {
            let q = Question::restored(row, now);
            if q.row.state == ConfirmState::Pending {
                pending.push(q.clone());
            }
            self.lock().put(q);
        }
        for q in &pending {
            // Same outbox key as before the restart: queued once, whatever state it was in.
            if let Err(e) = self.enqueue_question(q).await {
                tracing::error!(question = %q.id(), error = %e, "cannot re-queue a question");
            }
        }
        tracing::info!(pending = pending.len(), "confirm questions loaded");
        tokio::spawn(self.clone().drive());
        Ok(())
    }

    /// Replaces the settings (on reload).
    pub fn set_settings(&self, settings: ConfirmSettings) {
        if let Ok(mut s) = self.settings.write() {
            *s = settings;
        }
    }

    /// Stops the deadline loop (shutdown); stored questions stay as they are.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// The service's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Where a question stands; asking keeps a pending question alive for another minute.
    pub async fn status(&self, id: &str) -> Result<ConfirmInfo, ConfirmError> {
        let seq = parse_id(id).ok_or_else(|| ConfirmError::NotFound(id.to_string()))?;
        let now = self.clock.now_ms();
        let remembered = self.lock().get(seq).cloned();
        let Some(q) = remembered else {
            let row = self.store.call(move |t| db::get(t, seq)).await?;
            return row
                .map(|row| Question::stored(row, now).info())
                .ok_or_else(|| ConfirmError::NotFound(id.to_string()));
        };
        self.settle(&q, now).await?;
        let q = self.lock().polled(seq, now);
        Ok(q.ok_or_else(|| ConfirmError::NotFound(id.to_string()))?
            .info())
    }

    /// Records an answer given outside text (a Feishu card click). `id_or_code` is `q-7` or a
    /// code (`7F`, when exactly one pending question has it); the caller has checked that `by`
    /// is the owner of the question's account.
    pub async fn answer(
        &self,
        id_or_code: &str,
        yes: bool,
        by: &str,
    ) -> Result<AnswerOutcome, ConfirmError> {
        let picked = self.lock().pick(id_or_code);
        let seq = picked.map_err(|p| match p {
            Pick::NotFound => ConfirmError::NotFound(id_or_code.to_string()),
            Pick::Several => ConfirmError::InvalidRequest(format!(
                "several questions use code {id_or_code}; answer by id"
            )),
        })?;
        let q = self.lock().get(seq).cloned();
        if let Some(q) = &q {
            self.settle(q, self.clock.now_ms()).await?;
        }
        self.record(seq, Answer::once(yes), Some(by), None).await
    }

    /// A remembered question, without keeping it alive (the Feishu click handler's owner check,
    /// diagnostics, tests). Questions closed more than an hour ago are forgotten.
    pub fn view(&self, id: &str) -> Option<QuestionView> {
        let q = self.lock().get(parse_id(id)?).cloned()?;
        Some(QuestionView {
            info: q.info(),
            account: q.account.clone(),
            chat: q.row.chat.clone(),
            code: q.row.code.clone(),
            reason: q.row.reason.clone(),
            message_id: q.row.platform_msg.clone(),
        })
    }

    /// Question `id` as its chat should show it now: the question while pending, how it ended
    /// after (what a clicked card is replaced with).
    pub fn body(&self, id: &str) -> Option<Body> {
        let q = self.lock().get(parse_id(id)?).cloned()?;
        Some(self.body_of(&q))
    }

    /// What `q` looks like now: the question while pending, how it ended after.
    fn body_of(&self, q: &Question) -> Body {
        let buttons = q.account.as_ref().is_some_and(|a| self.can(a).buttons);
        q.body(
            buttons,
            self.settings().timezone,
            self.clock.now_ms() / 1000,
        )
    }

    /// What `account` can do (known whether or not it runs).
    fn can(&self, account: &AccountKey) -> Capabilities {
        (self.capabilities)(account)
    }

    // ---- state changes ----

    /// Moves `seq` from pending to `state` in the store, then in memory; `always` records an
    /// "always" with a yes when the question offered it.
    async fn close(
        &self,
        seq: i64,
        state: ConfirmState,
        reason: Option<&str>,
        by: Option<&str>,
        msg: Option<&str>,
        always: bool,
    ) -> Result<Closed, ConfirmError> {
        let at_ms = self.clock.now_ms();
        let (reason_s, by_s, msg_s) = (
            reason.map(str::to_string),
            by.map(str::to_string),
            msg.map(str::to_string),
        );
        let (changed, row) = self
            .store
            .call(move |t| {
                let c = db::Close {
                    seq,
                    state,
                    reason: reason_s.as_deref(),
                    by: by_s.as_deref(),
                    msg: msg_s.as_deref(),
                    at_ms,
                    always,
                };
                let changed = db::close(t, &c)?;
                Ok((changed, db::get(t, seq)?))
            })
            .await?;
        let Some(row) = row else {
            // Deleted under us (`channel_logout`): forget it.
            self.lock().remove(seq);
            return Err(ConfirmError::NotFound(format!("q-{seq}")));
        };
        let snapshot = self.lock().closed(seq, row.clone());
        if let Some(q) = &snapshot {
            self.clear_note(q);
        }
        if changed {
            self.closes.send_modify(|n| *n = n.wrapping_add(1));
            self.changed();
        }
        match (changed, snapshot) {
            (true, Some(q)) => Ok(Closed::Now(q)),
            _ => Ok(Closed::Already(row)),
        }
    }

    fn settings(&self) -> ConfirmSettings {
        self.settings.read().map(|s| s.clone()).unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        match self.index.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}
