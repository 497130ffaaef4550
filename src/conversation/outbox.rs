//! The outbox as the bridge's own writers see it (confirm questions, digests): queue a message or
//! an update, read how one went. Built on the store before the pipeline, so a service the
//! pipeline calls into (the confirm service) can be built first and handed to it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::body::Body;
use super::chunk::split;
use super::deliveries::{self, Board};
use super::journal::{self, Delivery, NewOutbound, NewUpdate};
use super::message::{OutboundKind, ReplyContext};
use super::moves;
use super::{AccountRuntime, lock};
use crate::config::AccountKey;
use crate::ids::{ChatId, DeliveryState, OutboxKey};
use crate::protocol::DeliveryCounts;
use crate::store::{Store, StoreError};

/// Characters per piece for an account that is not attached (its sender, which knows the
/// platform's limit, is not there): WeChat's limit, the smallest of the platforms.
const DETACHED_MAX_CHARS: usize = 2000;

/// The attached accounts, shared by the pipeline (which attaches them) and its outbox handles
/// (which wake a chat's sender after queueing).
pub(super) type Attached = Mutex<HashMap<AccountKey, Arc<AccountRuntime>>>;

/// A send-only handle on the conversation outbox; cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    pub(super) store: Store,
    pub(super) attached: Arc<Attached>,
    /// Proactive items by delivery state, as `status` reads them.
    pub(super) board: Arc<Board>,
    /// `[owner] routes`, set by the owner service at start and reload, so every writer of the
    /// owner's messages (digests too) picks its first route the same way.
    owner_routes: Arc<std::sync::RwLock<Vec<AccountKey>>>,
}

impl Outbox {
    /// A handle over `store`; pass it to [`super::Conversation::build`] to share its accounts.
    pub fn new(store: Store) -> Self {
        Outbox {
            store,
            attached: Arc::new(Mutex::new(HashMap::new())),
            board: Arc::new(Board::default()),
            owner_routes: Arc::default(),
        }
    }

    /// Proactive items by delivery state, without touching the store (`status` answers while
    /// the store is busy): the latest count a change published.
    pub fn deliveries(&self) -> DeliveryCounts {
        self.board.counts(&self.attached_accounts())
    }

