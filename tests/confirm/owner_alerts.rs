//! Alerts for replies that wait (`[owner] alert_after_seconds`), over the daemon's real control
//! socket with the hand-moved clock: a reply held by WeChat's closed window is told on Feishu
//! after the bound (in Feishu's language), not before, once; told again when it gets worse (the
//! account goes down), and once when it delivers again; never on WeChat. Nothing sleeps.

use crate::confirm_support as support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::config::{AccountKey, AccountSpec, Channel, Config};
use scv_bridge::confirm::Clock;
use scv_bridge::conversation::{Conversation, SendError};
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::failure::general;
use scv_bridge::protocol::*;
use scv_bridge::supervisor::{
    Component, ComponentError, ComponentFactory, HealthHandle, LifecyclePolicy,
};
use support::*;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const MIN_MS: u64 = 60_000;
/// `alert_after_seconds` in the configuration: 10 minutes.
const BOUND_MS: u64 = 10 * MIN_MS;

/// Each account over its own MemoryChannel; WeChat's link comes and goes as `up` says.
struct Routes {
    conv: Arc<Conversation>,
    wechat: Arc<MemoryChannel>,
    feishu: Arc<MemoryChannel>,
    wechat_up: watch::Receiver<bool>,
}

struct Attached {
    conv: Arc<Conversation>,
    key: AccountKey,
    channel: Arc<MemoryChannel>,
    /// `None`: always up.
    up: Option<watch::Receiver<bool>>,
}

impl Component for Attached {
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        Box::pin(async move {
            let mut up = self.up.clone();
            loop {
                let attachment = self.conv.attach(link(
                    &self.key,
                    &self.channel,
                    Senders::Owner,
                    health.clone(),
                ));
                health.connected();
                let Some(up) = up.as_mut() else {
                    cancel.cancelled().await;
                    return Ok(());
                };
                tokio::select! {
                    _ = cancel.cancelled() => return Ok(()),
                    _ = up.wait_for(|u| !*u) => {}
                }
                // Down: not attached and not connected, until it is up again.
                drop(attachment);
                health.disconnected("the test took it down");
                tokio::select! {
                    _ = cancel.cancelled() => return Ok(()),
                    _ = up.wait_for(|u| *u) => {}
                }
            }
        })
    }
}

impl ComponentFactory for Routes {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        let (channel, up) = match spec.key.channel {
            Channel::Feishu => (self.feishu.clone(), None),
            _ => (self.wechat.clone(), Some(self.wechat_up.clone())),
        };
        Arc::new(Attached {
            conv: self.conv.clone(),
            key: spec.key.clone(),
            channel,
            up,
        })
    }
}

struct Bed {
    d: RunningDaemon,
    conv: Arc<Conversation>,
    wechat: Arc<MemoryChannel>,
    feishu: Arc<MemoryChannel>,
    wechat_up: watch::Sender<bool>,
    clock: Clock,
}

async fn start(dir: &Path) -> Bed {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"wechat:phone\"\n\
         [wechat.phone]\n[feishu.work]\nlanguage = \"zh-CN\"\n\
         [owner]\nroutes = [\"wechat:phone\", \"feishu:work\"]\nalert_after_seconds = {}\n",
        state.display(),
        dir.join("run").join("daemon.sock").display(),
        BOUND_MS / 1000
    );
    std::fs::write(&path, text).expect("config");
    save_owner(&state);
    let config = Config::load(&path).expect("load config");
    let (wechat, feishu) = (
        MemoryChannel::new(2000, Duration::ZERO),
        MemoryChannel::new(2000, Duration::ZERO),
    );
    let (wechat_up, up_rx) = watch::channel(true);
    let clock = Clock::manual(T0_MS);
    let slot = Arc::new(std::sync::Mutex::new(None));
    let (w, f, ck, sl) = (wechat.clone(), feishu.clone(), clock.clone(), slot.clone());
    let wire = move |creds: &scv_bridge::secrets::CredentialStore,
                     store: &scv_bridge::store::Store,
                     registry: &Arc<_>| {
        let agent = Arc::new(EchoAgent::default());
        let (confirm, conv) = daemon::confirm_and_pipeline(store, creds, ck, registry, agent);
        let factory: Arc<dyn ComponentFactory> = Arc::new(Routes {
            conv: conv.clone(),
            wechat: w,
            feishu: f,
            wechat_up: up_rx,
        });
        *sl.lock().expect("lock") = Some(conv.clone());
        Wiring {
            factory,
            conversation: Some(conv),
            confirm: Some(confirm),
        }
    };
    let d = daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    for id in ["wechat:phone", "feishu:work"] {
        scv_bridge::testing::wait_for_state(&d.core.registry(), id, ComponentState::Connected)
            .await;
    }
    let conv = slot.lock().expect("lock").take().expect("conversation");
    Bed {
        d,
        conv,
        wechat,
        feishu,
        wechat_up,
        clock,
    }
}

