//! The sender against the fake iLink server: window, pacing, `-2` hold, retried `client_id`s.

use super::*;
use crate::config::{AccountKey, Channel};
use crate::conversation::body::Question;
use crate::conversation::{Body, ChatId, OutboundKind, ReplyContext};
use crate::store::{AccountState, Store, StoreGuard};
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeHandle, FakeServer, Fault};

const OWNER: &str = "owner@im.wechat";
const ACCOUNT: &str = "wechat:t";

struct Setup {
    fake: FakeServer,
    sender: WechatSender,
    peers: Arc<Peers>,
    store: Store,
    state: AccountState,
    _guard: StoreGuard,
}

async fn setup(per_message: u32) -> Setup {
    let tuning = Tuning {
        min_send_interval: Duration::from_millis(10),
        slow_down_base: Duration::from_millis(200),
        ..Tuning::default()
    };
    setup_with(per_message, tuning).await
}

async fn setup_with(per_message: u32, tuning: Tuning) -> Setup {
    let fake = FakeServer::start().await.expect("fake");
    let client = Client::new(&fake.base_url(), fake.handle().bot_token()).expect("client");
    let (store, guard) = Store::open_in_memory().expect("store");
    let state = AccountState::new(store.clone(), ACCOUNT);
    let peers = Arc::new(Peers::new(state.clone(), crate::clock::Clock::system()));
    let sender = WechatSender::new(
        ACCOUNT.into(),
        AccountKey::new(Channel::Wechat, "t"),
        client,
        state.clone(),
        peers.clone(),
        tuning,
        Duration::from_secs(24 * 3600),
        per_message,
    );
    Setup {
        fake,
        sender,
        peers,
        store,
        state,
        _guard: guard,
    }
}

fn outbound(key: &str, text: &str) -> Outbound {
    Outbound {
        id: 1,
        account: AccountKey::new(Channel::Wechat, "t"),
        chat: ChatId::new(OWNER),
        text: text.into(),
        idempotency_key: key.into(),
        reply: ReplyContext::default(),
        latest_reply: ReplyContext::default(),
        kind: OutboundKind::Reply,
        body: Body::Text,
        target: None,
        finishes: None,
    }
}

/// The owner writes; the adapter stores the token as the poll loop does.
async fn owner_writes(s: &Setup, handle: &FakeHandle) -> String {
    let m = handle.push_text(OWNER, "hi");
    let token = m.context_token.expect("token");
    s.peers
        .record_inbound(vec![(OWNER.into(), token.clone(), s.peers.now_ms())])
        .await
        .expect("record");
    token
}

#[test]
fn client_ids_are_stable_per_item_and_distinct_between_items() {
    let a = client_id_for("wechat:t/id:1/0");
    assert_eq!(a, client_id_for("wechat:t/id:1/0"));
    assert_ne!(a, client_id_for("wechat:t/id:1/1"));
    assert!(a.starts_with("scvb-") && a.len() == 5 + 32, "{a}");
    assert!(!a.contains("wechat:t"));
}

#[test]
fn window_rules() {
    let day = Duration::from_secs(24 * 3600);
    let p = |age_ms: i64, sends: u32| PeerWindow {
        context_token: "ctx".into(),
        last_inbound_ms: 1_000_000_000 - age_ms,
        sends,
    };
    let now = 1_000_000_000;
    assert_eq!(open_window(None, now, day, 10), None);
    assert_eq!(
        open_window(Some(&p(0, 0)), now, day, 10).as_deref(),
        Some("ctx")
    );
    assert!(open_window(Some(&p(day.as_millis() as i64, 9)), now, day, 10).is_some());
    assert_eq!(
        open_window(Some(&p(day.as_millis() as i64 + 1, 0)), now, day, 10),
        None
    );
    assert_eq!(open_window(Some(&p(0, 10)), now, day, 10), None);
    let mut empty = p(0, 0);
    empty.context_token.clear();
    assert_eq!(open_window(Some(&empty), now, day, 10), None);
}

