//! One chat's runtime: the wake-ups of its turn worker and sender, its running turn, and the
//! outbox item an answer's transaction hands the sender.

use std::sync::Mutex;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Outbound, lock, quiet};
use crate::ids::{ChatId, PlatformMsgId};

/// One chat's wake-ups and its running turn.
pub(crate) struct ChatRuntime {
    pub(super) chat: ChatId,
    /// A new message waits in the journal.
    pub(super) turn_wake: Notify,
    /// The turn worker's share of the quiescence count.
    pub(super) turn_gate: quiet::Gate,
    /// A new item waits in the outbox.
    pub(super) send_wake: Notify,
    /// The sender's share of the quiescence count.
    pub(super) send_gate: quiet::Gate,
    /// The peer wrote: a closed send window may have opened.
    pub(super) window_wake: Notify,
    /// Cancels the running agent turn (`/stop`).
    pub(super) current_turn: Mutex<Option<CancellationToken>>,
    /// The messages the running turn answers (a burst), which `/stop` leaves for it to end.
    pub(super) running: Mutex<Vec<PlatformMsgId>>,
    /// The outbox's next item as an answer's own transaction read it, for a sender that would
    /// otherwise read it again (see [`ChatRuntime::take_handed`]).
    pub(super) handed: Mutex<Option<Outbound>>,
}

impl ChatRuntime {
    /// A new chat's runtime, its two gates counted in `quiet`; the pipeline makes one per chat
    /// on first use and keeps it for the account's run.
    pub(super) fn new(chat: ChatId, quiet: &quiet::Quiet) -> Self {
        ChatRuntime {
            chat,
            turn_wake: Notify::new(),
            turn_gate: quiet.gate(),
            send_wake: Notify::new(),
            send_gate: quiet.gate(),
            window_wake: Notify::new(),
            current_turn: Mutex::new(None),
            running: Mutex::new(Vec::new()),
            handed: Mutex::new(None),
        }
    }

    /// Sets (or clears: `None`) what `/stop` and `/new` cancel in this chat, and the messages
    /// that turn answers.
    pub(super) fn set_running(&self, token: Option<CancellationToken>, ids: Vec<PlatformMsgId>) {
        *lock(&self.running) = ids;
        *lock(&self.current_turn) = token;
    }

    /// The running turn's cancel and its messages, as `/stop` finds them.
    pub(super) fn running(&self) -> (Option<CancellationToken>, Vec<PlatformMsgId>) {
        let ids = lock(&self.running).clone();
        (lock(&self.current_turn).clone(), ids)
    }

    /// Wakes the turn worker: a new message waits in the journal.
    pub(crate) fn wake_turn(&self) {
        self.turn_gate.kick();
        self.turn_wake.notify_one();
    }

    /// Wakes the sender: a new item waits in the outbox.
    pub(crate) fn wake_send(&self) {
        self.send_gate.kick();
        self.send_wake.notify_one();
    }

    /// Wakes a sender that waits for the peer to retry its first item, because that item left
    /// the chat (the owner's mover took it to another route): the chat's next item is tried
    /// now, not when the peer writes or the window recheck comes. Only that wait ends early
    /// (a slow-down or backoff is the platform's, and the next item would meet it too), and
    /// the wake holds the quiescence count until the sender looked again, as the peer's does.
    pub(crate) fn head_gone(&self) {
        self.send_gate.kick_peer();
        self.window_wake.notify_waiters();
    }

    /// Wakes the sender with the outbox's next item, read in the transaction that queued it:
    /// saves a parked sender the store call that would read it again (the send's latency).
    pub(super) fn hand_send(&self, next: Option<Outbound>) {
        if let Some(item) = next {
            *lock(&self.handed) = Some(item);
        }
        self.wake_send();
    }

    /// The item [`Self::hand_send`] left, if the sender has not yet taken it itself: only one
    /// newer than every item it took (`taken`, the highest id). The outbox's ids only grow and
    /// the item was the chat's oldest pending one when it was read, so an item newer than all
    /// the sender took is still pending and next: a sender that read the outbox after that
    /// transaction took it then, and this one is dropped as old.
    pub(super) fn take_handed(&self, taken: i64) -> Option<Outbound> {
        let item = lock(&self.handed).take()?;
        (item.id > taken).then_some(item)
    }
}
