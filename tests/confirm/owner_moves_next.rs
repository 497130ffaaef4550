//! After a move, the chat it left goes on: the real WeChat and Feishu adapters against their
//! fakes over real sockets, routes `wechat:phone` then `feishu:work`. The owner never wrote on
//! WeChat, so its window is closed: WeChat's sender tries the first message, is refused and
//! waits for the owner. When that message moves to Feishu, the sender must try the chat's next
//! message at once (so it is marked waiting and moves in its turn), not only when the owner
//! writes, the daemon restarts or the window's 10-minute recheck comes. The questions' and
//! routes' clock is hand-moved; nothing sleeps.

use crate::confirm_support::{EchoAgent, T0_MS, within};

use std::path::Path;
use std::sync::{Arc, Mutex};

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::client;
use scv_bridge::confirm::Clock;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::{ComponentState, DaemonCommand, SendInfo, SendState, WaitWhy};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_feishu::fake::{FakeConfig as FeishuConfig, FakeFeishu};
use scv_wechat::fake::{FakeConfig, FakeServer};

/// `[owner] move_after_seconds`, in ms.
const BOUND_MS: u64 = 60_000;
const FEISHU_OWNER: &str = "ou_owner";

struct Bed {
    d: RunningDaemon,
    conv: Arc<Conversation>,
    clock: Clock,
    wechat: FakeServer,
    feishu: FakeFeishu,
    _dir: tempfile::TempDir,
}

fn config(dir: &Path, wechat: &FakeServer, feishu: &FakeFeishu) -> String {
    format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nconsole_listen = \"off\"\n\
         [wechat.phone]\nsenders = \"owner\"\nbase_url = \"{}\"\nmin_send_interval_ms = 100\n\
         [feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"{FEISHU_OWNER}\"\n\
         [owner]\nroutes = [\"wechat:phone\", \"feishu:work\"]\nmove_after_seconds = {}\n",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
        wechat.base_url(),
        feishu.base_url(),
        BOUND_MS / 1000
    )
}

fn save_logins(dir: &Path, wechat: &FakeServer, feishu: &FakeFeishu) {
    let creds = CredentialStore::Files(dir.join("state").join("credentials"));
    let h = wechat.handle();
    let token = h.issue_token();
    let login = Credentials::default()
        .with("bot_token", token.expose())
        .with("bot_id", h.bot_id())
        .with("base_url", wechat.base_url())
        .with("owner_id", "owner@im.wechat");
    creds.save("wechat:phone", &login).expect("wechat login");
    let app = Credentials::default()
        .with("app_id", &feishu.config().app_id)
        .with("app_secret", &feishu.config().app_secret);
    creds.save("feishu:work", &app).expect("feishu login");
}

impl Bed {
    async fn start() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let wechat = FakeServer::start_with(FakeConfig::default())
            .await
            .expect("fake ilink");
        let feishu = FakeFeishu::start(FeishuConfig::fast())
            .await
            .expect("fake feishu");
        std::fs::create_dir_all(dir.path().join("state")).expect("state dir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, config(dir.path(), &wechat, &feishu)).expect("config");
        save_logins(dir.path(), &wechat, &feishu);
        let config = scv_bridge::config::Config::load(&path).expect("load config");
        let clock = Clock::manual(T0_MS);
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (sl, ck, agent_config) = (slot.clone(), clock.clone(), config.agent.clone());
        let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store, r: &Arc<_>| {
            let agent = Arc::new(EchoAgent::default());
            let (confirm, conv) = daemon::confirm_and_pipeline(s, c, ck, r, agent);
            *sl.lock().expect("lock") = Some(conv.clone());
            let parts = PlatformParts {
                credentials: c.clone(),
                store: s.clone(),
                conversation: conv.clone(),
                agent: agent_config,
                mail: Default::default(),
            };
            let factory: Arc<dyn ComponentFactory> =
                PlatformFactory::with_answers(parts, confirm.clone());
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
            within(scv_bridge::testing::wait_for_state(
                &d.core.registry(),
                id,
                ComponentState::Connected,
            ))
            .await;
        }
        let conv = slot.lock().expect("lock").take().expect("conversation");
        Bed {
            d,
            conv,
            clock,
            wechat,
            feishu,
            _dir: dir,
        }
    }

    /// Moves the clock to `ms` and waits until the scheduler, the mover and the chats acted.
    async fn at(&self, ms: u64) {
        self.clock.set(ms);
        within(self.d.core.owner().expect("owner").passed(ms)).await;
        within(self.conv.quiescent()).await;
    }

    async fn send(&self, text: &str, to: Option<&str>) -> SendInfo {
        let s = client::request(
            &self.d.socket,
            DaemonCommand::Send {
                text: text.into(),
                to: to.map(str::to_string),
                at: None,
                in_seconds: None,
                files: Vec::new(),
            },
        )
        .await
        .expect("send");
        within(self.conv.quiescent()).await;
        *s.send.expect("send info")
    }

    async fn status(&self, id: &str) -> SendInfo {
        let s = client::request(&self.d.socket, DaemonCommand::SendStatus { id: id.into() })
            .await
            .expect("send_status");
        *s.send.expect("send info")
    }

    /// How many Feishu messages show `text`.
    fn on_feishu(&self, text: &str) -> usize {
        let sent = self.feishu.sent();
        sent.iter()
            .filter(|s| s.content.to_string().contains(text))
            .count()
    }

    async fn wait_feishu(&self, text: &str) {
        let shown = self
            .feishu
            .wait_until(std::time::Duration::from_secs(20), |_| {
                self.on_feishu(text) > 0
            })
            .await;
        assert!(
            shown,
            "{text} never reached Feishu: {:?}",
            self.feishu.sent()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_waiting_message_moves_the_chats_next_one_is_tried_at_once() {
    let bed = Bed::start().await;
    let first = bed.send("move-first", None).await;
    assert_eq!(first.route, "wechat:phone", "both routes up, nothing waits");
    let first = bed.status(&first.id).await;
    assert_eq!(
        (first.state, first.why),
        (SendState::Waiting, Some(WaitWhy::SendWindow)),
        "the owner never wrote on WeChat: {first:?}"
    );
    // Named for WeChat, it waits behind the first there without being tried.
    let second = bed.send("move-second", Some("wechat:phone")).await;
    assert_eq!(bed.status(&second.id).await.state, SendState::Queued);

    bed.at(T0_MS + BOUND_MS).await;
    bed.wait_feishu("move-first").await;
    // The first moved away: WeChat's sender tried the second at once, and was refused too.
    let tried = bed.status(&second.id).await;
    assert_eq!(
        (tried.state, tried.why, tried.route.as_str()),
        (
            SendState::Waiting,
            Some(WaitWhy::SendWindow),
            "wechat:phone"
        ),
        "the chat's next message was tried once the first moved: {tried:?}"
    );

    // Timed from when the mover saw it wait, it moves in its turn.
    bed.at(T0_MS + BOUND_MS + 1).await;
    bed.at(T0_MS + 2 * BOUND_MS + 1).await;
    bed.wait_feishu("move-second").await;
    let moved = bed.status(&second.id).await;
    assert_eq!(
        (moved.state, moved.route.as_str()),
        (SendState::Sent, "feishu:work"),
        "{moved:?}"
    );
    assert_eq!(
        (bed.on_feishu("move-first"), bed.on_feishu("move-second")),
        (1, 1),
        "each once on Feishu"
    );
    assert!(
        bed.wechat.handle().sent().is_empty(),
        "nothing went out on WeChat: {:?}",
        bed.wechat.handle().sent()
    );
    bed.d.stop().await;
}
