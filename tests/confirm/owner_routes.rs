//! One owner, two routes (`[owner] routes = ["wechat:phone", "feishu:work"]`) over the daemon's
//! real control socket: a question that waits on a closed WeChat window moves to Feishu after
//! the bound and is answered there, not on WeChat; a send goes to the first route that can
//! deliver now, and one that waits moves, its status following the copy. The clock is
//! hand-moved; nothing sleeps.

use crate::confirm_support as support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::client;
use scv_bridge::config::{AccountKey, AccountSpec, Channel, Config};
use scv_bridge::confirm::Clock;
use scv_bridge::conversation::{Conversation, SendError};
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::failure::{Action, Failure, general};
use scv_bridge::owner::cli::{self, Options, Outcome};
use scv_bridge::protocol::*;
use scv_bridge::supervisor::{
    Component, ComponentError, ComponentFactory, HealthHandle, LifecyclePolicy,
};
use support::*;
use tokio_util::sync::CancellationToken;

/// How long a message waits on a route before it moves (the table's `move_after_seconds`).
const BOUND_MS: u64 = 60_000;

/// Each account attached over its own MemoryChannel.
struct Routes {
    conv: Arc<Conversation>,
    wechat: Arc<MemoryChannel>,
    feishu: Arc<MemoryChannel>,
    /// WeChat's runs fail as an ended session would (`failed`, fixed by logging in again).
    wechat_fails: bool,
}

struct Attached {
    conv: Arc<Conversation>,
    key: AccountKey,
    channel: Arc<MemoryChannel>,
    fails: bool,
}

impl Component for Attached {
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        Box::pin(async move {
            if self.fails {
                return Err(Failure::fatal(
                    general::NOT_LOGGED_IN,
                    "WeChat ended the session",
                    Action::Relogin(self.key.clone()),
                ));
            }
            let attachment = self.conv.attach(link(
                &self.key,
                &self.channel,
                Senders::Owner,
                health.clone(),
            ));
            health.connected();
            cancel.cancelled().await;
            drop(attachment);
            Ok(())
        })
    }
}

impl ComponentFactory for Routes {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        let (channel, fails) = match spec.key.channel {
            Channel::Feishu => (self.feishu.clone(), false),
            _ => (self.wechat.clone(), self.wechat_fails),
        };
        Arc::new(Attached {
            conv: self.conv.clone(),
            key: spec.key.clone(),
            channel,
            fails,
        })
    }
}

struct TwoRoutes {
    d: RunningDaemon,
    conv: Arc<Conversation>,
    wechat: Arc<MemoryChannel>,
    feishu: Arc<MemoryChannel>,
    clock: Clock,
}

async fn start(dir: &Path) -> TwoRoutes {
    start_with(dir, false).await
}

async fn start_with(dir: &Path, wechat_fails: bool) -> TwoRoutes {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"wechat:phone\"\n\
         [wechat.phone]\n[feishu.work]\n\
         [owner]\nroutes = [\"wechat:phone\", \"feishu:work\"]\nmove_after_seconds = {}\n",
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
            wechat_fails,
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
    let wechat_state = match wechat_fails {
        true => ComponentState::Failed,
        false => ComponentState::Connected,
    };
    for (id, state) in [
        ("wechat:phone", wechat_state),
        ("feishu:work", ComponentState::Connected),
    ] {
        scv_bridge::testing::wait_for_state(&d.core.registry(), id, state).await;
    }
    let conv = slot.lock().expect("lock").take().expect("conversation");
    TwoRoutes {
        d,
        conv,
        wechat,
        feishu,
        clock,
    }
}

impl TwoRoutes {
    /// Moves the clock to `ms` and waits until the scheduler, the mover and the chats acted.
    async fn at(&self, ms: u64) {
        self.clock.set(ms);
        within(self.d.core.owner().expect("owner").passed(ms)).await;
        within(self.conv.quiescent()).await;
    }

    async fn deliveries(&self) -> DeliveryCounts {
        within(self.conv.quiescent()).await;
        let s = client::request(&self.d.socket, DaemonCommand::Status)
            .await
            .expect("status");
        *s.deliveries.expect("deliveries")
    }

    async fn question(&self, id: &str) -> ConfirmInfo {
        client::request(
            &self.d.socket,
            DaemonCommand::ConfirmStatus { id: id.into() },
        )
        .await
        .expect("confirm_status")
        .confirm
        .expect("confirm")
    }

    fn window_closes(&self) {
        self.wechat.fail_next([SendError::window_closed(
            general::MESSAGE_EMPTY,
            "the chat's send window is closed",
        )]);
    }
}

fn feishu() -> AccountKey {
    AccountKey::new(Channel::Feishu, "work")
}