#[tokio::test]
async fn nothing_is_sent_before_the_peer_writes() {
    let s = setup(10).await;
    let r = s.sender.send(&outbound("k/0", "hello")).await;
    assert_eq!(
        r,
        Err(SendError::window_closed(
            failure::WINDOW_CLOSED,
            WINDOW_CLOSED
        ))
    );
    assert!(
        s.fake
            .handle()
            .requests_to(Endpoint::SendMessage)
            .is_empty()
    );
}

#[tokio::test]
async fn sends_use_the_latest_token_and_count_against_the_window() {
    let s = setup(2).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    let latest = owner_writes(&s, &h).await;
    assert_eq!(
        s.sender.send(&outbound("k/0", "one")).await,
        Ok(Sent::default())
    );
    assert_eq!(
        s.sender.send(&outbound("k/1", "two")).await,
        Ok(Sent::default())
    );
    assert!(matches!(
        s.sender.send(&outbound("k/2", "three")).await,
        Err(SendError {
            class: Class::WindowClosed,
            ..
        })
    ));
    let sent = h.sent();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|m| m.context_token == latest));
    assert_eq!(sent[0].client_id, client_id_for("k/0"));
    // The count survives a restart (a fresh cache reads the store).
    let fresh = Peers::new(s.state.clone(), crate::clock::Clock::system());
    assert_eq!(
        fresh.get(OWNER).await.expect("get").map(|w| w.sends),
        Some(2)
    );
    // The owner writes again: the window reopens.
    owner_writes(&s, &h).await;
    assert_eq!(
        s.sender.send(&outbound("k/2", "three")).await,
        Ok(Sent::default())
    );
}

#[tokio::test]
async fn what_wechat_took_is_recorded_in_one_commit_and_never_sent_again() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    let commits = || {
        s.store
            .counters()
            .commits
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let before = commits();
    let msg = outbound("k/0", "one");
    assert_eq!(s.sender.send(&msg).await, Ok(Sent::default()));
    // One commit before the request (the attempt) and ONE after it: the outcome and the
    // peer's window count land together, so no crash can keep one without the other.
    assert_eq!(commits() - before, 2, "the attempt, then the record");
    let id = client_id_for("k/0");
    let (state, sends) = state::inspect(&s.state, &id, OWNER).await;
    let (state, sends) = (state.unwrap_or_default(), sends.unwrap_or_default());
    assert_eq!((state.as_str(), sends), ("accepted", 1));
    // A restarted sender retrying the same item (the outbox had not marked it) sends nothing.
    let again = restarted(&s, Tuning::default()).await;
    assert_eq!(
        again.send(&outbound("k/0", "one")).await,
        Ok(Sent::default())
    );
    assert_eq!(h.sent().len(), 1, "sent once");
}

#[tokio::test]
async fn a_refusal_holds_every_send_of_the_account() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    h.inject(Endpoint::SendMessage, Fault::ret(-2));
    let first = s.sender.send(&outbound("k/0", "one")).await;
    assert!(
        matches!(first, Err(SendError { class: Class::SlowDown(d), .. }) if d == Duration::from_millis(200))
    );
    // Another chat's item during the hold is not even tried.
    let during = s.sender.send(&outbound("j/0", "two")).await;
    assert!(
        matches!(during, Err(SendError { class: Class::SlowDown(d), .. }) if d <= Duration::from_millis(200))
    );
    assert_eq!(h.requests_to(Endpoint::SendMessage).len(), 1);
    tokio::time::sleep(Duration::from_millis(210)).await;
    // The retry of a definite refusal is not ambiguous: it goes out and is taken.
    assert_eq!(
        s.sender.send(&outbound("k/0", "one")).await,
        Ok(Sent::default())
    );
    assert_eq!(h.sent().len(), 1);
    // A second refusal later starts from the base hold again (the accept reset it).
    h.inject(Endpoint::SendMessage, Fault::ret(-2));
    let again = s.sender.send(&outbound("j/0", "two")).await;
    assert!(
        matches!(again, Err(SendError { class: Class::SlowDown(d), .. }) if d == Duration::from_millis(200))
    );
}

