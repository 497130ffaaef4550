//! A question whose message moves to the owner's next route (`owner/mover.rs` moves the
//! outbox item): the question follows it, so the owner answers where it now is, and the chat it
//! left no longer takes an answer for it.
//!
//! The question's row changes inside the message's own move transaction ([`Follow::change`],
//! run by `conversation::moves::move_with`), so a crash leaves both moved or neither: never the
//! text on the next route with its question still answerable only where it waited. Memory
//! follows once that committed ([`ConfirmService::followed`]).

use rusqlite::Transaction;

use super::super::db::{self, Row};
use super::super::index::FIRST_CHECK_MS;
use super::ConfirmService;
use crate::config::AccountKey;
use crate::conversation::moved as outbox_moves;
use crate::conversation::{AlsoMove, ChatId};
use crate::protocol::ConfirmState;

/// More moves than routes anyone lists: only a damaged store could chain this far.
const MAX_HOPS: usize = 8;

/// A pending question as the start loads it, following its message's moves: a store an older
/// build left may hold a message that moved (its own transaction) with its question not yet
/// moved (a second one) when the daemon was killed; the question follows now, so it is
/// answered where its text is. Returns the row and the `(account, chat)` it waited in before
/// its last move.
pub(super) fn follow_stored(
    t: &Transaction<'_>,
    mut row: Row,
) -> rusqlite::Result<(Row, Option<(AccountKey, String)>)> {
    for _ in 0..MAX_HOPS {
        let Some((copy, account, chat)) = outbox_moves::moved_to(t, &row.message_key)? else {
            break;
        };
        if !db::move_to(t, row.seq, &account, chat.as_str(), &copy)? {
            break;
        }
        row.account = account;
        row.chat = chat.as_str().to_string();
        row.message_key = copy;
        row.platform_msg = None;
        row.platform_chat = None;
    }
    let from = outbox_moves::moved_from(t, &row.message_key)?
        .and_then(|(a, c)| Some((AccountKey::parse(&a)?, c.as_str().to_string())));
    Ok((row, from))
}

/// A pending question about to move with its message, made by [`ConfirmService::follow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follow {
    seq: i64,
    account: AccountKey,
    chat: ChatId,
}

impl Follow {
    /// The row's change, for the move's transaction: the question takes the copy's account,
    /// chat and key (only while it is still pending; true when it did).
    pub fn change(&self) -> AlsoMove {
        let (seq, a, c) = (
            self.seq,
            self.account.to_string(),
            self.chat.as_str().to_string(),
        );
        Box::new(move |t, copy| db::move_to(t, seq, &a, &c, copy))
    }
}

impl ConfirmService {
    /// The pending question the message queued under `from_key` asks, to move with it to
    /// `account`'s `chat`; `None` when it asks none.
    pub fn follow(&self, from_key: &str, account: &AccountKey, chat: &ChatId) -> Option<Follow> {
        let seq = self
            .lock()
            .all()
            .find(|q| q.row.message_key == from_key && q.row.state == ConfirmState::Pending)
            .map(|q| q.row.seq)?;
        Some(Follow {
            seq,
            account: account.clone(),
            chat: chat.clone(),
        })
    }