#[tokio::test]
async fn a_question_waiting_on_a_closed_window_moves_and_is_answered_on_the_next_route() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path()).await;
    t.window_closes();
    let asked = client::request(
        &t.d.socket,
        DaemonCommand::ConfirmAsk {
            question: "Deploy?".into(),
            parent: None,
            timeout_seconds: None,
        },
    )
    .await
    .expect("ask")
    .confirm
    .expect("confirm");
    assert_eq!(asked.chat, "wechat:phone");
    let d = t.deliveries().await;
    assert_eq!(d.waiting, 1, "{d:?}");

    // Not before the bound (asking about the question keeps it alive meanwhile).
    t.at(T0_MS + BOUND_MS / 2).await;
    t.question(&asked.id).await;
    t.at(T0_MS + BOUND_MS - 1000).await;
    t.question(&asked.id).await;
    assert!(t.feishu.sent().is_empty(), "nothing moves before the bound");

    t.at(T0_MS + BOUND_MS).await;
    within(t.feishu.wait_sent(1)).await;
    assert!(
        t.feishu.sent()[0].text.contains("Deploy?"),
        "the question itself"
    );
    let d = t.deliveries().await;
    assert_eq!((d.moved, d.waiting), (1, 0), "{d:?}");
    let q = t.question(&asked.id).await;
    assert_eq!(
        (q.state, q.chat.as_str()),
        (ConfirmState::Pending, "feishu:work")
    );

    // A yes on WeChat, where it waited, is not an answer to it any more.
    t.conv
        .accept(vec![msg("w1", OWNER, "yes")])
        .await
        .expect("accept");
    within(t.conv.quiescent()).await;
    assert_eq!(t.question(&asked.id).await.state, ConfirmState::Pending);
    assert!(
        !t.wechat.texts(OWNER).iter().any(|m| m.contains("Deploy?")),
        "the WeChat copy never went out: {:?}",
        t.wechat.texts(OWNER)
    );

    // On Feishu, where it arrived, it is.
    t.conv
        .accept(vec![msg_on(&feishu(), "f1", OWNER, "yes")])
        .await
        .expect("accept");
    within(t.conv.quiescent()).await;
    assert_eq!(t.question(&asked.id).await.state, ConfirmState::Yes);
    t.d.stop().await;
}

#[tokio::test]
async fn a_send_takes_the_first_route_that_can_deliver_and_a_waiting_one_moves_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path()).await;
    let send = |text: &str| Options {
        text: text.into(),
        files: Vec::new(),
        to: None,
        at: None,
        in_seconds: None,
        wait: false,
        poll_every: Duration::from_millis(10),
    };
    t.window_closes();
    let first = within(cli::run(
        &t.d.socket,
        &send("first"),
        std::future::pending(),
    ))
    .await;
    let Outcome::Done(first) = first else {
        panic!("{first:?}")
    };
    assert_eq!(first.route, "wechat:phone");
    within(t.conv.quiescent()).await;
    // WeChat now waits for the owner: the next send takes Feishu at once.
    let second = within(cli::run(
        &t.d.socket,
        &send("second"),
        std::future::pending(),
    ))
    .await;
    let Outcome::Done(second) = second else {
        panic!("{second:?}")
    };
    assert_eq!(second.route, "feishu:work");
    within(t.feishu.wait_sent(1)).await;

    t.at(T0_MS + BOUND_MS).await;
    within(t.feishu.wait_sent(2)).await;
    assert_eq!(t.feishu.texts(OWNER), vec!["second", "first"]);
    let s = client::request(&t.d.socket, DaemonCommand::SendStatus { id: first.id })
        .await
        .expect("send_status")
        .send
        .expect("send");
    assert_eq!(
        (s.state, s.route.as_str()),
        (SendState::Sent, "feishu:work")
    );
    let d = t.deliveries().await;
    assert_eq!((d.moved, d.sent, d.waiting), (1, 2, 0), "{d:?}");

    // The owner writes on WeChat: its window opens, and the moved message does not go there.
    t.conv
        .accept(vec![msg("w1", OWNER, "hi")])
        .await
        .expect("accept");
    within(t.wechat.wait_sent(1)).await;
    within(t.conv.quiescent()).await;
    t.at(T0_MS + 3 * BOUND_MS).await;
    assert!(
        !t.wechat.texts(OWNER).iter().any(|m| m == "first"),
        "{:?}",
        t.wechat.texts(OWNER)
    );
    assert_eq!(t.feishu.sent().len(), 2, "moved once");
    t.d.stop().await;
}

#[tokio::test]
async fn a_route_that_fails_is_told_once_on_the_other_route_with_its_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start_with(dir.path(), true).await;
    within(t.feishu.wait_sent(1)).await;
    let alert = t.feishu.texts(OWNER).join("\n");
    assert!(
        alert.contains("wechat:phone stopped: WeChat ended the session")
            && alert.contains("scv-bridge")
            && alert.contains("login wechat phone"),
        "{alert}"
    );
    assert!(
        alert.contains("已停止"),
        "auto writes both languages: {alert}"
    );
    // Health keeps changing (the clock moves, status is asked): no second alert.
    t.at(T0_MS + 1000).await;
    client::request(&t.d.socket, DaemonCommand::Status)
        .await
        .expect("status");
    t.at(T0_MS + 2000).await;
    assert_eq!(t.feishu.sent().len(), 1, "told once");
    assert!(t.wechat.sent().is_empty());
    t.d.stop().await;
}

#[tokio::test]
async fn a_question_goes_to_the_first_route_that_can_deliver_now() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path()).await;
    let ask = || {
        client::request(
            &t.d.socket,
            DaemonCommand::ConfirmAsk {
                question: "Merge?".into(),
                parent: None,
                timeout_seconds: None,
            },
        )
    };
    // Both routes run and nothing waits: the first route, WeChat (as `notify` says too).
    let first = ask().await.expect("ask").confirm.expect("confirm");
    assert_eq!(first.chat, "wechat:phone");
    within(t.wechat.wait_sent(1)).await;
    // WeChat's window closes on the next message: it waits, so the next question takes Feishu.
    t.window_closes();
    let opts = Options {
        text: "status report".into(),
        files: Vec::new(),
        to: Some("wechat:phone".into()),
        at: None,
        in_seconds: None,
        wait: false,
        poll_every: Duration::from_millis(10),
    };
    within(cli::run(&t.d.socket, &opts, std::future::pending())).await;
    let d = t.deliveries().await;
    assert_eq!(d.waiting, 1, "{d:?}");
    let second = ask().await.expect("ask").confirm.expect("confirm");
    assert_eq!(second.chat, "feishu:work");
    within(t.feishu.wait_sent(1)).await;
    assert!(t.feishu.sent()[0].text.contains("Merge?"));
    t.d.stop().await;
}
