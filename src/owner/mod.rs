//! Reaching the owner: `scv-bridge send` (a text to the owner now or at a time) and where each
//! such message stands.
//!
//! A send is stored first (`owner_sends`, so a scheduled one survives restarts), then handed to
//! the conversation outbox under `OutboxKey::owner_send(id)` when due, on the route the confirm
//! questions use (`to`, else the `notify` account's owner). The outbox's sender takes it from
//! there, and its delivery state (`conversation/deliveries.rs`) is what `send_status` reports.
//! Made by the daemon when it runs a conversation pipeline; its clock is the daemon's one clock.

mod alerts;
pub mod cli;
pub mod files;
mod mover;
mod scheduler;
mod sends;
mod stuck;
pub mod when;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::config::AccountKey;
use crate::confirm::CapabilityLookup;
use crate::confirm::route::{self, Parent, Route};
use crate::conversation::{DeliveryState, Outbox, OutboxKey};
use crate::protocol::{SendInfo, SendState, WaitWhy};
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::HealthRegistry;
use sends::{Row, RowState};

/// The longest text a `send` takes (the outbox splits it for the platform).
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// What the service is built from (the daemon's parts).
pub struct OwnerParts {
    /// The daemon's store.
    pub store: Store,
    /// The pipeline's outbox.
    pub outbox: Outbox,
    /// Where owners are stored (for an account that has not reported its owner yet).
    pub credentials: CredentialStore,
    /// The daemon's one clock.
    pub clock: Clock,
    /// What each account can do.
    pub capabilities: CapabilityLookup,
    /// The accounts' health (their owners, whether they run).
    pub registry: Arc<HealthRegistry>,
    /// The confirm service, so a question moves with its message.
    pub confirm: Option<Arc<crate::confirm::ConfirmService>>,
}

/// The settings a reload may change.
#[derive(Debug, Clone, Default)]
pub struct OwnerSettings {
    /// Where a send without `to` goes.
    pub notify: Option<AccountKey>,
    /// The zone `at` is read in (none: the system's).
    pub timezone: Option<chrono_tz::Tz>,
    /// `[owner] routes`: the owner's chats, most preferred first.
    pub routes: Vec<AccountKey>,
    /// `[owner] move_after_seconds`.
    pub move_after: std::time::Duration,
    /// `[owner] alert_after_seconds`: how long a route's messages wait before the owner is told.
    pub alert_after: std::time::Duration,
    /// Each account's `language` (alerts are written in the target route's).
    pub languages: std::collections::BTreeMap<AccountKey, crate::words::Language>,
    /// Where `send --file` may take files from, and how large.
    pub files: files::FileRules,
}

