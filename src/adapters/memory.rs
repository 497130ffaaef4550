//! An in-memory chat platform for tests and benchmarks: records what is sent, fails on demand.
//! Configuration can never select it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::conversation::{
    Body, ChatId, ChatSender, Outbound, PlatformMsgId, ReplyContext, SendError, SendLimits, Sent,
};

/// One accepted update: which sent message now shows what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryUpdate {
    /// The updated message (`mem-<n>`, the n-th message sent, from 1).
    pub target: PlatformMsgId,
    /// What it shows now (how a question ended), as the core said it.
    pub body: Body,
}

/// A chat platform living in memory.
pub struct MemoryChannel {
    limits: SendLimits,
    sent: Mutex<Vec<Outbound>>,
    count: watch::Sender<usize>,
    script: Mutex<VecDeque<SendError>>,
    typing: Mutex<Vec<(ChatId, bool)>>,
    updates: Mutex<Vec<MemoryUpdate>>,
    update_script: Mutex<VecDeque<SendError>>,
    update_count: watch::Sender<usize>,
    /// Media fetches: `None` refuses them (a platform without media), `Some(false)` holds them
    /// (a slow transfer), `Some(true)` writes each item as the bytes `media`.
    media: watch::Sender<Option<bool>>,
    /// Sends succeed without a message id (a platform whose success proves no delivery).
    no_ids: std::sync::atomic::AtomicBool,
}

impl MemoryChannel {
    /// A channel with these limits.
    pub fn new(max_chars: usize, min_interval: Duration) -> Arc<Self> {
        Arc::new(MemoryChannel {
            limits: SendLimits {
                max_chars,
                min_interval,
            },
            sent: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
            script: Mutex::new(VecDeque::new()),
            typing: Mutex::new(Vec::new()),
            updates: Mutex::new(Vec::new()),
            update_script: Mutex::new(VecDeque::new()),
            update_count: watch::channel(0).0,
            media: watch::channel(None).0,
            no_ids: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// From now on, sends succeed without naming the message (as WeChat's `ret=0`).
    pub fn without_ids(&self) {
        self.no_ids.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Media fetches wait until [`MemoryChannel::release_media`] (a transfer that is slow).
    pub fn hold_media(&self) {
        self.media.send_replace(Some(false));
    }

    /// Media fetches (held ones too) write the bytes `media` and succeed.
    pub fn release_media(&self) {
        self.media.send_replace(Some(true));
    }

    /// Makes the next updates fail with these errors, in order.
    pub fn fail_next_updates(&self, errors: impl IntoIterator<Item = SendError>) {
        if let Ok(mut s) = self.update_script.lock() {
            s.extend(errors);
        }
    }

    /// Every accepted update so far, in order.
    pub fn updates(&self) -> Vec<MemoryUpdate> {
        self.updates.lock().map(|u| u.clone()).unwrap_or_default()
    }

    /// Waits until at least `n` updates have been accepted.
    pub async fn wait_updates(&self, n: usize) {
        let mut rx = self.update_count.subscribe();
        let _ = rx.wait_for(|c| *c >= n).await;
    }

    /// Makes the next sends fail with these errors, in order.
    pub fn fail_next(&self, errors: impl IntoIterator<Item = SendError>) {
        if let Ok(mut s) = self.script.lock() {
            s.extend(errors);
        }
    }

    /// Everything sent so far, in order (each with its typed body, as the core queued it).
    pub fn sent(&self) -> Vec<Outbound> {
        self.sent.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The bodies sent so far, in order (`Body::Text` for plain text).
    pub fn bodies(&self) -> Vec<Body> {
        self.sent().into_iter().map(|o| o.body).collect()
    }

    /// Texts sent to `chat`, in order.
    pub fn texts(&self, chat: &str) -> Vec<String> {
        self.sent()
            .into_iter()
            .filter(|o| o.chat.as_str() == chat)
            .map(|o| o.text)
            .collect()
    }

    /// Waits until at least `n` messages have been sent.
    pub async fn wait_sent(&self, n: usize) {
        let mut rx = self.count.subscribe();
        let _ = rx.wait_for(|c| *c >= n).await;
    }

    /// Typing indicator calls, in order.
    pub fn typing_calls(&self) -> Vec<(ChatId, bool)> {
        self.typing.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

impl ChatSender for MemoryChannel {
    fn limits(&self) -> SendLimits {
        self.limits
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            if let Some(e) = self.script.lock().ok().and_then(|mut s| s.pop_front()) {
                return Err(e);
            }
            if msg.text.chars().count() > self.limits.max_chars {
                return Err(SendError::rejected(
                    crate::failure::general::MESSAGE_TOO_LONG,
                    "text longer than the platform allows",
                ));
            }
            let mut sent = Sent::default();
            if let Ok(mut s) = self.sent.lock() {
                s.push(msg.clone());
                self.count.send_replace(s.len());
                if !self.no_ids.load(std::sync::atomic::Ordering::SeqCst) {
                    sent.msg_id = Some(PlatformMsgId::new(format!("mem-{}", s.len())));
                }
            }
            Ok(sent)
        })
    }

    fn update<'a>(
        &'a self,
        target: &'a PlatformMsgId,
        msg: &'a Outbound,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            if let Some(e) = self
                .update_script
                .lock()
                .ok()
                .and_then(|mut s| s.pop_front())
            {
                return Err(e);
            }
            if let Ok(mut u) = self.updates.lock() {
                u.push(MemoryUpdate {
                    target: target.clone(),
                    body: msg.body.clone(),
                });
                self.update_count.send_replace(u.len());
            }
            Ok(())
        })
    }

    fn fetch<'a>(
        &'a self,
        _media: &'a crate::conversation::MediaRef,
        _reply: &'a ReplyContext,
        dest: &'a std::path::Path,
        _max_bytes: u64,
    ) -> BoxFuture<'a, Result<u64, SendError>> {
        Box::pin(async move {
            let mut media = self.media.subscribe();
            let served = media.wait_for(|m| *m != Some(false)).await.map(|m| *m);
            if served.ok().flatten() != Some(true) {
                return Err(SendError::rejected(
                    crate::failure::general::MEDIA_UNSUPPORTED,
                    "this platform cannot download media",
                ));
            }
            tokio::fs::write(dest, b"media").await.map_err(|e| {
                SendError::rejected(crate::failure::general::MEDIA_UNSUPPORTED, e.to_string())
            })?;
            Ok(5)
        })
    }

