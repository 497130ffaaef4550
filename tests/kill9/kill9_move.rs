//! `kill -9` while a message to the owner is being moved, literally: the real binary with two
//! owner routes, `wechat:phone` then `feishu:work` (`[owner] move_after_seconds = 10`), against
//! the WeChat and Feishu fakes over real sockets. The owner never wrote on WeChat, so WeChat has
//! no send window for them: every `scv-bridge send` waits there and moves to Feishu after the
//! bound (`owner/mover.rs`, one transaction in `conversation/moves.rs`). Each round the daemon is
//! SIGKILLed at a point chosen by the seeded generator (`SCV_KILL9_SEED` replays one): before
//! the move, just after it was logged, or once Feishu showed the copy. After the restart the
//! owner must get every message exactly once, on one route.
//!
//! The bound is real time (10 s is the least the configuration allows, and the mover times a
//! wait again after a restart), so this test takes about a minute; nothing sleeps: every wait
//! is woken by the fakes' changes or the daemon's log.

use crate::process_support;
use crate::random_point::{Rng, seed};

use std::process::{Command, Stdio};
use std::time::Duration;

use process_support::bed::{ProcessBed, feishu_login, openai_agent, wechat_login};
use process_support::log_count::LogCount;
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_feishu::fake::{FakeConfig as FeishuConfig, FakeFeishu, SentRecord};
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, FakeServer};

/// Real time allowed for anything to happen: the 10 s bound, timed again after a restart, plus
/// a start; nothing waits this long unless broken.
pub(crate) const PATIENCE: Duration = Duration::from_secs(45);
/// The owner on both platforms.
pub(crate) const WECHAT_OWNER: &str = "owner@im.wechat";
pub(crate) const FEISHU_OWNER: &str = "ou_owner";
/// What the mover logs when a message moved (`owner/mover.rs`).
const MOVED: &str = "moved to the next route";

/// Where a round's kill lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Point {
    /// The message queued on WeChat, before the bound.
    Waiting,
    /// The move logged: its transaction committed, the copy's send may have begun.
    Moved,
    /// Feishu showed the copy: the daemon may not have stored that it was sent.
    Shown,
}

pub(crate) const POINTS: [Point; 3] = [Point::Waiting, Point::Moved, Point::Shown];

pub(crate) struct Bed {
    pub(crate) p: ProcessBed,
    pub(crate) wechat: FakeServer,
    pub(crate) feishu: FakeFeishu,
    model: FakeOpenAi,
    pub(crate) moved: LogCount,
}

impl Bed {
    pub(crate) async fn new() -> Bed {
        let wechat = FakeServer::start_with(FakeConfig::default())
            .await
            .expect("fake ilink");
        let feishu = FakeFeishu::start(FeishuConfig::fast())
            .await
            .expect("fake feishu");
        let model = FakeOpenAi::start().await.expect("fake model");
        let p = ProcessBed::new(
            |_| {
                format!(
                    "console_listen = \"off\"\n{}[wechat.phone]\nsenders = \"owner\"\nbase_url = \"{}\"\n\
                     [feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"{FEISHU_OWNER}\"\n\
                     [owner]\nroutes = [\"wechat:phone\", \"feishu:work\"]\nmove_after_seconds = 10\n",
                    openai_agent(&model.base_url(), "m", "SCV_KILL9_MOVE_KEY"),
                    wechat.base_url(),
                    feishu.base_url(),
                )
            },
            &[("SCV_KILL9_MOVE_KEY", "k")],
        );
        p.save_login("wechat:phone", &wechat_login(&wechat, WECHAT_OWNER));
        p.save_login("feishu:work", &feishu_login(&feishu));
        let moved = LogCount::new(p.path("daemon.log"), MOVED);
        Bed {
            p,
            wechat,
            feishu,
            model,
            moved,
        }
    }

    pub(crate) fn report(&self) -> String {
        let wechat: Vec<_> = self
            .wechat
            .handle()
            .sent()
            .into_iter()
            .map(|s| s.text)
            .collect();
        let feishu: Vec<_> = self.feishu.sent().into_iter().map(|s| s.content).collect();
        format!(
            "wechat sent: {wechat:?}\nfeishu sent: {feishu:?}\nlog:\n{}",
            self.p.log()
        )
    }