impl Bed {
    /// Moves the clock to `ms` and waits until the owner's watchers and the chats acted.
    async fn at(&self, ms: u64) {
        self.clock.set(ms);
        within(self.d.core.owner().expect("owner").passed(ms)).await;
        within(self.conv.quiescent()).await;
    }

    fn alerts(&self) -> Vec<String> {
        self.feishu.texts(OWNER)
    }
}

#[tokio::test]
async fn a_reply_held_by_a_closed_window_is_told_on_the_other_route_once_then_when_it_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path()).await;
    // The owner writes; the answer meets a closed window and waits.
    t.wechat.fail_next([SendError::window_closed(
        general::MESSAGE_EMPTY,
        "the chat's send window is closed",
    )]);
    t.conv
        .accept(vec![msg("w1", OWNER, "hello")])
        .await
        .expect("accept");
    within(t.conv.quiescent()).await;
    let start = T0_MS + 1000;
    t.at(start).await;
    // The watcher saw the wait first at T0 or at `start`: both are before the bound here.
    t.at(start + BOUND_MS - 2000).await;
    assert!(
        t.alerts().is_empty(),
        "not before the bound: {:?}",
        t.alerts()
    );

    t.at(start + 12 * MIN_MS).await;
    within(t.feishu.wait_sent(1)).await;
    assert_eq!(
        t.alerts(),
        vec![
            "⚠️ wechat:phone：回复已等待 12 分钟：WeChat 的发送窗口已关闭；修复：在那个聊天里发任意一条消息即可打开"
        ],
        "in Feishu's language (zh-CN)"
    );
    t.at(start + 30 * MIN_MS).await;
    assert_eq!(t.alerts().len(), 1, "told once while it stays the same");

    // Worse in kind: the account goes down with the reply still waiting.
    t.wechat_up.send_replace(false);
    within(t.feishu.wait_sent(2)).await;
    let down = &t.alerts()[1];
    assert!(
        down.starts_with("⚠️ wechat:phone：回复已等待 ") && down.contains("该账号没有在运行"),
        "{down}"
    );
    assert!(down.contains("修复：") && down.contains("status"), "{down}");

    // Up again: its sender tries the reply, still behind the closed window (better than down,
    // not fine: no news).
    t.wechat.fail_next([SendError::window_closed(
        general::MESSAGE_EMPTY,
        "the chat's send window is closed",
    )]);
    t.wechat_up.send_replace(true);
    scv_bridge::testing::wait_for_state(
        &t.d.core.registry(),
        "wechat:phone",
        ComponentState::Connected,
    )
    .await;
    t.at(start + 31 * MIN_MS).await;
    assert_eq!(t.alerts().len(), 2, "{:?}", t.alerts());

    // The owner writes again: the window opens, the reply goes out, and that is told once.
    t.conv
        .accept(vec![msg("w2", OWNER, "still there?")])
        .await
        .expect("accept");
    within(t.wechat.wait_sent(2)).await;
    within(t.feishu.wait_sent(3)).await;
    assert_eq!(t.alerts()[2], "✅ wechat:phone：消息已恢复发送。");
    t.at(start + 40 * MIN_MS).await;
    assert_eq!(t.alerts().len(), 3);
    assert!(
        t.wechat
            .texts(OWNER)
            .iter()
            .all(|m| !m.contains("wechat:phone")),
        "never on the route that is stuck: {:?}",
        t.wechat.texts(OWNER)
    );
    t.d.stop().await;
}