    /// Changes with every published count (the owner's mover wakes on it).
    pub fn delivery_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.board.changes()
    }

    /// The accounts whose chats have messages waiting now, by the latest count.
    pub fn waiting_accounts(&self) -> HashSet<String> {
        self.board.waiting_accounts()
    }

    /// The proactive messages whose first piece is pending on `accounts`.
    pub async fn pending_messages(
        &self,
        accounts: Vec<String>,
    ) -> Result<Vec<moves::PendingMessage>, StoreError> {
        self.store
            .call(move |t| moves::pending_messages(t, &accounts))
            .await
    }

    /// Moves the pending message `m` to `to`'s `chat` (see `moves`), with `also` (what else
    /// follows it) in the same transaction; then wakes that chat, wakes the chat it left (its
    /// sender may wait to retry it: `ChatRuntime::head_gone`) and recounts. `None` when
    /// nothing of it was pending.
    pub async fn move_message(
        &self,
        m: &moves::PendingMessage,
        to: &AccountKey,
        chat: &ChatId,
        also: Option<moves::AlsoMove>,
    ) -> Result<Option<moves::Moved>, StoreError> {
        let (f, k, a, c, board) = (
            m.account.clone(),
            m.key.clone(),
            to.clone(),
            chat.clone(),
            self.board.clone(),
        );
        let (moved, stamp, count) = self
            .store
            .call(move |t| {
                let moved = moves::move_with(t, &f, &k, &a, &c, also)?;
                Ok((moved, board.stamp(), deliveries::count(t)?))
            })
            .await?;
        self.board.publish(stamp, count);
        if moved.is_some() {
            self.wake(to, chat);
            if let Some(from) = AccountKey::parse(&m.account)
                && let Some(rt) = self.runtime(&from)
                && let Some(conv) = rt.conversation.upgrade()
            {
                conv.chat(&rt, &m.chat).head_gone();
            }
        }
        Ok(moved)
    }

    /// `account`'s pending items of every kind and why their chats wait (`owner/stuck.rs`).
    pub async fn account_waits(
        &self,
        account: &AccountKey,
    ) -> Result<super::AccountWaits, StoreError> {
        let a = account.to_string();
        self.store
            .call(move |t| super::waits::of_account(t, &a))
            .await
    }

    /// Takes `[owner] routes` (the owner service, at start and at every reload).
    pub fn set_owner_routes(&self, routes: Vec<AccountKey>) {
        *self.owner_routes.write().unwrap_or_else(|p| p.into_inner()) = routes;
    }

    /// `[owner] routes`, most preferred first (empty: none configured).
    pub fn owner_routes(&self) -> Vec<AccountKey> {
        self.owner_routes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The first of the owner's routes that can deliver now: its account attached and none of
    /// its chats waiting, by the latest count.
    pub fn owner_route_now(&self) -> Option<AccountKey> {
        let (attached, waiting) = (self.attached_accounts(), self.waiting_accounts());
        self.owner_routes().into_iter().find(|r| {
            let id = r.to_string();
            attached.contains(&id) && !waiting.contains(&id)
        })
    }

    /// The accounts attached now (`<channel>:<account>`): those whose sender runs.
    pub fn attached_accounts(&self) -> HashSet<String> {
        lock(&self.attached).keys().map(|k| k.to_string()).collect()
    }

    /// Recounts proactive items from the store and publishes the count (at start, and after a
    /// change made outside the pipeline's own calls).
    pub async fn refresh_deliveries(&self) -> Result<(), StoreError> {
        let board = self.board.clone();
        let (stamp, count) = self
            .store
            .call_short(move |t| Ok((board.stamp(), deliveries::count(t)?)))
            .await?;
        self.board.publish(stamp, count);
        Ok(())
    }

    /// Queues a message the bridge writes on its own (a digest, a question); idempotent by
    /// `key`. `body` says what it means when it is more than its `text` (`None`: plain text).
    pub async fn send_proactive(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        text: &str,
        body: Option<&Body>,
        key: &str,
    ) -> Result<(), StoreError> {
        let max = self
            .runtime(account)
            .map_or(DETACHED_MAX_CHARS, |r| r.link.sender.limits().max_chars);
        let body = body.cloned().unwrap_or_default();
        self.enqueue(
            account,
            chat,
            &split(text, max),
            &body,
            key,
            &ReplyContext::default(),
            OutboundKind::Proactive,
        )
        .await?;
        self.wake(account, chat);
        // The item is stored; a count that cannot be made now is made by the next change.
        if let Err(e) = self.refresh_deliveries().await {
            tracing::warn!(error = %e, "cannot count the outbox's delivery states");
        }
        Ok(())
    }

    /// [`Outbox::send_proactive`] with media behind the text (`send --file`): the text's pieces
    /// (none when it is empty), then one piece per `Body::Media`, all under `key`, in one
    /// transaction, so they wait, move and settle as one message.
    pub async fn send_proactive_with(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        text: &str,
        media: &[Body],
        key: &str,
    ) -> Result<(), StoreError> {
        if media.is_empty() {
            return self.send_proactive(account, chat, text, None, key).await;
        }
        let max = self
            .runtime(account)
            .map_or(DETACHED_MAX_CHARS, |r| r.link.sender.limits().max_chars);
        let mut items: Vec<(String, Body)> = match text.trim().is_empty() {
            true => Vec::new(),
            false => split(text, max)
                .into_iter()
                .map(|p| (p, Body::Text))
                .collect(),
        };
        for m in media {
            // What a platform that cannot send the file shows: its name.
            let shown = match m {
                Body::Media(f) => format!("[{}]", f.name),
                _ => String::new(),
            };
            items.push((shown, m.clone()));
        }
        let (a, c, k) = (account.clone(), chat.clone(), key.to_string());
        self.store
            .call(move |t| {
                let reply = ReplyContext::default();
                let rows: Vec<NewOutbound<'_>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, (text, body))| NewOutbound {
                        chat: &c,
                        text,
                        body,
                        key: OutboxKey::piece(&k, i).into(),
                        reply: &reply,
                        kind: OutboundKind::Proactive,
                    })
                    .collect();
                journal::enqueue(t, &a, &rows)
            })
            .await?;
        self.wake(account, chat);
        if let Err(e) = self.refresh_deliveries().await {
            tracing::warn!(error = %e, "cannot count the outbox's delivery states");
        }
        Ok(())
    }

    /// Queues an update of the message queued under `target` (piece 0) to `body`, idempotent
    /// by `key`. It goes out after everything queued before it in the chat; when that message
    /// was never sent, has no platform id, or the platform will not update it (too old,
    /// deleted, no editing), `text` and `body` go out as a new message instead. `text` must fit
    /// one message.
    pub async fn update_proactive(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        target: &str,
        text: &str,
        body: &Body,
        key: &str,
    ) -> Result<(), StoreError> {
        let (a, c, text, body, key, target_key) = (
            account.clone(),
            chat.clone(),
            text.to_string(),
            body.clone(),
            String::from(OutboxKey::piece(key, 0)),
            String::from(OutboxKey::piece(target, 0)),
        );
        self.store
            .call(move |t| {
                let u = NewUpdate {
                    chat: &c,
                    text: &text,
                    body: &body,
                    key,
                    target_key,
                };
                journal::enqueue_update(t, &a, &u)
            })
            .await?;
        self.wake(account, chat);
        Ok(())
    }

    /// Where the outbox item queued under `key` (piece 0) stands.
    pub async fn delivery_state(&self, key: &str) -> Result<Option<DeliveryState>, StoreError> {
        Ok(self.delivery(key).await?.map(|d| d.state))
    }

    /// Where the outbox item queued under `key` (piece 0) stands, and what the platform said
    /// about it once sent (its message id, the chat it landed in).
    pub async fn delivery(&self, key: &str) -> Result<Option<Delivery>, StoreError> {
        let k = String::from(OutboxKey::piece(key, 0));
        self.store.call(move |t| journal::delivery(t, &k)).await
    }

    /// Stores pieces in the outbox under `key/<n>`; the body rides on the first piece.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn enqueue(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        pieces: &[String],
        body: &Body,
        key: &str,
        reply: &ReplyContext,
        kind: OutboundKind,
    ) -> Result<usize, StoreError> {
        let (account, chat, pieces, body, key, reply) = (
            account.clone(),
            chat.clone(),
            pieces.to_vec(),
            body.clone(),
            key.to_string(),
            reply.clone(),
        );
        self.store
            .call(move |t| {
                let items: Vec<NewOutbound<'_>> = pieces
                    .iter()
                    .enumerate()
                    .map(|(i, p)| NewOutbound {
                        chat: &chat,
                        text: p,
                        body: if i == 0 { &body } else { &Body::Text },
                        key: OutboxKey::piece(&key, i).into(),
                        reply: &reply,
                        kind,
                    })
                    .collect();
                journal::enqueue(t, &account, &items)
            })
            .await
    }

    /// The attached account's runtime, if it is attached.
    pub(super) fn runtime(&self, account: &AccountKey) -> Option<Arc<AccountRuntime>> {
        lock(&self.attached).get(account).cloned()
    }

    /// Wakes the chat's sender when the account is attached (else its attach resumes the item).
    fn wake(&self, account: &AccountKey, chat: &ChatId) {
        if let Some(rt) = self.runtime(account)
            && let Some(conv) = rt.conversation.upgrade()
        {
            conv.chat(&rt, chat).wake_send();
        }
    }
}
