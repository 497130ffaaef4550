//! `scv-bridge send` over the daemon's real control socket: delivery states in `status`, exit
//! codes by the final state, and scheduled sends that survive a restart and follow the
//! configured zone across a DST change, delivered once. The clock is hand-moved; nothing sleeps
//! but the command's own short polls.

use crate::confirm_support as support;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::client;
use scv_bridge::confirm::Clock;
use scv_bridge::conversation::{Conversation, SendError};
use scv_bridge::daemon::RunningDaemon;
use scv_bridge::failure::general;
use scv_bridge::owner::cli::{self, Options, Outcome};
use scv_bridge::protocol::*;
use support::*;

/// Saturday 2026-03-07 12:00 in New York (EST, UTC-5); the clocks go forward on Sunday 02:00.
pub(crate) const SAT_NOON_MS: u64 = 1_772_902_800_000;
/// Sunday 2026-03-08 09:00 in New York (EDT, UTC-4): 13:00 UTC, 20 hours after SAT_NOON_MS.
const SUN_NINE_MS: u64 = SAT_NOON_MS + 20 * 3_600_000;

pub(crate) struct OwnerDaemon {
    pub(crate) d: RunningDaemon,
    pub(crate) conv: Arc<Conversation>,
    pub(crate) channel: Arc<MemoryChannel>,
    pub(crate) clock: Clock,
    pub(crate) agent: Arc<EchoAgent>,
}

/// A daemon with one MemoryChannel account `wechat:phone` (the `notify` target unless
/// `notify` is false), reading times in New York, its clock standing at `now_ms`.
pub(crate) async fn start(dir: &Path, notify: bool, now_ms: u64) -> OwnerDaemon {
    start_with(dir, notify, now_ms, "").await
}

/// [`start`] with `account` (TOML lines) in the account's table.
pub(crate) async fn start_with(
    dir: &Path,
    notify: bool,
    now_ms: u64,
    account: &str,
) -> OwnerDaemon {
    let agent = Arc::new(EchoAgent::default());
    let given = agent.clone();
    let t =
        crate::owner_tools_support::start_with(dir, notify, now_ms, account, move |_| given).await;
    OwnerDaemon {
        d: t.d,
        conv: t.conv,
        channel: t.channel,
        clock: t.clock,
        agent,
    }
}

impl OwnerDaemon {
    /// `scv-bridge send` as a script runs it (polls every 10 ms).
    async fn send(&self, text: &str, at: Option<&str>, wait: bool) -> Outcome {
        let opts = Options {
            text: text.into(),
            files: Vec::new(),
            to: None,
            at: at.map(str::to_string),
            in_seconds: None,
            wait,
            poll_every: Duration::from_millis(10),
        };
        within(cli::run(&self.d.socket, &opts, never())).await
    }

    /// The `deliveries` of a plain `status`, once the pipeline has settled.
    async fn deliveries(&self) -> DeliveryCounts {
        within(self.conv.quiescent()).await;
        let s = client::request(&self.d.socket, DaemonCommand::Status)
            .await
            .expect("status");
        *s.deliveries
            .expect("a daemon with a pipeline reports deliveries")
    }

    /// Moves the clock to `ms` and waits until the scheduler and the chat have acted on it.
    pub(crate) async fn at(&self, ms: u64) {
        self.clock.set(ms);
        let owner = self.d.core.owner().expect("owner service");
        within(owner.passed(ms)).await;
        within(self.conv.quiescent()).await;
    }
}

fn never() -> impl Future<Output = ()> {
    std::future::pending()
}

fn info(o: &Outcome) -> &SendInfo {
    match o {
        Outcome::Done(i) | Outcome::Stopped(i) => i,
        Outcome::Error(e) => panic!("expected an answer, got error {e}"),
    }
}

#[tokio::test]
async fn a_send_is_sent_and_counted_and_exits_by_its_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    let sent = t.send("Backup finished", None, true).await;
    assert_eq!(info(&sent).state, SendState::Sent, "{sent:?}");
    assert_eq!(info(&sent).route, "wechat:phone");
    assert_eq!(sent.exit_code(), 0);
    assert_eq!(t.channel.texts(OWNER), vec!["Backup finished".to_string()]);
    let d = t.deliveries().await;
    assert_eq!((d.sent, d.unconfirmed, d.queued, d.waiting), (1, 0, 0, 0));

    // A platform that takes a message without naming it proves nothing: exit 3.
    t.channel.without_ids();
    let taken = t.send("Disk at 91%", None, true).await;
    assert_eq!(info(&taken).state, SendState::SentUnconfirmed);
    assert_eq!(taken.exit_code(), 3);
    assert!(
        taken.message().starts_with("unconfirmed: "),
        "{}",
        taken.message()
    );

    // Refused for good: failed with the platform's reason, exit 2.
    t.channel.fail_next([SendError::rejected(
        general::MESSAGE_TOO_LONG,
        "the platform refused it",
    )]);
    let refused = t.send("Report", None, true).await;
    assert_eq!(info(&refused).state, SendState::Failed);
    assert_eq!(
        info(&refused).reason.as_deref(),
        Some("the platform refused it")
    );
    assert_eq!(refused.exit_code(), 2);
    let d = t.deliveries().await;
    assert_eq!((d.sent, d.unconfirmed, d.failed), (1, 1, 1));
    t.d.stop().await;
}

