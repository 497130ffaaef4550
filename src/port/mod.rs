//! What the daemon lends each account's adapter: its settings, its own namespaced state, its
//! stored login, and an inbox into the conversation pipeline. Adapters never see the store, the
//! conversation, the credential store or the agent configuration; this is the whole seam.
//! Mail goes through it like every platform: what it needs beyond a chat platform is lent here
//! too, narrowed to what it does (its own tables, [`Tables`]; the accounts it reports through,
//! [`Relay`] and [`Owners`]; what its accounts share, [`Shared`]).
//!
//! The supervisor hands the account's health to each run; [`AccountPort::attach`] joins the two
//! into the pipeline's view of the account, built here once for every platform.

pub(crate) mod evidence;
pub mod held;
mod login;
pub mod login_flow;
pub mod login_store;
pub mod pace;
pub mod pair_owner;
pub mod pairing;
mod relay;
pub mod setup;
mod shared;
mod store_pause;
mod tables;
mod unavailable;

use std::sync::Arc;

pub use login::{LoginError, StoredLogin, login_hint};
pub use relay::{Owned, Owners, Relay};
pub use shared::Shared;
pub use store_pause::StorePause;
pub use tables::Tables;
pub use unavailable::unavailable;

use crate::config::AccountSpec;
use crate::conversation::{
    Accepted, AccountLink, Attachment, ButtonAnswers, ChatSender, Conversation, Inbound,
};
use crate::ids::{ChatId, OutboxKey, SenderId};
use crate::secrets::{CredentialStore, Credentials};
use crate::store::{AccountState, StateError, StateTxn, StoreError};
use crate::supervisor::{Capabilities, ComponentError, HealthHandle};

/// One account's port, built by the platform factory for each account it builds; cheap to clone.
#[derive(Clone)]
pub struct AccountPort {
    clock: crate::clock::Clock,
    answers: Option<Arc<dyn ButtonAnswers>>,
    shared: Shared,
    spec: AccountSpec,
    state: AccountState,
    tables: Tables,
    credentials: CredentialStore,
    conversation: Arc<Conversation>,
}

/// What a run tells the pipeline about itself when it attaches (the rest comes from the spec).
pub struct LinkParts {
    /// The run's health (send-path notes go there).
    pub health: HealthHandle,
    /// How the channel is named to the agent and to people ("WeChat", "Feishu").
    pub label: &'static str,
    /// What the account can do (the adapter's pure `capabilities()`).
    pub capabilities: Capabilities,
    /// The authenticated owner's platform id, when known.
    pub owner: Option<String>,
    /// How to send.
    pub sender: Arc<dyn ChatSender>,
}

/// The daemon's parts every port is cut from; the platform factory holds one and cuts a port
/// for each account it builds.
#[derive(Clone)]
pub struct Ports {
    clock: crate::clock::Clock,
    answers: Option<Arc<dyn ButtonAnswers>>,
    shared: Shared,
    store: crate::store::Store,
    credentials: CredentialStore,
    conversation: Arc<Conversation>,
}

impl Ports {
    /// Ports over the daemon's store, credential store and pipeline.
    pub fn new(
        store: crate::store::Store,
        credentials: CredentialStore,
        conversation: Arc<Conversation>,
    ) -> Self {
        Ports {
            clock: crate::clock::Clock::system(),
            answers: None,
            shared: Shared::default(),
            store,
            credentials,
            conversation,
        }
    }

    /// The same ports on another clock (tests).
    pub fn with_clock(mut self, clock: crate::clock::Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The same ports, whose accounts hand button presses on questions to `answers`.
    pub fn with_answers(mut self, answers: Arc<dyn ButtonAnswers>) -> Self {
        self.answers = Some(answers);
        self
    }

    /// The same ports, whose accounts find `value` by its type ([`AccountPort::shared`]): what
    /// one platform's accounts share (mail: its router, time zone and triage model).
    pub fn with_shared<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.shared = self.shared.with(value);
        self
    }

    /// The port of `spec`'s account.
    pub fn port(&self, spec: &AccountSpec) -> AccountPort {
        AccountPort {
            clock: self.clock.clone(),
            answers: self.answers.clone(),
            shared: self.shared.clone(),
            state: AccountState::new(self.store.clone(), spec.key.to_string()),
            tables: Tables::new(self.store.clone()),
            spec: spec.clone(),
            credentials: self.credentials.clone(),
            conversation: self.conversation.clone(),
        }
    }
}

impl AccountPort {
    /// The account as configured.
    pub fn spec(&self) -> &AccountSpec {
        &self.spec
    }

    /// The daemon's clock: what the adapter stamps stored times with.
    pub fn clock(&self) -> &crate::clock::Clock {
        &self.clock
    }