impl OwnerSettings {
    /// From the configuration.
    pub fn from_config(c: &crate::config::Config) -> Self {
        OwnerSettings {
            notify: c.notify.clone(),
            timezone: c.timezone,
            routes: c.owner.routes.clone(),
            move_after: c.owner.move_after(),
            alert_after: c.owner.alert_after(),
            languages: c
                .accounts
                .iter()
                .map(|(k, a)| (k.clone(), a.language))
                .collect(),
            files: files::FileRules {
                places: c
                    .accounts
                    .values()
                    .filter_map(|a| {
                        a.workspace.clone().map(|dir| files::Place {
                            dir,
                            max_bytes: a.media.max_item_bytes,
                        })
                    })
                    .collect(),
            },
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerError {
    /// The request is malformed (for people).
    InvalidRequest(String),
    /// No such send.
    NotFound(String),
    /// Too late for that (a cancel of a send already queued).
    Conflict(String),
    /// The store failed.
    Internal(String),
}

impl OwnerError {
    /// For people.
    pub fn message(&self) -> &str {
        match self {
            OwnerError::InvalidRequest(m)
            | OwnerError::NotFound(m)
            | OwnerError::Conflict(m)
            | OwnerError::Internal(m) => m,
        }
    }
}

impl From<crate::store::StoreError> for OwnerError {
    fn from(e: crate::store::StoreError) -> Self {
        OwnerError::Internal(e.to_string())
    }
}

/// The owner's messages: `send`, `send_status`, `send_cancel`, and the scheduler.
pub struct OwnerService {
    parts: OwnerParts,
    settings: Mutex<OwnerSettings>,
    /// Woken when a send is stored, so the scheduler looks at its next due time again.
    wake: Notify,
    /// Held while due sends are handed over: `send` (a send due now) and the scheduler may
    /// both look, and one row must be handed over once, on one route.
    handing: tokio::sync::Mutex<()>,
    /// The clock reading of the scheduler's last complete pass (tests wait on it).
    passed: watch::Sender<u64>,
    /// The clock reading of the mover's last complete pass.
    moved_up_to: watch::Sender<u64>,
    /// The clock reading of the alert watcher's last complete pass.
    alerted_up_to: watch::Sender<u64>,
    cancel: CancellationToken,
}

impl OwnerService {
    /// The service; [`OwnerService::start`] runs its scheduler.
    pub fn new(parts: OwnerParts, settings: OwnerSettings) -> Arc<Self> {
        parts.outbox.set_owner_routes(settings.routes.clone());
        Arc::new(OwnerService {
            parts,
            settings: Mutex::new(settings),
            wake: Notify::new(),
            handing: tokio::sync::Mutex::new(()),
            passed: watch::channel(0).0,
            moved_up_to: watch::channel(0).0,
            alerted_up_to: watch::channel(0).0,
            cancel: CancellationToken::new(),
        })
    }

    /// Starts the scheduler (sends due while the daemon was down go out at once).
    pub fn start(self: &Arc<Self>) {
        tokio::spawn(scheduler::run(self.clone()));
        tokio::spawn(mover::run(self.clone()));
        tokio::spawn(alerts::run(self.clone()));
    }

    /// Stops the scheduler.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// Takes a reloaded configuration's `notify` and `timezone`.
    pub fn set_settings(&self, s: OwnerSettings) {
        // Digests read the routes from the outbox they share with this service.
        self.parts.outbox.set_owner_routes(s.routes.clone());
        *self.settings.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    fn settings(&self) -> OwnerSettings {
        self.settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until `next` on the daemon's clock; forever when there is none.
    async fn sleep_until(&self, next: Option<u64>) {
        match next {
            Some(t) => self.parts.clock.sleep_until(t).await,
            None => std::future::pending().await,
        }
    }

    /// Resolves once the scheduler, the mover and the alert watcher have looked at the clock reading `unix_ms` or
    /// later and acted on it (tests: "nothing more happens before this time").
    pub async fn passed(&self, unix_ms: u64) {
        for w in [&self.passed, &self.moved_up_to, &self.alerted_up_to] {
            let mut rx = w.subscribe();
            let _ = rx.wait_for(|t| *t >= unix_ms).await;
        }
    }

    /// Stores a send and, when it is due now, hands it to the outbox before answering.
    pub async fn send(
        &self,
        text: &str,
        to: Option<&str>,
        at: Option<&str>,
        in_seconds: Option<u64>,
    ) -> Result<SendInfo, OwnerError> {
        self.send_with_files(text, &[], to, at, in_seconds).await
    }

    /// [`OwnerService::send`] with files (`send --file`, absolute paths), checked now
    /// (`files::check`) and stored with the text, so a restart delivers them once.
    pub async fn send_with_files(
        &self,
        text: &str,
        files: &[std::path::PathBuf],
        to: Option<&str>,
        at: Option<&str>,
        in_seconds: Option<u64>,
    ) -> Result<SendInfo, OwnerError> {
        if text.trim().is_empty() && files.is_empty() {
            return Err(OwnerError::InvalidRequest(
                "the text is empty and no --file is given".into(),
            ));
        }
        if text.len() > MAX_TEXT_BYTES {
            return Err(OwnerError::InvalidRequest(format!(
                "the text is longer than {MAX_TEXT_BYTES} bytes; send a file's path instead"
            )));
        }
        let to = to.map(str::trim).filter(|t| !t.is_empty());
        if let Some(t) = to {
            parse_to(t)?;
        }
        let now = self.parts.clock.now_ms();
        let settings = self.settings();
        let due = when::due_ms(at, in_seconds, now, settings.timezone)
            .map_err(OwnerError::InvalidRequest)?;
        let media = files::check(files, &settings.files)?;
        let (target, body) = (to.map(str::to_string), text.to_string());
        let id = self
            .parts
            .store
            .call(move |t| sends::insert(t, target.as_deref(), &body, &media, due))
            .await?;
        if due <= now {
            self.hand_over_due(now).await;
        } else {
            self.wake.notify_one();
        }
        self.status_of(id).await
    }

    /// Where send `id` (`s-<n>`) stands.
    pub async fn status(&self, id: &str) -> Result<SendInfo, OwnerError> {
        self.status_of(parse_id(id)?).await
    }

    /// The sends not yet handed to the outbox, soonest first (the agent tool `list_scheduled`).
    pub async fn scheduled(&self) -> Result<Vec<SendInfo>, OwnerError> {
        let rows = self.parts.store.call(sends::scheduled).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(self.status_of(r.id).await?);
        }
        Ok(out)
    }

    /// Cancels a send that is not yet due; one already handed to the outbox is a conflict.
    pub async fn cancel(&self, id: &str) -> Result<SendInfo, OwnerError> {
        let n = parse_id(id)?;
        // Not while a hand-over runs: it could queue the text after this marked it cancelled.
        let _one_at_a_time = self.handing.lock().await;
        let done = self
            .parts
            .store
            .call(move |t| sends::settle(t, n, RowState::Cancelled, None))
            .await?;
        let info = self.status_of(n).await?;
        if !done && info.state != SendState::Cancelled {
            return Err(OwnerError::Conflict(format!(
                "{id} is already {}; only a send not yet due can be cancelled",
                serde_json::to_value(info.state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            )));
        }
        Ok(info)
    }

    /// Hands every send due by `now_ms` to the outbox; returns how many could not be (the
    /// store failed: tried again at the next pass).
    async fn hand_over_due(&self, now_ms: u64) -> usize {
        let _one_at_a_time = self.handing.lock().await;
        let due = match self.parts.store.call(move |t| sends::due(t, now_ms)).await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the sends that are due");
                return 1;
            }
        };
        let mut failed = 0;
        for row in due {
            if let Err(e) = self.hand_over(&row).await {
                tracing::error!(send = row.id, error = %e, "cannot hand a due send to the outbox");
                failed += 1;
            }
        }
        failed
    }

    /// Chooses the route (once: a stored one is kept), queues the text under the send's key,
    /// then marks it queued. Each step may be repeated after a crash without a second message.
    async fn hand_over(&self, row: &Row) -> Result<(), crate::store::StoreError> {
        let id = row.id;
        let (account, chat) = match &row.route {
            Some((a, c)) => match AccountKey::parse(a) {
                Some(k) => (k, crate::conversation::ChatId::new(c.clone())),
                None => {
                    return self
                        .fail(id, &format!("the stored route {a} is not an account"))
                        .await;
                }
            },
            None => match self.route(row.target.as_deref()).await {
                Route::To { account, chat } => {
                    let (a, c) = (account.to_string(), chat.as_str().to_string());
                    self.parts
                        .store
                        .call(move |t| sends::set_route(t, id, &a, &c))
                        .await?;
                    (account, chat)
                }
                Route::Nowhere { reason, .. } => return self.fail(id, &reason).await,
            },
        };
        let key = OutboxKey::owner_send(id);
        let media: Vec<crate::conversation::Body> = row
            .files
            .iter()
            .cloned()
            .map(crate::conversation::Body::Media)
            .collect();
        self.parts
            .outbox
            .send_proactive_with(&account, &chat, &row.text, &media, key.as_str())
            .await?;
        self.parts
            .store
            .call(move |t| sends::settle(t, id, RowState::Queued, None))
            .await
            .map(drop)
    }

    async fn fail(&self, id: i64, reason: &str) -> Result<(), crate::store::StoreError> {
        tracing::warn!(send = id, "a send has nowhere to go");
        let reason = reason.to_string();
        self.parts
            .store
            .call(move |t| sends::settle(t, id, RowState::Failed, Some(&reason)))
            .await
            .map(drop)
    }

    /// The chat `to` names, else the `notify` account's owner chat (as confirm questions).
    async fn route(&self, to: Option<&str>) -> Route {
        let parent = match to {
            Some(t) => match parse_to(t) {
                Ok(p) => p,
                Err(e) => {
                    return Route::Nowhere {
                        account: None,
                        reason: e.message().to_string(),
                    };
                }
            },
            None => return self.owner_route().await,
        };
        let notify = self.settings().notify;
        let p = &self.parts;
        route::resolve(
            parent,
            notify.as_ref(),
            &p.registry,
            &p.capabilities,
            &p.credentials,
        )
        .await
    }

    /// With `[owner] routes`: the first route that can deliver now (its account runs and none
    /// of its chats waits), else the first that has an owner at all (the mover takes it on from
    /// there); without: the `notify` account's owner.
    async fn owner_route(&self) -> Route {
        let s = self.settings();
        let p = &self.parts;
        let (attached, waiting) = (p.outbox.attached_accounts(), p.outbox.waiting_accounts());
        let can_now = |r: &AccountKey| {
            let id = r.to_string();
            attached.contains(&id) && !waiting.contains(&id)
        };
        let ordered = s
            .routes
            .iter()
            .filter(|r| can_now(r))
            .chain(s.routes.iter().filter(|r| !can_now(r)));
        let mut first_refusal = None;
        for r in ordered {
            let parent = Parent::Account(r.clone());
            match route::resolve(parent, None, &p.registry, &p.capabilities, &p.credentials).await {
                to @ Route::To { .. } => return to,
                nowhere => {
                    first_refusal.get_or_insert(nowhere);
                }
            }
        }
        if let Some(r) = first_refusal {
            return r;
        }
        let notify = s.notify;
        route::resolve(
            Parent::Elsewhere,
            notify.as_ref(),
            &p.registry,
            &p.capabilities,
            &p.credentials,
        )
        .await
    }

    /// The wire view of send `id`: its row, and once queued, its outbox item.
    async fn status_of(&self, id: i64) -> Result<SendInfo, OwnerError> {
        let row = self
            .parts
            .store
            .call(move |t| sends::get(t, id))
            .await?
            .ok_or_else(|| OwnerError::NotFound(format!("no send s-{id}")))?;
        let mut info = SendInfo {
            id: format!("s-{id}"),
            state: SendState::Scheduled,
            route: row.route.as_ref().map(|r| r.0.clone()).unwrap_or_default(),
            due_unix_seconds: row.due_ms / 1000,
            why: None,
            reason: None,
        };
        match row.state {
            RowState::Scheduled => {}
            RowState::Cancelled => info.state = SendState::Cancelled,
            RowState::Failed => {
                info.state = SendState::Failed;
                info.reason = row.reason;
            }
            RowState::Queued => self.outbox_state(id, &mut info).await?,
        }
        Ok(info)
    }

    /// Reads a queued send's outbox item into `info`.
    async fn outbox_state(&self, id: i64, info: &mut SendInfo) -> Result<(), OwnerError> {
        let key = OutboxKey::owner_send(id);
        let Some(d) = self.parts.outbox.delivery(key.as_str()).await? else {
            // Queued yet not in the outbox: its account was logged out, which removes both.
            info.state = SendState::Failed;
            info.reason = Some("its account was logged out before it was sent".into());
            return Ok(());
        };
        let (d, route) = match (d.state, d.moved_to.as_deref().and_then(AccountKey::parse)) {
            // Moved: where it stands is its copy's state, on the route it went to.
            (DeliveryState::Moved, Some(to)) => {
                let copy = OutboxKey::moved(key.as_str(), &to);
                match self.parts.outbox.delivery(copy.as_str()).await? {
                    Some(c) => (c, to.to_string()),
                    None => (d, info.route.clone()),
                }
            }
            _ => (d, info.route.clone()),
        };
        info.route = route;
        let attached: HashSet<String> = self.parts.outbox.attached_accounts();
        (info.state, info.why, info.reason) = match d.state {
            DeliveryState::Sent if d.sent.msg_id.is_some() => (SendState::Sent, None, None),
            // Taken without a message id: nothing the platform said proves it arrived.
            DeliveryState::Sent => (SendState::SentUnconfirmed, None, None),
            DeliveryState::Failed => (SendState::Failed, None, d.error),
            DeliveryState::Moved => (SendState::Moved, None, None),
            DeliveryState::Pending => match d.wait_why {
                Some(w) => (SendState::Waiting, Some(w), None),
                None if !attached.contains(&info.route) => {
                    (SendState::Waiting, Some(WaitWhy::AccountDown), None)
                }
                None => (SendState::Queued, None, None),
            },
        };
        Ok(())
    }
}

/// Reads `s-<n>`.
fn parse_id(id: &str) -> Result<i64, OwnerError> {
    id.trim()
        .strip_prefix("s-")
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| OwnerError::NotFound(format!("no send {id}")))
}

/// Reads `to`: a bridge account (`<channel>:<account>`) or one of its chats; anything else is
/// refused (a confirm `parent` may name another system's chat, a `to` may not).
fn parse_to(to: &str) -> Result<Parent, OwnerError> {
    match route::parse_parent(Some(to)) {
        Ok(Parent::Elsewhere) | Err(_) => Err(OwnerError::InvalidRequest(format!(
            "'{to}' is not CHANNEL:ACCOUNT or CHANNEL:ACCOUNT:CHAT of a configured account (e.g. wechat:phone)"
        ))),
        Ok(p) => Ok(p),
    }
}
