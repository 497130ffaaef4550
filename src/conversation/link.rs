//! The interface between a running account (its adapter) and the conversation pipeline.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::message::{Outbound, ReplyContext};
use crate::config::{AccountKey, Approvals};
use crate::ids::{ChatId, PlatformMsgId, SenderId};
use crate::protocol::{Purpose, RemoteTools, Senders};
use crate::supervisor::{Capabilities, HealthHandle};

/// How a platform limits what one send may carry and how fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendLimits {
    /// The most characters one message may have (WeChat 2,000).
    pub max_chars: usize,
    /// The least time between two sends to the same chat.
    pub min_interval: Duration,
}

/// Why a send did not go through: the daemon's one failure type, classified by the adapter and
/// acted on by the outbox by its class (`Transient` retried with backoff, `SlowDown` honoured,
/// `WindowClosed` waits for the peer, `Rejected` given up, `Fatal` pauses while the run fails).
pub type SendError = crate::failure::Failure;

/// What the platform said about a message it took; stored with the outbox item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// The platform's id of the new message (Feishu `om_…`), when it gives one: what a later
    /// update of the message names.
    pub msg_id: Option<PlatformMsgId>,
    /// The chat it landed in, when the platform says (Feishu: a message sent to an `ou_…`
    /// open_id lands in the `oc_…` p2p chat, where the owner's answers then come from).
    pub chat: Option<ChatId>,
}

/// What an adapter gives the pipeline to send with. Methods may do network IO; none holds a lock across it.
pub trait ChatSender: Send + Sync + 'static {
    /// The platform's limits.
    fn limits(&self) -> SendLimits;

    /// Sends one outbox item. Must use `msg.idempotency_key` as the platform's dedupe key.
    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>>;

    /// Replaces the sent message `target` with `msg.rich` (a card showing how a question ended).
    ///
    /// The default refuses: platforms that cannot edit a message keep it, and the pipeline then
    /// sends `msg` as a new message instead, as it does when the platform refuses for good.
    fn update<'a>(
        &'a self,
        _target: &'a PlatformMsgId,
        _msg: &'a Outbound,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async {
            Err(SendError::rejected(
                crate::failure::general::UPDATE_UNSUPPORTED,
                "this platform cannot update a sent message",
            ))
        })
    }

    /// The name the sender gave a received item whose message did not carry one (a platform
    /// that tells it only with the download, as WeCom's `Content-Disposition`); asked just
    /// before the item is saved, and sanitized by the pipeline. The default: none (the
    /// pipeline's fallback name).
    fn media_name<'a>(
        &'a self,
        _media: &'a super::MediaRef,
        _reply: &'a ReplyContext,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    /// Downloads one media item the peer sent into `dest` (decrypted and verified, streamed, at
    /// most `max_bytes`; a larger item is refused without keeping a partial file) and returns its
    /// size. The default refuses: the pipeline then hands the agent the item's description.
    fn fetch<'a>(
        &'a self,
        _media: &'a super::MediaRef,
        _reply: &'a ReplyContext,
        _dest: &'a std::path::Path,
        _max_bytes: u64,
    ) -> BoxFuture<'a, Result<u64, SendError>> {
        Box::pin(async {
            Err(SendError::rejected(
                crate::failure::general::MEDIA_UNSUPPORTED,
                "this platform cannot download media",
            ))
        })
    }

    /// How the platform shows an answer still being written (default: only the whole answer).
    fn stream_mode(&self) -> super::stream::StreamMode {
        super::stream::StreamMode::Whole
    }

    /// [`super::StreamMode::Edit`]: shows `text`, the answer so far, in the one message the
    /// adapter keeps for the answer `key` (opened by the first call, for `chat` and in reply to
    /// `reply`). The outbox item `<key>/0` ([`super::stream::first_piece_of`]) later finishes
    /// that message with its text; everything after goes out as usual. `Rejected` means the
    /// message cannot be shown or updated any more (the final pieces carry the answer). The
    /// default refuses.
    fn stream_show<'a>(
        &'a self,
        _key: &'a str,
        _chat: &'a ChatId,
        _reply: &'a ReplyContext,
        _text: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async {
            Err(SendError::rejected(
                crate::failure::general::UPDATE_UNSUPPORTED,
                "this platform cannot show an answer while it is written",
            ))
        })
    }

    /// Shows (`on`) or clears a typing indicator; adapters without one do nothing.
    fn typing<'a>(
        &'a self,
        _chat: &'a ChatId,
        _reply: &'a ReplyContext,
        _on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

impl AccountLink {
    /// The policy's decision for a message from `sender`, and whether the sender is the owner.
    pub fn decide(&self, sender: &SenderId) -> (crate::policy::Decision, bool) {
        let owner = self.owner.as_ref().map(SenderId::as_str);
        let decision = crate::policy::decide(
            self.senders,
            self.remote_tools,
            self.purpose,
            owner,
            sender.as_str(),
        );
        (decision, owner == Some(sender.as_str()))
    }
}

/// Everything the pipeline needs to know about a running account.
#[derive(Clone)]
pub struct AccountLink {
    /// Which account.
    pub account: AccountKey,
    /// Who it answers.
    pub senders: Senders,
    /// Who may use tools (as configured; effective only with a known owner).
    pub remote_tools: RemoteTools,
    /// Whether the owner's tool calls run at once or after a yes in this chat.
    pub approvals: Approvals,
    /// Chat or mail chat.
    pub purpose: Purpose,
    /// The authenticated owner's platform id, when known. Unknown means nobody is the owner.
    pub owner: Option<SenderId>,
    /// The agent's working directory for this account.
    pub workspace: Option<PathBuf>,
    /// How much received media the account keeps in the workspace (`[media]`).
    pub media: crate::config::MediaLimits,
    /// How the channel is named to the agent and to people ("WeChat", "Feishu").
    pub channel_label: &'static str,
    /// The language setting of the account's chats (`auto` follows the owner's messages).
    pub language: crate::words::Language,
    /// What the account can do.
    pub capabilities: Capabilities,
    /// The account's health, for notes such as "3 messages wait for WeChat's send window".
    pub health: HealthHandle,
    /// How to send.
    pub sender: Arc<dyn ChatSender>,
}