    /// Who answers the owner's button presses on questions (none: buttons say "not open").
    pub fn answers(&self) -> Option<Arc<dyn ButtonAnswers>> {
        self.answers.clone()
    }

    /// The account's own state: cursor, peers, send records (names are the adapter's).
    pub fn state(&self) -> &AccountState {
        &self.state
    }

    /// What the composition root set for this platform's accounts to share, found by its type
    /// (`None`: nothing of that type was set).
    pub fn shared<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.shared.get()
    }

    /// The tables of a platform that keeps its records in tables of its own (mail), rather than
    /// in [`AccountPort::state`].
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// The pipeline as a platform that speaks through other accounts sees it (mail's digests
    /// and mail-chat answers go out through the account `report_to` names).
    pub fn relay(&self) -> Relay {
        Relay::new(self.conversation.clone())
    }

    /// Who owns each account (the owner a digest goes to), without their logins' secrets.
    pub fn owners(&self) -> Owners {
        Owners::new(self.credentials.clone())
    }

    /// The stored login, typed by the adapter; read at the start of every run, so a `login`
    /// takes effect at the account's next run without rebuilding the component.
    pub async fn login<L: StoredLogin>(&self) -> Result<L, ComponentError> {
        login::load(&self.credentials, &self.spec).await
    }

    /// Replaces the stored login (pairing records the owner with it).
    pub async fn save_login(&self, creds: Credentials) -> Result<(), String> {
        let (store, id) = (self.credentials.clone(), self.spec.key.to_string());
        match tokio::task::spawn_blocking(move || store.save(&id, &creds)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Attaches this run to the pipeline; the chats' workers run until the result is dropped.
    /// Attaching again (a new owner) replaces the earlier attachment.
    pub fn attach(&self, parts: LinkParts) -> Attachment {
        let s = &self.spec;
        self.conversation.attach(AccountLink {
            account: s.key.clone(),
            senders: s.senders,
            remote_tools: s.remote_tools,
            approvals: s.approvals,
            purpose: s.purpose,
            owner: parts.owner.map(SenderId::new),
            workspace: s.workspace.clone(),
            media: s.media,
            channel_label: parts.label,
            language: s.language,
            capabilities: parts.capabilities,
            health: parts.health,
            sender: parts.sender,
        })
    }

    /// Journals a batch; returns once it is stored, and only then may the adapter ACK or move
    /// its platform cursor. Redeliveries are ignored.
    pub async fn accept(&self, batch: Vec<Inbound>) -> Result<Accepted, StoreError> {
        let started = std::time::Instant::now();
        let out = self.conversation.accept(batch).await;
        crate::telemetry::journal_commit(&self.spec.key.to_string(), started.elapsed());
        out
    }

    /// [`AccountPort::accept`], with the adapter's own state (`also`: the poll cursor, peers'
    /// tokens) written in the same commit, so both are stored or neither. `also` runs even for
    /// an empty batch. `arrived` is when the platform handed the batch over (WeChat: the poll
    /// response's last byte): the commit histogram measures from there, since a crash at any
    /// moment after it loses the batch.
    pub async fn accept_with<F>(
        &self,
        batch: Vec<Inbound>,
        arrived: std::time::Instant,
        also: F,
    ) -> Result<Accepted, StoreError>
    where
        F: FnOnce(&StateTxn<'_>) -> Result<(), StateError> + Send + 'static,
    {
        let out = self
            .conversation
            .accept_with(&self.spec.key, batch, also)
            .await;
        crate::telemetry::journal_commit(&self.spec.key.to_string(), arrived.elapsed());
        out
    }

    /// Counts a message the adapter decided not to pass on, by `reason` (a stable snake_case
    /// code such as `redelivered_copy`): metrics show it as `messages_dropped{reason}`. Every
    /// such decision is counted, so nothing the platform delivered vanishes without a trace.
    pub fn dropped(&self, reason: &str) {
        self.conversation.count_drop(&self.spec.key, reason);
    }

    /// Queues a message the adapter writes on its own (the pairing announcement), idempotent by
    /// `key`.
    pub async fn announce(
        &self,
        chat: &ChatId,
        text: &str,
        key: OutboxKey,
    ) -> Result<(), StoreError> {
        self.announce_body(chat, text, None, key).await
    }

    /// [`AccountPort::announce`] of a message that is more than its text (`body`: a file to
    /// send after it; `None`: plain text), as when WeChat's adapter sends a held reply again.
    pub async fn announce_body(
        &self,
        chat: &ChatId,
        text: &str,
        body: Option<&crate::conversation::Body>,
        key: OutboxKey,
    ) -> Result<(), StoreError> {
        let key = String::from(key);
        self.conversation
            .send_proactive(&self.spec.key, chat, text, body, &key)
            .await
    }
}