#[tokio::test]
async fn a_closed_window_shows_as_waiting_with_why_until_the_owner_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    t.channel.fail_next([SendError::window_closed(
        general::MESSAGE_EMPTY,
        "the chat's send window is closed",
    )]);
    let queued = t.send("Build is red", None, false).await;
    assert_eq!(queued.exit_code(), 0, "{queued:?}");
    let id = info(&queued).id.clone();
    let d = t.deliveries().await;
    assert_eq!((d.waiting, d.queued, d.sent), (1, 0, 0));
    let w = d.oldest_waiting.expect("the waiting item");
    assert_eq!(
        (w.route.as_str(), w.why),
        ("wechat:phone", WaitWhy::SendWindow)
    );
    let s = client::request(&t.d.socket, DaemonCommand::SendStatus { id: id.clone() })
        .await
        .expect("send_status");
    let s = s.send.expect("send");
    assert_eq!(
        (s.state, s.why),
        (SendState::Waiting, Some(WaitWhy::SendWindow))
    );
    // The plain status line says so for people too.
    let table = scv_bridge::cli::status_table(
        &client::request(&t.d.socket, DaemonCommand::Status)
            .await
            .expect("status"),
        scv_bridge::supervisor::unix_now(),
    );
    assert!(table.contains("to the owner: 1 waiting"), "{table}");
    assert!(table.contains("oldest waiting: wechat:phone"), "{table}");

    // The owner writes: the window opens and the message goes.
    t.conv
        .accept(vec![msg("m1", OWNER, "hi")])
        .await
        .expect("accept");
    within(t.channel.wait_sent(2)).await;
    assert_eq!(t.channel.sent()[0].text, "Build is red", "first in line");
    let d = t.deliveries().await;
    assert_eq!(
        (d.waiting, d.sent),
        (0, 1),
        "the answer to hi is no proactive message"
    );
    assert!(d.oldest_waiting.is_none());
    t.d.stop().await;
}

#[tokio::test]
async fn a_scheduled_send_survives_a_restart_and_goes_once_at_local_nine_across_dst() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    let s = t.send("Standup in one hour", Some("09:00"), false).await;
    let i = info(&s).clone();
    assert_eq!(i.state, SendState::Scheduled);
    // 09:00 on Sunday is EDT: 20 hours on, not the 21 of an unchanged offset.
    assert_eq!(i.due_unix_seconds, SUN_NINE_MS / 1000);
    t.d.stop().await;

    // A new daemon on the same store: nothing before the time, the message at it.
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    t.at(SUN_NINE_MS - 1000).await;
    assert!(t.channel.sent().is_empty(), "not before 09:00 local");
    t.at(SUN_NINE_MS).await;
    within(t.channel.wait_sent(1)).await;
    assert_eq!(
        t.channel.texts(OWNER),
        vec!["Standup in one hour".to_string()]
    );
    let after = client::request(&t.d.socket, DaemonCommand::SendStatus { id: i.id.clone() })
        .await
        .expect("send_status");
    assert_eq!(after.send.expect("send").state, SendState::Sent);
    t.at(SUN_NINE_MS + 3_600_000).await;
    assert_eq!(t.channel.sent().len(), 1, "delivered once");
    t.d.stop().await;

    // And never again after another restart.
    let t = start(dir.path(), true, SUN_NINE_MS + 7_200_000).await;
    t.at(SUN_NINE_MS + 7_200_001).await;
    assert!(t.channel.sent().is_empty(), "a restart sends nothing twice");
    t.d.stop().await;
}

#[tokio::test]
async fn cancelled_sends_stay_unsent_and_refusals_say_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), false, SAT_NOON_MS).await;
    // No `notify` and no `to`: nowhere to send, failed at once with the reason.
    let nowhere = t.send("Hello", None, true).await;
    assert_eq!(info(&nowhere).state, SendState::Failed);
    assert!(
        info(&nowhere)
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("notify")),
        "{nowhere:?}"
    );
    assert_eq!(nowhere.exit_code(), 2);

    let opts = Options {
        text: "Later".into(),
        files: Vec::new(),
        to: Some("wechat:phone".into()),
        at: None,
        in_seconds: Some(3600),
        wait: false,
        poll_every: Duration::from_millis(10),
    };
    let later = within(cli::run(&t.d.socket, &opts, never())).await;
    let id = info(&later).id.clone();
    assert_eq!(info(&later).state, SendState::Scheduled);
    let cancelled = within(cli::cancel(&t.d.socket, &id)).await;
    assert_eq!(info(&cancelled).state, SendState::Cancelled);
    t.at(SAT_NOON_MS + 7_200_000).await;
    assert!(t.channel.sent().is_empty(), "a cancelled send never goes");

    for (at, words) in [
        ("2026-03-08 02:30", "jump forward"),
        ("2026-03-01 09:00", "in the past"),
        ("soon", "expected a time"),
    ] {
        let refused = t.send("x", Some(at), false).await;
        match &refused {
            Outcome::Error(e) => assert!(e.contains(words), "{at}: {e}"),
            other => panic!("{at}: expected a refusal, got {other:?}"),
        }
        assert_eq!(refused.exit_code(), 2);
    }
    let unknown = within(cli::cancel(&t.d.socket, "s-999")).await;
    assert!(matches!(unknown, Outcome::Error(ref e) if e.contains("s-999")));
    t.d.stop().await;
}
