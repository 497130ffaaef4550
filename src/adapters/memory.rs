//! An in-memory chat platform for tests and benchmarks: records what is sent, fails on demand.
//! Configuration can never select it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::conversation::{ChatId, ChatSender, Outbound, ReplyContext, SendError, SendLimits};

/// A chat platform living in memory.
pub struct MemoryChannel {
    limits: SendLimits,
    sent: Mutex<Vec<Outbound>>,
    count: watch::Sender<usize>,
    script: Mutex<VecDeque<SendError>>,
    typing: Mutex<Vec<(ChatId, bool)>>,
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
        })
    }

    /// Makes the next sends fail with these errors, in order.
    pub fn fail_next(&self, errors: impl IntoIterator<Item = SendError>) {
        if let Ok(mut s) = self.script.lock() {
            s.extend(errors);
        }
    }

    /// Everything sent so far, in order.
    pub fn sent(&self) -> Vec<Outbound> {
        self.sent.lock().map(|s| s.clone()).unwrap_or_default()
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

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            if let Some(e) = self.script.lock().ok().and_then(|mut s| s.pop_front()) {
                return Err(e);
            }
            if msg.text.chars().count() > self.limits.max_chars {
                return Err(SendError::Rejected(
                    "text longer than the platform allows".into(),
                ));
            }
            if let Ok(mut s) = self.sent.lock() {
                s.push(msg.clone());
                self.count.send_replace(s.len());
            }
            Ok(())
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