#[tokio::test]
async fn refusals_in_a_row_double_the_hold_and_never_count_as_delivered() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    let mut holds = Vec::new();
    for _ in 0..3 {
        h.inject(Endpoint::SendMessage, Fault::ret(-2));
        match s.sender.send(&outbound("k/0", "one")).await {
            Err(SendError {
                class: Class::SlowDown(d),
                ..
            }) => holds.push(d),
            other => panic!("expected a hold, got {other:?}"),
        }
        tokio::time::sleep(holds[holds.len() - 1] + Duration::from_millis(10)).await;
    }
    assert_eq!(
        holds,
        [200, 400, 800].map(Duration::from_millis).to_vec(),
        "the hold doubles"
    );
    assert!(h.sent().is_empty());
}

#[tokio::test]
async fn a_retry_refused_as_a_repeat_after_a_lost_answer_counts_as_delivered() {
    let s = setup(10).await;
    let h = s.fake.handle();
    let token = owner_writes(&s, &h).await;
    let id = client_id_for("k/0");
    // The first attempt: recorded as started, taken by the platform, then its answer was lost
    // (a timeout): the outcome is recorded as unknown.
    state::begin_send(&s.state, &id, s.peers.now_ms())
        .await
        .expect("begin");
    s.sender
        .client
        .send_text(OWNER, Some(&token), "one", &id)
        .await
        .expect("first attempt taken");
    state::finish_send(&s.state, &id, SendOutcome::Unknown, s.peers.now_ms())
        .await
        .expect("finish");
    // The outbox retries the same item: the platform refuses the reused id.
    assert_eq!(
        s.sender.send(&outbound("k/0", "one")).await,
        Ok(Sent::default())
    );
    assert_eq!(h.sent().len(), 1, "sent once");
    assert_eq!(
        h.rejected().len(),
        1,
        "the repeat was refused by the platform"
    );
    // And it is remembered: a further retry does not call the platform at all.
    let requests = h.requests_to(Endpoint::SendMessage).len();
    assert_eq!(
        s.sender.send(&outbound("k/0", "one")).await,
        Ok(Sent::default())
    );
    assert_eq!(h.requests_to(Endpoint::SendMessage).len(), requests);
}

#[tokio::test]
async fn a_send_a_crash_interrupted_is_held_and_the_chat_told_once() {
    let s = setup(10).await;
    let h = s.fake.handle();
    let token = owner_writes(&s, &h).await;
    let id = client_id_for("k/0");
    let text = "Sure, here is the plan for tomorrow: first the station, then the market.";
    // The last run recorded the attempt and sent it; WeChat took it, and the process died
    // before the answer came back.
    state::begin_send(&s.state, &id, s.peers.now_ms())
        .await
        .expect("begin");
    s.sender
        .client
        .send_text(OWNER, Some(&token), text, &id)
        .await
        .expect("taken");
    let again = restarted(&s, Tuning::default()).await;
    let msg = outbound("k/0", text);
    assert_eq!(again.send(&msg).await, Ok(Sent::default()));
    // Not sent again under any id: the chat gets a note in its place instead.
    let sent: Vec<String> = h.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], text);
    assert!(
        sent[1].contains("/again")
            && sent[1].contains("\"Sure, here is the plan for tomorrow: fir…\""),
        "{}",
        sent[1]
    );
    assert!(h.rejected().is_empty(), "nothing was tried under a used id");
    let (record, _) = state::inspect(&s.state, &id, OWNER).await;
    assert_eq!(record.as_deref(), Some("held"));
    // The outbox asking again (it had not marked the item) changes nothing.
    assert_eq!(again.send(&msg).await, Ok(Sent::default()));
    assert_eq!(h.sent().len(), 2, "one note");
}

#[tokio::test]
async fn a_held_reply_in_chinese_gets_its_note_in_chinese() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    let id = client_id_for("k/0");
    // The crash came before the request left: nothing was shown, and the note still says how
    // to get the reply.
    state::begin_send(&s.state, &id, s.peers.now_ms())
        .await
        .expect("begin");
    let msg = outbound("k/0", "好的，明天的计划如下");
    assert_eq!(s.sender.send(&msg).await, Ok(Sent::default()));
    let sent: Vec<String> = h.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        sent[0].contains("重启")
            && sent[0].contains("/again")
            && sent[0].contains("好的，明天的计划如下"),
        "{}",
        sent[0]
    );
}