    fn typing<'a>(
        &'a self,
        chat: &'a ChatId,
        _reply: &'a ReplyContext,
        on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Ok(mut t) = self.typing.lock() {
                t.push((chat.clone(), on));
            }
        })
    }
}

/// A component that attaches a [`MemoryChannel`] account to the pipeline while it runs.
pub struct MemoryComponent {
    /// What the daemon lends the account.
    pub port: crate::port::AccountPort,
    /// The owner's id on this fake platform.
    pub owner: Option<String>,
    /// Where its messages go.
    pub channel: Arc<MemoryChannel>,
}

impl crate::supervisor::Component for MemoryComponent {
    fn capabilities(&self) -> crate::supervisor::Capabilities {
        // It edits (it records updates) and takes questions; it has no send window.
        crate::supervisor::Capabilities {
            typing: true,
            edit: true,
            questions: true,
            ..Default::default()
        }
    }

    fn run(
        self: Arc<Self>,
        health: crate::supervisor::HealthHandle,
        cancel: tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'static, Result<(), crate::supervisor::ComponentError>> {
        Box::pin(async move {
            health.set_ids(Some("memory-bot".into()), self.owner.clone());
            let _attached = self.port.attach(crate::port::LinkParts {
                health: health.clone(),
                label: "WeChat",
                capabilities: self.capabilities(),
                owner: self.owner.clone(),
                sender: self.channel.clone(),
            });
            health.connected();
            cancel.cancelled().await;
            Ok(())
        })
    }
}

/// Builds a [`MemoryComponent`] for every account, one channel per account, one owner for all.
pub struct MemoryFactory {
    owner: Option<String>,
    ports: crate::port::Ports,
    channels: Mutex<std::collections::BTreeMap<String, Arc<MemoryChannel>>>,
}

impl MemoryFactory {
    /// A factory whose accounts all have `owner` and are lent ports cut from `ports`.
    pub fn new(owner: Option<&str>, ports: crate::port::Ports) -> Arc<Self> {
        Arc::new(MemoryFactory {
            owner: owner.map(str::to_string),
            ports,
            channels: Mutex::new(Default::default()),
        })
    }

    /// The channel of account `id` (`wechat:phone`), created on first use.
    pub fn channel(&self, id: &str) -> Arc<MemoryChannel> {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.to_string())
            .or_insert_with(|| MemoryChannel::new(2000, Duration::ZERO))
            .clone()
    }
}

impl crate::supervisor::ComponentFactory for MemoryFactory {
    fn build(&self, spec: &crate::config::AccountSpec) -> Arc<dyn crate::supervisor::Component> {
        Arc::new(MemoryComponent {
            port: self.ports.port(spec),
            owner: self.owner.clone(),
            channel: self.channel(&spec.key.to_string()),
        })
    }
}