    pub(crate) async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        self.p
            .wait_until(
                PATIENCE,
                what,
                &[&self.wechat, &self.feishu, &self.model],
                || self.report(),
                f,
            )
            .await;
    }

    /// Spawns the daemon and waits until both accounts are connected (WeChat polls, Feishu's
    /// long connection is up), so a send chooses WeChat first.
    pub(crate) async fn start(&self) -> Daemon {
        let polls = self.wechat.handle().requests_to(Endpoint::GetUpdates).len();
        let child = self.p.spawn();
        self.wait_until("both accounts connected", || {
            self.wechat.handle().requests_to(Endpoint::GetUpdates).len() > polls
                && self.feishu.live_connections() > 0
        })
        .await;
        child
    }

    /// Kills the daemon and waits until the fakes saw its connections go.
    pub(crate) async fn kill(&self, child: &mut Daemon, what: &str) {
        sigkill(child);
        assert!(
            self.wechat.handle().connections_closed(PATIENCE).await,
            "{what}: the WeChat fake never closed the dead daemon's connections\n{}",
            self.report()
        );
        self.wait_until(&format!("{what}: Feishu saw the daemon go"), || {
            self.feishu.live_connections() == 0
        })
        .await;
    }

    /// How often the owner was shown `text`: on WeChat, on Feishu.
    pub(crate) fn shown(&self, text: &str) -> (usize, usize) {
        let wechat = self
            .wechat
            .handle()
            .sent()
            .iter()
            .filter(|s| s.text.contains(text))
            .count();
        let feishu = self.feishu.sent().iter().filter(|s| shows(s, text)).count();
        (wechat, feishu)
    }

    /// Runs `scv-bridge ARGS` against the bed's configuration and returns its exit code.
    async fn cli(&self, args: &[&str]) -> i32 {
        let mut cmd = self.command(args);
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .expect("join")
            .expect("run scv-bridge");
        let code = out.status.code().unwrap_or(-1);
        assert!(
            code == 0,
            "scv-bridge {args:?} exited {code}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        code
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
        cmd.arg("--config")
            .arg(&self.p.config)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

/// True when the Feishu message `s` carries `text` (as text, post or card).
pub(crate) fn shows(s: &SentRecord, text: &str) -> bool {
    s.content.to_string().contains(text)
}

fn text(round: usize) -> String {
    format!("kill9-move-r{round}")
}

/// Each point once, then one more at random, in a seeded order.
pub(crate) fn schedule(rng: &mut Rng) -> Vec<Point> {
    let mut points: Vec<Point> = POINTS.to_vec();
    points.push(POINTS[rng.below(POINTS.len() as u64) as usize]);
    for i in (1..points.len()).rev() {
        points.swap(i, rng.below(i as u64 + 1) as usize);
    }
    points
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_around_a_move_delivers_each_message_once_on_one_route() {
    let seed = seed();
    println!("kill9_move seed {seed} (SCV_KILL9_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let bed = Bed::new().await;
    let points = schedule(&mut rng);
    let mut child = bed.start().await;
    for (round, point) in points.iter().enumerate() {
        let text = text(round);
        let moved = bed.moved.count();
        bed.cli(&["send", &text]).await;
        let what = format!("round {round} ({point:?})");
        match point {
            Point::Waiting => {}
            Point::Moved => {
                let deadline = tokio::time::Instant::now() + PATIENCE;
                assert!(
                    bed.moved.above(moved, deadline).await,
                    "{what}: never moved\n{}",
                    bed.report()
                );
            }
            Point::Shown => {
                bed.wait_until(&format!("{what}: the copy on Feishu"), || {
                    bed.shown(&text).1 > 0
                })
                .await;
            }
        }
        bed.kill(&mut child, &what).await;
        child = bed.start().await;
        bed.wait_until(
            &format!("{what}: the message on Feishu after the restart"),
            || bed.shown(&text).1 > 0,
        )
        .await;
    }
    terminate(&mut child);

    let shown: Vec<(usize, usize)> = (0..points.len()).map(|r| bed.shown(&text(r))).collect();
    println!("kill9_move: kill points {points:?}: shown (wechat, feishu) {shown:?}");
    for (round, s) in shown.iter().enumerate() {
        assert_eq!(
            *s,
            (0, 1),
            "round {round} ({:?}): the owner must get it once, on Feishu\n{}",
            points[round],
            bed.report()
        );
    }
}
