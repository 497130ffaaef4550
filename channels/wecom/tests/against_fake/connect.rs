//! Subscribe, credentials, heartbeat, one connection per bot, drops and backoff (§1, §7.2–§7.6).

use std::time::Duration;

use scv_wecom::classify::{BAD_SECRET, INVALID_BOT_ID, NOT_SUBSCRIBED, RATE_LIMITED};
use scv_wecom::fake::{FakeConfig, FakeWeCom};
use scv_wecom::frame::cmd;
use scv_wecom::limits::{PING_INTERVAL, SUBSCRIBE_RATE_LIMIT_WAIT};
use scv_wecom::{Credentials, Error, ErrorClass, FatalReason, LinkState, login};

use crate::{PROMPTLY, Running, about, options, ticker};

/// Times of the subscribe frames the fake received, relative to the first.
fn subscribe_gaps(fake: &FakeWeCom) -> Vec<Duration> {
    let at: Vec<_> = fake
        .frames_of(cmd::SUBSCRIBE)
        .iter()
        .map(|f| f.at)
        .collect();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

#[tokio::test(start_paused = true)]
async fn subscribes_then_pings_every_30_s_without_a_body() {
    let r = Running::start(FakeConfig::default()).await;
    let first = r
        .conn
        .status()
        .borrow()
        .last_evidence
        .expect("evidence at subscribe");
    let subscribe = &r.fake.frames_of(cmd::SUBSCRIBE)[0];
    let body = subscribe.body.as_ref().expect("subscribe has a body");
    assert_eq!(body["bot_id"], r.fake.config().bot_id);
    assert_eq!(
        body.as_object().unwrap().len(),
        2,
        "only bot_id and secret: {body:?}"
    );
    tokio::time::sleep(PING_INTERVAL * 3 + Duration::from_secs(1)).await;
    assert_eq!(r.fake.pings(), 3);
    assert_eq!(r.fake.pings_with_body(), 0);
    let pings = r.fake.frames_of(cmd::PING);
    assert!(about(pings[1].at - pings[0].at, PING_INTERVAL));
    assert!(pings.iter().all(|p| p.errcode == Some(0)));
    let status = r.conn.status().borrow().clone();
    assert_eq!(status.state, LinkState::Connected);
    assert!(status.last_evidence.unwrap() > first, "pongs are evidence");
    assert_eq!(r.fake.accepted(), 1);
    r.stop().await.expect("clean stop");
}

async fn refused(creds: Credentials, want_code: i64) {
    let fake = FakeWeCom::start(FakeConfig::default()).await.unwrap();
    let r = Running::with(fake, creds).await;
    let out = tokio::time::timeout(PROMPTLY, r.task)
        .await
        .expect("stops")
        .unwrap();
    let err = out.expect_err("refused credentials end the run");
    assert!(
        matches!(err, Error::CredentialsInvalid { code, .. } if code == want_code),
        "{err}"
    );
    assert_eq!(
        err.class(),
        ErrorClass::Fatal {
            relogin: true,
            reason: FatalReason::BadCredentials
        }
    );
    assert_eq!(
        r.conn.status().borrow().state,
        LinkState::CredentialsInvalid
    );
    // No further dialling in two minutes (4x the largest backoff).
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(r.fake.accepted(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_wrong_bot_id_stops_for_good_as_credentials_invalid() {
    refused(
        Credentials::new("aibfakebot01", "fake-bot-secret"),
        INVALID_BOT_ID,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_wrong_secret_stops_for_good_as_credentials_invalid() {
    refused(Credentials::new("aibFakeBot01", "wrong"), BAD_SECRET).await;
}

#[tokio::test(start_paused = true)]
async fn the_login_check_proves_credentials_by_subscribing_once() {
    let _t = ticker();
    let fake = FakeWeCom::start(FakeConfig::default()).await.unwrap();
    let id = login::check(&options(&fake), &fake.credentials())
        .await
        .expect("valid");
    assert_eq!(id.bot_id, fake.config().bot_id);
    let bad = login::check(&options(&fake), &Credentials::new("aibFakeBot01", "nope")).await;
    let err = bad.expect_err("wrong secret");
    assert!(
        matches!(
            err,
            Error::CredentialsInvalid {
                code: BAD_SECRET,
                ..
            }
        ),
        "{err}"
    );
    fake.fail_subscribes(RATE_LIMITED, 1);
    let err = login::check(&options(&fake), &fake.credentials())
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::SlowDown(SUBSCRIBE_RATE_LIMIT_WAIT));
    assert!(!format!("{err:?} {err}").contains("fake-bot-secret"));
    assert!(
        fake.wait_until(PROMPTLY, |f| f.live_connections() == 0)
            .await,
        "sockets closed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_subscribe_waits_a_minute_and_is_no_auth_failure() {
    let fake = FakeWeCom::start(FakeConfig::default()).await.unwrap();
    // More refusals than the auth-failure limit: counted as auth failures, they would be fatal.
    fake.fail_subscribes(RATE_LIMITED, 4);
    let creds = fake.credentials();
    let r = Running::with(fake, creds).await;
    tokio::time::timeout(Duration::from_secs(400), async {
        let mut s = r.conn.status();
        s.wait_for(|s| s.state == LinkState::Connected)
            .await
            .map(drop)
    })
    .await
    .expect("subscribed after the waits")
    .unwrap();
    let gaps = subscribe_gaps(&r.fake);
    assert_eq!(gaps.len(), 4);
    assert!(
        gaps.iter().all(|g| *g >= SUBSCRIBE_RATE_LIMIT_WAIT),
        "{gaps:?}"
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn busy_subscribe_retries_after_a_second_and_unknown_refusals_become_fatal() {
    let fake = FakeWeCom::start(FakeConfig::default()).await.unwrap();
    fake.fail_subscribes(-1, 2);
    let creds = fake.credentials();
    let r = Running::with(fake, creds).await;
    r.connected().await;
    let gaps = subscribe_gaps(&r.fake);
    assert_eq!(gaps.len(), 2);
    assert!(
        about(gaps[0], Duration::from_secs(1)) && about(gaps[1], Duration::from_secs(2)),
        "{gaps:?}"
    );
    r.stop().await.unwrap();

    let fake = FakeWeCom::start(FakeConfig::default()).await.unwrap();
    fake.fail_subscribes(12345, 3);
    let creds = fake.credentials();
    let r = Running::with(fake, creds).await;
    let err = tokio::time::timeout(PROMPTLY, r.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, Error::CredentialsInvalid { code: 12345, .. }),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_subscriber_supersedes_the_first_which_never_dials_again() {
    let mut first = Running::start(FakeConfig::default()).await;
    let second = scv_wecom::Connection::new(first.fake.credentials(), options(&first.fake));
    let (tx, _rx2) = tokio::sync::mpsc::channel(8);
    let cancel = tokio_util::sync::CancellationToken::new();
    let second_task = tokio::spawn({
        let (c, k) = (second.clone(), cancel.clone());
        async move { c.run(tx, k).await }
    });
    // The disconnected_event reaches the journal like any callback.
    let d = first.next().await;
    assert!(matches!(
        d.callback().unwrap().kind,
        scv_wecom::CallbackKind::Event(scv_wecom::Event::Disconnected)
    ));
    let out = tokio::time::timeout(PROMPTLY, &mut first.task)
        .await
        .unwrap()
        .unwrap();
    let err = out.expect_err("superseded is final");
    assert!(matches!(err, Error::Superseded));
    assert_eq!(
        err.class(),
        ErrorClass::Fatal {
            relogin: false,
            reason: FatalReason::Superseded
        }
    );
    assert_eq!(first.conn.status().borrow().state, LinkState::Superseded);
    // No mutual kicking: two minutes on (4x the largest backoff), still two sockets ever.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(first.fake.accepted(), 2);
    assert_eq!(second.status().borrow().state, LinkState::Connected);
    assert!(first.fake.subscribed());
    cancel.cancel();
    second_task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn two_missed_pongs_reconnect() {
    let r = Running::start(FakeConfig::default()).await;
    r.fake.silence_pings(true);
    let mut status = r.conn.status();
    tokio::time::timeout(
        Duration::from_secs(200),
        status.wait_for(|s| s.subscribes == 2),
    )
    .await
    .expect("a new subscription")
    .unwrap();
    // Pings at 30 and 60 s go unanswered; the 90 s tick finds two missing and redials.
    let subs = r.fake.frames_of(cmd::SUBSCRIBE);
    let gap = subs[1].at - subs[0].at;
    assert!(
        gap >= PING_INTERVAL * 3 && gap <= PING_INTERVAL * 3 + Duration::from_secs(2),
        "{gap:?}"
    );
    assert!(
        status
            .borrow()
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("pings")
    );
    r.fake.silence_pings(false);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn drops_reconnect_with_doubling_backoff_that_resets_after_a_subscribe() {
    let r = Running::start(FakeConfig::default()).await;
    r.fake.fail_subscribes(-1, 3);
    r.fake.drop_all();
    let mut status = r.conn.status();
    tokio::time::timeout(PROMPTLY, status.wait_for(|s| s.subscribes == 2))
        .await
        .unwrap()
        .unwrap();
    // Dial 1 s after the drop (refused), then 2 s and 4 s later, then subscribed 8 s later.
    let gaps = subscribe_gaps(&r.fake);
    let want = [2, 4, 8].map(Duration::from_secs);
    assert!(
        gaps[1..].iter().zip(want).all(|(g, w)| about(*g, w)),
        "{gaps:?}"
    );
    // Subscribed: the count starts again, a close frame is followed by a dial after 1 s.
    r.fake.close_all(1001);
    tokio::time::timeout(PROMPTLY, status.wait_for(|s| s.subscribes == 3))
        .await
        .unwrap()
        .unwrap();
    let gaps = subscribe_gaps(&r.fake);
    assert!(gaps[4] < Duration::from_secs(2), "{gaps:?}");
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn commands_before_subscribe_are_refused_with_846609() {
    use futures_util::{SinkExt, StreamExt};
    let _t = ticker();
    let fake = FakeWeCom::start(FakeConfig::default()).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(fake.ws_url())
        .await
        .unwrap();
    let frame = scv_wecom::frame::request(cmd::SEND_MSG, "r1", Some(serde_json::json!({})));
    ws.send(tokio_tungstenite::tungstenite::Message::text(frame))
        .await
        .unwrap();
    let answer = ws.next().await.unwrap().unwrap().into_text().unwrap();
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["errcode"], NOT_SUBSCRIBED);
    assert!(v.get("cmd").is_none(), "responses carry no cmd");
    // The client's reading of it: the subscription is gone, reconnect and retry.
    let err = Error::Platform {
        cmd: cmd::SEND_MSG,
        code: NOT_SUBSCRIBED,
        errmsg: String::new(),
    };
    assert_eq!(err.class(), ErrorClass::Transient);
}

#[tokio::test(start_paused = true)]
async fn a_reply_waiting_when_the_socket_dies_goes_out_proactively_on_the_next_one() {
    let mut r = Running::start(FakeConfig::default()).await;
    let p = r.fake.push_text(crate::OWNER, "hi");
    assert!(p.delivered);
    let (_cb, handle) = r.next_handle().await;
    r.fake
        .fail_next(cmd::RESPOND_MSG, scv_wecom::fake::Fault::NoAck, 1);
    let reply = tokio::spawn({
        let (conn, handle) = (r.conn.clone(), handle.clone());
        async move { conn.reply_or_send(&handle, "the answer").await }
    });
    assert!(
        r.fake
            .wait_until(PROMPTLY, |f| !f.frames_of(cmd::RESPOND_MSG).is_empty())
            .await
    );
    r.fake.drop_all();
    let route = tokio::time::timeout(PROMPTLY, reply)
        .await
        .unwrap()
        .unwrap()
        .expect("sent");
    assert_eq!(route, scv_wecom::Route::Proactive);
    let sent = r.fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].cmd, cmd::SEND_MSG);
    assert_eq!(sent[0].to, crate::OWNER);
    assert_eq!(sent[0].body["markdown"]["content"], "the answer");
    assert_eq!(r.fake.accepted(), 2, "sent on the new socket");
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_upgrades_is_given_up_on_and_dialled_again() {
    let _t = ticker();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let opts = scv_wecom::Options {
        jitter: 0.0,
        ..scv_wecom::Options::with_url(url)
    };
    let conn = scv_wecom::Connection::new(Credentials::new("aib1", "s"), opts);
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn({
        let (c, k) = (conn.clone(), cancel.clone());
        async move { c.run(tx, k).await }
    });
    // Accepted and held open, never answered.
    let _first = listener.accept().await.unwrap();
    let since = tokio::time::Instant::now();
    let _second = tokio::time::timeout(PROMPTLY, listener.accept())
        .await
        .expect("dialled again");
    let waited = since.elapsed();
    assert!(
        about(
            waited,
            scv_wecom::limits::SUBSCRIBE_TIMEOUT + Duration::from_secs(1)
        ),
        "{waited:?}"
    );
    let status = conn.status().borrow().clone();
    assert!(status.last_error.unwrap().contains("handshake"));
    cancel.cancel();
    task.await.unwrap().unwrap();
}
