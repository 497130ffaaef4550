//! `scv-bridge login wechat` against the fake iLink server, alone and with a running daemon
//! whose session expired.

use crate::wechat_support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_bridge::config::Channel;
use scv_bridge::login::LoginArgs;
use scv_bridge::port::login_flow::{Field, LoginUi, Shown};
use scv_bridge::protocol::ComponentState;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, FakeHandle};
use tokio::sync::watch;
use wechat_support::*;

/// A login UI that records what the terminal would show, in a watch so the phone wakes on
/// what was shown rather than on a clock.
#[derive(Clone, Default)]
struct ScriptedUi {
    events: Arc<watch::Sender<Vec<Shown>>>,
}

impl ScriptedUi {
    /// Waits until an event `pred` matches was shown (the caller bounds the wait).
    async fn wait_saw(&self, pred: impl Fn(&Shown) -> bool) {
        let mut events = self.events.subscribe();
        // The sender lives in `self`, so the wait ends only by the event or the caller.
        let _ = events.wait_for(|e| e.iter().any(&pred)).await;
    }
}

impl LoginUi for ScriptedUi {
    fn show(&mut self, shown: Shown) {
        self.events.send_modify(|e| e.push(shown));
    }

    fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>> {
        async move { Err(format!("nobody types {} here", field.name)) }.boxed()
    }
}

/// Whether `shown` is the line that says the code was scanned.
fn scanned(shown: &Shown) -> bool {
    matches!(shown, Shown::Line(l) if l.starts_with("scanned"))
}

/// Plays the phone: waits for a code, optionally lets it expire, then scans and confirms.
async fn phone(fake: FakeHandle, ui: ScriptedUi, expire_first: bool) {
    let mut code = 1;
    if expire_first {
        assert!(fake.wait_for_qr(1, PATIENCE).await);
        fake.qr_expire();
        code = 2;
    }
    assert!(fake.wait_for_qr(code, PATIENCE).await);
    fake.qr_scan();
    within(ui.wait_saw(scanned), "the scan to be shown").await;
    fake.qr_confirm(OWNER).expect("a code to confirm");
}

/// Logs in against `base`, polling the scan quickly.
fn quick_login(base: String) -> LoginArgs {
    LoginArgs {
        poll: Some(Duration::from_millis(20)),
        ..LoginArgs::default()
    }
    .with_flag("base-url", base)
}

#[tokio::test]
async fn qr_login_refreshes_an_expired_code_and_stores_the_owner() {
    let fake_config = FakeConfig {
        initial_token: None,
        ..FakeConfig::default()
    };
    let h = Harness::new(fake_config, "").await;
    let fake = h.fake.handle();
    let ui = ScriptedUi::default();
    let driver = tokio::spawn(phone(fake.clone(), ui.clone(), true));
    let args = quick_login(h.fake.base_url());
    let mut login_ui = ui.clone();
    let line = within(
        scv_bridge::login::run_with(Channel::Wechat, &h.config(), "phone", &args, &mut login_ui),
        "the login",
    )
    .await
    .expect("login succeeds");
    driver.await.expect("phone");
    assert!(line.contains("logged in: wechat:phone"), "{line}");
    assert!(line.contains(OWNER), "{line}");
    assert!(line.contains("no daemon is running"), "{line}");
    let events = ui.events.borrow().clone();
    let shown: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Shown::Qr { number, of, .. } => {
                assert_eq!(*of, 3);
                Some(*number)
            }
            _ => None,
        })
        .collect();
    assert_eq!(shown, [1, 2], "one refresh after the expiry");
    let expired_at = events
        .iter()
        .position(|e| *e == Shown::Line("the code expired".into()));
    let second_at = events
        .iter()
        .position(|e| matches!(e, Shown::Qr { number: 2, .. }));
    assert!(expired_at < second_at && expired_at.is_some());
    assert!(events.iter().any(scanned));
    assert_eq!(fake.qr_codes_issued(), 2);

    let stored = h.credentials().load(ID).expect("load").expect("saved");
    let get = |n: &str| stored.get(n).map(|s| s.expose().to_string());
    assert_eq!(
        get("bot_token"),
        fake.bot_token().map(|t| t.expose().to_string())
    );
    assert_eq!(get("bot_id"), Some(fake.bot_id()));
    assert_eq!(get("owner_id").as_deref(), Some(OWNER));
    assert_eq!(get("base_url"), Some(h.fake.base_url()));
}

#[tokio::test]
async fn an_expired_session_fails_with_the_hint_and_a_new_login_reconnects() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    fake.expire_session();
    h.wait_state(ComponentState::Failed).await;
    let s = h.status().await;
    assert_eq!(s.error.as_deref(), Some("session expired"));
    assert_eq!(
        s.action.as_deref(),
        Some("run `scv-bridge login wechat phone`")
    );
    // The cause and the command travel as their own fields too.
    assert_eq!(s.code.as_deref(), Some("wechat.session_expired"));
    assert_eq!(s.command.as_deref(), Some("scv-bridge login wechat phone"));
    // Failed means no polling loop: the supervisor marks an account Failed only after its task
    // has returned, and that task is the only poller (the WeChat account spawns none of its own),
    // so nothing is left that could poll. A live loop always holds a long poll open at the fake.
    within(
        async {
            loop {
                // Armed before the check: a poll ending is a change of the fake's.
                let changed = fake.changed();
                if fake.polls_in_flight() == 0 {
                    break;
                }
                changed.await;
            }
        },
        "the last poll to be answered",
    )
    .await;
    let polls = fake.requests_to(Endpoint::GetUpdates).len();
    assert!(polls > 0);

    let ui = ScriptedUi::default();
    let driver = tokio::spawn(phone(fake.clone(), ui.clone(), false));
    let args = quick_login(h.fake.base_url());
    let mut login_ui = ui.clone();
    let line = within(
        scv_bridge::login::run_with(Channel::Wechat, &h.config(), "phone", &args, &mut login_ui),
        "the login",
    )
    .await
    .expect("login succeeds");
    driver.await.expect("phone");
    assert!(line.contains("picked up the new credentials"), "{line}");
    h.wait_state(ComponentState::Connected).await;
    let s = h.status().await;
    assert_eq!(s.error, None);
    assert_eq!(s.user_id.as_deref(), Some(OWNER));
    fake.push_text(OWNER, "back?");
    assert_eq!(h.wait_sent(1).await, ["echo: back?"]);
    h.stop().await;
}