    /// The move carrying `f`'s change committed as `copy_key`: the question in memory now
    /// lives there too (its old message was never sent, so its platform ids are forgotten).
    pub fn followed(&self, f: &Follow, copy_key: &str) {
        let check = self.clock.now_ms() + FIRST_CHECK_MS;
        self.lock()
            .moved(f.seq, &f.account, f.chat.as_str(), copy_key, check);
        self.wake.notify_one();
        self.changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Channel;
    use crate::conversation::{DeliveryState, Outbox, PendingMessage};
    use crate::store::Store;

    fn question(account: &AccountKey, chat: &str) -> db::Row {
        db::Row {
            seq: 0,
            account: account.to_string(),
            chat: chat.into(),
            code: "7F".into(),
            question: "Deploy?".into(),
            state: ConfirmState::Pending,
            reason: None,
            created_ms: 1,
            deadline_unix: 100,
            message_key: String::new(),
            answer_msg: None,
            closed_ms: None,
            platform_msg: None,
            platform_chat: None,
            offers_always: false,
            always: false,
        }
    }

    /// A question of one account's chat, its message waiting in the outbox to be moved to
    /// another account's.
    struct Waiting {
        from: AccountKey,
        to: AccountKey,
        row: db::Row,
        waiting: PendingMessage,
    }

    async fn waiting_question(store: &Store, outbox: &Outbox) -> Waiting {
        let (from, to) = (
            AccountKey::new(Channel::ALL[0], "first"),
            AccountKey::new(Channel::ALL[1], "next"),
        );
        let q = question(&from, "owner-a");
        let row = store
            .call(move |t| db::insert(t, &q))
            .await
            .expect("insert");
        let key = row.message_key.clone();
        outbox
            .send_proactive(&from, &ChatId::new("owner-a"), "Deploy?", None, &key)
            .await
            .expect("queue");
        let waiting = PendingMessage {
            account: from.to_string(),
            chat: ChatId::new("owner-a"),
            key,
            why: None,
        };
        Waiting {
            from,
            to,
            row,
            waiting,
        }
    }

    /// A store an older build left, killed between the message's move and its question's:
    /// the start moves the question to where its text went, and knows where it waited.
    #[tokio::test]
    async fn the_start_follows_a_message_that_moved_without_its_question() {
        let (store, _g) = Store::open_in_memory().expect("the in-memory store");
        let outbox = Outbox::new(store.clone());
        let Waiting {
            from,
            to,
            row,
            waiting,
        } = waiting_question(&store, &outbox).await;
        let moved = outbox
            .move_message(&waiting, &to, &ChatId::new("owner-b"), None)
            .await
            .expect("move")
            .expect("it was pending");
        let seq = row.seq;
        let (loaded, from_chat) = store
            .call(move |t| {
                let row = db::get(t, seq)?.expect("row");
                follow_stored(t, row)
            })
            .await
            .expect("load");
        assert_eq!(
            (
                loaded.account.as_str(),
                loaded.chat.as_str(),
                loaded.message_key.as_str()
            ),
            (to.to_string().as_str(), "owner-b", moved.copy.as_str())
        );
        assert_eq!(from_chat, Some((from.clone(), "owner-a".to_string())));
        let stored = store
            .call(move |t| db::get(t, seq))
            .await
            .expect("get")
            .expect("row");
        assert_eq!(stored, loaded, "stored as loaded");
    }

    /// A kill -9 inside the move's transaction (after the message's rows and the question's
    /// changed, before the commit) leaves neither moved; the move run again moves both.
    #[tokio::test]
    async fn a_crash_inside_the_move_leaves_the_question_and_its_message_together() {
        let (store, _g) = Store::open_in_memory().expect("the in-memory store");
        let outbox = Outbox::new(store.clone());
        let Waiting {
            from,
            to,
            row,
            waiting,
        } = waiting_question(&store, &outbox).await;
        let key = waiting.key.clone();
        let f = Follow {
            seq: row.seq,
            account: to.clone(),
            chat: ChatId::new("owner-b"),
        };
        let change = f.change();
        let killed: AlsoMove = Box::new(move |t, copy| {
            assert!(change(t, copy)?, "the question's row changed");
            // The process dies here: the transaction never commits.
            Err(rusqlite::Error::InvalidQuery)
        });
        let crashed = outbox
            .move_message(&waiting, &to, &ChatId::new("owner-b"), Some(killed))
            .await;
        assert!(crashed.is_err());
        let seq = row.seq;
        let stored = || {
            let store = store.clone();
            async move {
                store
                    .call(move |t| db::get(t, seq))
                    .await
                    .expect("get")
                    .expect("row")
            }
        };
        let before = stored().await;
        assert_eq!(
            (before.account.as_str(), before.message_key.as_str()),
            (from.to_string().as_str(), key.as_str()),
            "the question stays where its message still waits"
        );
        assert_eq!(
            outbox.delivery_state(&key).await.expect("state"),
            Some(DeliveryState::Pending)
        );

        let moved = outbox
            .move_message(&waiting, &to, &ChatId::new("owner-b"), Some(f.change()))
            .await
            .expect("move")
            .expect("it was pending");
        assert!(moved.also, "the question moved with it");
        let after = stored().await;
        assert_eq!(
            (
                after.account.as_str(),
                after.chat.as_str(),
                after.message_key.as_str()
            ),
            (to.to_string().as_str(), "owner-b", moved.copy.as_str())
        );
        assert_eq!(
            outbox.delivery_state(&key).await.expect("state"),
            Some(DeliveryState::Moved)
        );
        assert_eq!(
            outbox.delivery_state(&moved.copy).await.expect("state"),
            Some(DeliveryState::Pending)
        );
    }
}