#[tokio::test]
async fn typing_fetches_a_ticket_once_and_cancels() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    let chat = ChatId::new(OWNER);
    let reply = ReplyContext::default();
    s.sender.typing(&chat, &reply, true).await;
    s.sender.typing(&chat, &reply, true).await;
    s.sender.typing(&chat, &reply, false).await;
    let calls: Vec<i64> = h.typing().iter().map(|t| t.status).collect();
    assert_eq!(calls, [1, 1, 2]);
    assert_eq!(h.requests_to(Endpoint::GetConfig).len(), 1);
}

/// Another run's sender over the same store and fake, as the component builds it after a restart.
async fn restarted(s: &Setup, tuning: Tuning) -> WechatSender {
    let client = Client::new(&s.fake.base_url(), s.fake.handle().bot_token()).expect("client");
    let sender = WechatSender::new(
        ACCOUNT.into(),
        AccountKey::new(Channel::Wechat, "t"),
        client,
        s.state.clone(),
        Arc::new(Peers::new(s.state.clone(), crate::clock::Clock::system())),
        tuning,
        Duration::from_secs(24 * 3600),
        10,
    );
    let (last, hold) = state::pacing(&s.state).await.expect("pacing");
    sender.resume(last, hold);
    sender
}

#[test]
fn instants_of_past_wall_times() {
    let now = Instant::now();
    assert_eq!(instant_of(1_000, 1_000, now), Some(now));
    assert_eq!(
        instant_of(400, 1_000, now),
        now.checked_sub(Duration::from_millis(600))
    );
    assert_eq!(
        instant_of(2_000, 1_000, now),
        None,
        "a time ahead is ignored"
    );
}

#[tokio::test]
async fn a_restart_keeps_the_refusal_hold() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    h.inject(Endpoint::SendMessage, Fault::ret(-2));
    let first = s.sender.send(&outbound("k/0", "one")).await;
    assert!(
        matches!(
            first,
            Err(SendError {
                class: Class::SlowDown(_),
                ..
            })
        ),
        "{first:?}"
    );
    let tuning = Tuning {
        min_send_interval: Duration::from_millis(10),
        slow_down_base: Duration::from_secs(60),
        ..Tuning::default()
    };
    let next = restarted(&s, tuning).await;
    let during = next.send(&outbound("j/0", "two")).await;
    assert!(
        matches!(during, Err(SendError { class: Class::SlowDown(d), .. }) if d <= Duration::from_millis(200)),
        "the new run sent into the hold: {during:?}"
    );
    assert_eq!(h.requests_to(Endpoint::SendMessage).len(), 1);
}

#[tokio::test]
async fn a_restart_keeps_the_pace_of_the_previous_run() {
    let slow = Tuning {
        min_send_interval: Duration::from_secs(60),
        slow_down_base: Duration::from_millis(200),
        ..Tuning::default()
    };
    let s = setup_with(10, slow.clone()).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    assert_eq!(
        s.sender.send(&outbound("k/0", "one")).await,
        Ok(Sent::default())
    );
    // The next run may not send until a minute after that send.
    let next = restarted(&s, slow).await;
    let paced = tokio::time::timeout(
        Duration::from_millis(200),
        next.send(&outbound("j/0", "two")),
    )
    .await;
    assert!(paced.is_err(), "the new run sent at once");
    assert_eq!(h.sent().len(), 1);
}

#[tokio::test]
async fn a_question_goes_out_as_its_text_with_the_code() {
    let s = setup(10).await;
    let h = s.fake.handle();
    owner_writes(&s, &h).await;
    let text = "Deploy?\nReply Y 7F or N 7F before 14:30";
    let mut msg = outbound("confirm/q-7/ask/0", text);
    msg.body = Body::Question(Question {
        id: "q-7".into(),
        text: "Deploy?".into(),
        code: "7F".into(),
        deadline: "14:30".into(),
        buttons: false,
    });
    assert_eq!(s.sender.send(&msg).await, Ok(Sent::default()));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, text, "one text item, the code in it");
}
