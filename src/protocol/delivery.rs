//! Extension wire types: where the bridge's own messages to the owner stand (`status`'s
//! `deliveries`) and the `send` / `send_status` / `send_cancel` requests' answer (`send`).
//!
//! Made by the daemon (`conversation::deliveries` counts, `owner` answers `send`); read by
//! `scv-bridge status`, `scv-bridge send` and scripts. Field names and enum spellings are the
//! wire format: add, never rename. Old clients ignore both fields (unknown fields are ignored).

use serde::{Deserialize, Serialize};

/// Proactive messages (confirm questions, digests, `send`, notices) by delivery state: the
/// open ones, and those settled in the last 24 hours. Counts are of outbox items (a long text
/// split for the platform counts once per piece).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryCounts {
    /// Stored, next in line or behind another item of the same chat.
    #[serde(default)]
    pub queued: u64,
    /// Stored and held back by the platform or the account (`oldest_waiting` says why).
    #[serde(default)]
    pub waiting: u64,
    /// Taken by the platform with a message id it can be found by (last 24 h).
    #[serde(default)]
    pub sent: u64,
    /// Taken by the platform without anything that proves delivery (last 24 h): e.g. WeChat's
    /// `ret=0`, which means accepted, not delivered.
    #[serde(default)]
    pub unconfirmed: u64,
    /// Given up on its route and handed to the next one (last 24 h).
    #[serde(default)]
    pub moved: u64,
    /// Refused for good (last 24 h).
    #[serde(default)]
    pub failed: u64,
    /// The item that has waited longest; omitted when none waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_waiting: Option<WaitingItem>,
}

/// One waiting item, as `status` shows it: never its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingItem {
    /// `<channel>:<account>` it waits on.
    pub route: String,
    /// Why it waits.
    pub why: WaitWhy,
    /// Since when (Unix seconds).
    pub since_unix_seconds: u64,
}

/// Why a stored message is not sent yet (snake_case on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitWhy {
    /// The platform sends only after the peer wrote (WeChat's window, QQ's passive replies).
    SendWindow,
    /// The platform asked to slow down.
    Throttle,
    /// The account is not running, or cannot send (failed, logged out, in backoff).
    AccountDown,
    /// Sends fail and are retried with backoff (network, server errors).
    SendsFailing,
    /// A value this client does not know.
    #[serde(other)]
    Unknown,
}

impl WaitWhy {
    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitWhy::SendWindow => "send_window",
            WaitWhy::Throttle => "throttle",
            WaitWhy::AccountDown => "account_down",
            WaitWhy::SendsFailing => "sends_failing",
            WaitWhy::Unknown => "unknown",
        }
    }

    /// Reads a stored spelling; anything else is `Unknown`.
    pub fn parse(s: &str) -> WaitWhy {
        [
            WaitWhy::SendWindow,
            WaitWhy::Throttle,
            WaitWhy::AccountDown,
            WaitWhy::SendsFailing,
        ]
        .into_iter()
        .find(|w| w.as_str() == s)
        .unwrap_or(WaitWhy::Unknown)
    }

    /// For people, after "waiting: ".
    pub fn words(self) -> &'static str {
        match self {
            WaitWhy::SendWindow => "the platform sends only after the owner writes",
            WaitWhy::Throttle => "the platform asked to slow down",
            WaitWhy::AccountDown => "the account is not running",
            WaitWhy::SendsFailing => "sends fail and are retried",
            WaitWhy::Unknown => "a reason this client does not know",
        }
    }
}

/// Where one `send` stands (snake_case on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendState {
    /// Stored for a later time (`at` / `in`).
    Scheduled,
    /// In the outbox, next in line or behind another item.
    Queued,
    /// In the outbox, held back (`why`).
    Waiting,
    /// The platform took it and named the message.
    Sent,
    /// The platform took it without proof of delivery (see `DeliveryCounts::unconfirmed`).
    SentUnconfirmed,
    /// Handed to another route (`moved_to`).
    Moved,
    /// It can never be sent (`reason`).
    Failed,
    /// Cancelled before its time.
    Cancelled,
    /// A value this client does not know.
    #[serde(other)]
    Unknown,
}

impl SendState {
    /// Whether nothing more will happen to it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SendState::Sent
                | SendState::SentUnconfirmed
                | SendState::Moved
                | SendState::Failed
                | SendState::Cancelled
        )
    }
}

/// The answer to `send`, `send_status` and `send_cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendInfo {
    /// The send's id (`s-7`).
    pub id: String,
    /// Where it stands.
    pub state: SendState,
    /// `<channel>:<account>` it goes (or went) to; empty while a scheduled send has no route yet.
    #[serde(default)]
    pub route: String,
    /// When it is (or was) due, Unix seconds.
    pub due_unix_seconds: u64,
    /// Why it waits; only while `waiting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<WaitWhy>,
    /// Why it failed, for people; only when `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
