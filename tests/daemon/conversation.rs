//! The conversation pipeline end to end with an in-memory chat platform and in-process agents.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::AgentErrorKind;
use scv_bridge::conversation::*;
use scv_bridge::failure::{Code, general};
use scv_bridge::protocol::{NoteSource, Purpose, RemoteTools, Senders};
use tokio::sync::{Notify, watch};

use crate::conversation_support;
use conversation_support::*;

#[tokio::test]
async fn the_owner_gets_an_answer_with_reply_context() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Chat);
    let acc = s
        .conv
        .accept(vec![msg("m1", OWNER, "hello")])
        .await
        .expect("accept");
    assert_eq!(
        acc,
        Accepted {
            new: 1,
            duplicates: 0
        }
    );
    s.channel.wait_sent(1).await;
    // The sign is cleared beside the send, before the chat's worker parks.
    tokio::time::timeout(Duration::from_secs(10), s.conv.quiescent())
        .await
        .expect("quiescent");
    let sent = s.channel.sent();
    assert_eq!(sent[0].text, "echo: hello");
    assert_eq!(sent[0].reply, ReplyContext("ctx-m1".into()));
    assert_eq!(sent[0].latest_reply, ReplyContext("ctx-m1".into()));
    assert_eq!(sent[0].kind, OutboundKind::Reply);
    let req = &s.agent.requests.lock().expect("lock")[0];
    assert!(
        req.no_tools && !req.auto_approve,
        "remote_tools = none: tool-free"
    );
    assert_eq!(req.channel_label, "WeChat");
    let typing = s.channel.typing_calls();
    assert_eq!(typing.first().map(|t| t.1), Some(true));
    assert_eq!(typing.last().map(|t| t.1), Some(false));
}

#[tokio::test]
async fn a_stranger_under_senders_owner_gets_nothing_and_the_agent_is_never_called() {
    let s = setup(Senders::Owner, RemoteTools::Owner, Purpose::Chat);
    s.conv
        .accept(vec![
            msg("s1", "stranger", "let me in"),
            msg("s2", "stranger", "/new"),
        ])
        .await
        .expect("accept");
    // The owner's message after them is answered, proving the stranger's were processed (dropped) first.
    s.conv
        .accept(vec![msg("o1", OWNER, "hi")])
        .await
        .expect("accept");
    s.channel.wait_sent(1).await;
    assert_eq!(s.agent.prompts(), ["hi"]);
    assert!(s.channel.texts("stranger").is_empty());
    assert_eq!(s.conv.stats().get(&account(), "dropped_not_owner"), 2);
}

#[tokio::test]
async fn strangers_under_anyone_are_tool_free_while_the_owner_gets_tools() {
    let s = setup(Senders::Anyone, RemoteTools::Owner, Purpose::Chat);
    s.conv
        .accept(vec![msg("s1", "stranger", "hi"), msg("o1", OWNER, "hi")])
        .await
        .expect("accept");
    s.channel.wait_sent(2).await;
    let reqs = s.agent.requests.lock().expect("lock").clone();
    let by = |who: &str| {
        reqs.iter()
            .find(|r| r.session.chat.as_str() == who)
            .expect("request")
            .clone()
    };
    assert!(by("stranger").no_tools && !by("stranger").auto_approve);
    assert!(!by(OWNER).no_tools && by(OWNER).auto_approve);
}

#[tokio::test]
async fn a_duplicate_delivery_is_answered_once() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Chat);
    s.conv
        .accept(vec![msg("m1", OWNER, "once"), msg("m1", OWNER, "once")])
        .await
        .expect("accept");
    let again = s
        .conv
        .accept(vec![msg("m1", OWNER, "once")])
        .await
        .expect("accept");
    assert_eq!(
        again,
        Accepted {
            new: 0,
            duplicates: 1
        }
    );
    s.conv
        .accept(vec![msg("m2", OWNER, "twice")])
        .await
        .expect("accept");
    s.channel.wait_sent(2).await;
    assert_eq!(s.channel.texts(OWNER), ["echo: once", "echo: twice"]);
    assert_eq!(s.agent.prompts(), ["once", "twice"]);
    assert_eq!(s.conv.stats().get(&account(), "dropped_duplicate"), 2);
}

// Paused clock: the wait for mail accounts to start passes without real waiting.
#[tokio::test(start_paused = true)]
async fn a_mail_command_with_no_mail_account_is_answered_not_swallowed() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Mail);
    s.conv
        .accept(vec![msg("d1", OWNER, "/digest")])
        .await
        .expect("accept");
    s.channel.wait_sent(1).await;
    let texts = s.channel.texts(OWNER);
    assert!(
        texts[0].starts_with("No mail account reports to this chat"),
        "{texts:?}"
    );
    assert_eq!(
        s.conv
            .stats()
            .get(&account(), "dropped_mail_chat_unhandled"),
        1
    );
    assert!(s.agent.prompts().is_empty());
}

#[tokio::test]
async fn a_crash_after_journaling_answers_exactly_once_after_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    {
        let (store, guard) = open(&path);
        let agent = TestAgent::new();
        *agent.gate.lock().expect("lock") = Some(Arc::new(Notify::new())); // never answers
        let conv = Conversation::new(store, agent.clone());
        let channel = MemoryChannel::new(2000, Duration::ZERO);
        let att = conv.attach(link(
            &channel,
            Senders::Owner,
            RemoteTools::None,
            Purpose::Chat,
        ));
        conv.accept(vec![msg("m1", OWNER, "survive")])
            .await
            .expect("accept");
        agent.wait_calls(1).await;
        // "kill -9": nothing is shut down gracefully; the turn never finished.
        std::mem::forget(att);
        std::mem::forget(conv);
        drop(guard);
    }
    let (store, _guard) = open(&path);
    let agent = TestAgent::new();
    let conv = Conversation::new(store, agent.clone());
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let _att = conv.attach(link(
        &channel,
        Senders::Owner,
        RemoteTools::None,
        Purpose::Chat,
    ));
    channel.wait_sent(1).await;
    // A redelivery of the same message after the restart is still a duplicate.
    conv.accept(vec![msg("m1", OWNER, "survive"), msg("m2", OWNER, "next")])
        .await
        .expect("accept");
    channel.wait_sent(2).await;
    assert_eq!(channel.texts(OWNER), ["echo: survive", "echo: next"]);
    assert_eq!(agent.prompts(), ["survive", "next"]);
}

#[tokio::test]
async fn a_crash_after_the_answer_was_stored_sends_it_once_after_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    {
        let (store, guard) = open(&path);
        let agent = TestAgent::new();
        let conv = Conversation::new(store, agent.clone());
        let channel = MemoryChannel::new(2000, Duration::ZERO);
        // The platform is down: the answer stays in the outbox.
        channel.fail_next(std::iter::repeat_n(
            SendError::transient(general::NETWORK, "down"),
            1000,
        ));
        let att = conv.attach(link(
            &channel,
            Senders::Owner,
            RemoteTools::None,
            Purpose::Chat,
        ));
        conv.accept(vec![msg("m1", OWNER, "stored")])
            .await
            .expect("accept");
        agent.wait_calls(1).await;
        while conv.stats().get(&account(), "send_failed_transient") == 0 {
            tokio::task::yield_now().await;
        }
        std::mem::forget(att);
        std::mem::forget(conv);
        drop(guard);
    }
    let (store, _guard) = open(&path);
    let agent = TestAgent::new();
    let conv = Conversation::new(store, agent.clone());
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let _att = conv.attach(link(
        &channel,
        Senders::Owner,
        RemoteTools::None,
        Purpose::Chat,
    ));
    channel.wait_sent(1).await;
    let sent = channel.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "echo: stored");
    assert!(agent.prompts().is_empty(), "the agent is not asked again");
}

#[tokio::test]
async fn a_twenty_thousand_character_reply_arrives_in_order_within_the_limit() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Chat);
    let mut long = String::new();
    for i in 0..400 {
        long.push_str(&format!(
            "Line {i:03} of the answer, a sentence of some length. "
        ));
        if i % 20 == 19 {
            long.push_str("\n\n```\nfn block() {}\nlet x = 1;\n```\n\n");
        }
    }
    assert!(long.chars().count() > 17_000);
    *s.agent.answer.lock().expect("lock") = Some(long.clone());
    s.conv
        .accept(vec![msg("m1", OWNER, "write a lot")])
        .await
        .expect("accept");
    let n = split(&long, 2000).len();
    s.channel.wait_sent(n).await;
    let texts = s.channel.texts(OWNER);
    assert_eq!(texts.len(), n);
    assert!(texts.iter().all(|t| t.chars().count() <= 2000));
    assert!(
        texts.iter().all(|t| t.matches("```").count() % 2 == 0),
        "code blocks intact"
    );
    let strip = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    assert_eq!(
        strip(&texts.concat()),
        strip(&long),
        "in order, nothing lost"
    );
    let keys: Vec<String> = s
        .channel
        .sent()
        .iter()
        .map(|o| o.idempotency_key.clone())
        .collect();
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(
        unique.len(),
        keys.len(),
        "every piece has its own idempotency key"
    );
}

#[tokio::test(start_paused = true)]
async fn agent_down_then_up_tells_the_owner_once_and_answers_later() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Chat);
    *s.agent.down.lock().expect("lock") = Some(AgentErrorKind::Unavailable);
    s.conv
        .accept(vec![msg("m1", OWNER, "are you there")])
        .await
        .expect("accept");
    s.channel.wait_sent(1).await;
    assert!(
        s.channel.texts(OWNER)[0].starts_with("The agent is not answering: connection refused.")
    );
    s.agent.wait_calls(4).await; // retried with backoff
    assert_eq!(s.channel.sent().len(), 1, "told once, not on every retry");
    *s.agent.down.lock().expect("lock") = None;
    s.channel.wait_sent(2).await;
    assert_eq!(s.channel.texts(OWNER)[1], "echo: are you there");
}

#[tokio::test]
async fn one_turn_at_a_time_per_chat_in_order_and_chats_in_parallel() {
    let s = setup(Senders::Anyone, RemoteTools::None, Purpose::Chat);
    let gate = Arc::new(Notify::new());
    *s.agent.gate.lock().expect("lock") = Some(gate.clone());
    s.conv
        .accept(vec![
            msg("a1", "alice", "1"),
            msg("a2", "alice", "2"),
            msg("b1", "bob", "x"),
        ])
        .await
        .expect("accept");
    // Alice's first and Bob's first run at once; Alice's second waits behind her first.
    s.agent.wait_calls(2).await;
    let chats: Vec<String> = s
        .agent
        .requests
        .lock()
        .expect("lock")
        .iter()
        .map(|r| r.session.chat.to_string())
        .collect();
    assert!(chats.contains(&"alice".to_string()) && chats.contains(&"bob".to_string()));
    assert_eq!(s.agent.prompts().len(), 2);
    *s.agent.gate.lock().expect("lock") = None;
    gate.notify_waiters();
    s.channel.wait_sent(3).await;
    assert_eq!(s.channel.texts("alice"), ["echo: 1", "echo: 2"]);
}

#[tokio::test]
async fn commands_are_owner_only_and_never_reach_the_agent() {
    let s = setup(Senders::Anyone, RemoteTools::None, Purpose::Chat);
    let gate = Arc::new(Notify::new());
    *s.agent.gate.lock().expect("lock") = Some(gate);
    s.conv
        .accept(vec![msg("m1", OWNER, "long task")])
        .await
        .expect("accept");
    s.agent.wait_calls(1).await;
    // /stop takes the fast lane past the running turn and cancels it.
    s.conv
        .accept(vec![msg("c1", OWNER, "/stop")])
        .await
        .expect("accept");
    s.channel.wait_sent(1).await;
    assert_eq!(s.channel.texts(OWNER), ["Stopped."]);
    s.conv
        .accept(vec![
            msg("c2", OWNER, "/new"),
            msg("c3", "stranger", "/new"),
        ])
        .await
        .expect("accept");
    s.channel.wait_sent(2).await;
    assert_eq!(s.channel.texts(OWNER)[1], "Started a fresh conversation.");
    assert_eq!(
        s.agent.resets.load(Ordering::SeqCst),
        1,
        "the stranger's /new did nothing"
    );
    s.conv
        .accept(vec![msg("c4", OWNER, "/status")])
        .await
        .expect("accept");
    s.channel.wait_sent(3).await;
    assert_eq!(s.channel.texts(OWNER)[2].lines().count(), 2);
    assert_eq!(
        s.agent.prompts(),
        ["long task"],
        "commands never reach the agent"
    );
    assert!(s.channel.texts("stranger").is_empty());
}

#[tokio::test(start_paused = true)]
async fn slow_down_pauses_the_chat_for_exactly_the_platforms_delay() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Chat);
    s.channel.fail_next([SendError::slow_down(
        Code::new("test.throttled"),
        "throttled",
        Duration::from_secs(30),
    )]);
    let t0 = tokio::time::Instant::now();
    s.conv
        .accept(vec![msg("m1", OWNER, "a")])
        .await
        .expect("accept");
    s.channel.wait_sent(1).await;
    assert!(
        t0.elapsed() >= Duration::from_secs(30),
        "not retried into the penalty"
    );
    assert_eq!(s.channel.texts(OWNER), ["echo: a"]);
}

// Real time: a paused clock would auto-advance to the window's periodic recheck while the test waits.
#[tokio::test]
async fn a_closed_window_waits_for_the_peer_and_health_says_why() {
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Chat);
    s.conv
        .accept(vec![msg("m1", OWNER, "a")])
        .await
        .expect("accept");
    s.channel.wait_sent(1).await;
    let closed = "WeChat lets the bot write only after the owner writes; send the bot any message";
    s.channel.fail_next([SendError::window_closed(
        Code::new("test.window_closed"),
        closed,
    )]);
    s.conv
        .send_proactive(&account(), &ChatId::new(OWNER), "digest", None, "digest-1")
        .await
        .expect("queue");
    s.conv
        .send_proactive(&account(), &ChatId::new(OWNER), "digest", None, "digest-1")
        .await
        .expect("idempotent");
    while s.conv.stats().get(&account(), "send_failed_window_closed") == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        s.conv.delivery_state("digest-1").await.expect("state"),
        Some(scv_bridge::ids::DeliveryState::Pending)
    );
    let note = s.health.get().error.clone().unwrap_or_default();
    assert_eq!(note, format!("1 message waits: {closed}"));
    // The owner writes: the window opens, the digest goes out, then the answer.
    s.conv
        .accept(vec![msg("m2", OWNER, "b")])
        .await
        .expect("accept");
    s.channel.wait_sent(3).await;
    assert_eq!(s.channel.texts(OWNER), ["echo: a", "digest", "echo: b"]);
    assert_eq!(
        s.conv.delivery_state("digest-1").await.expect("state"),
        Some(scv_bridge::ids::DeliveryState::Sent)
    );
}

#[tokio::test]
async fn a_mail_chat_never_reaches_the_agent() {
    // The texts handled, in a watch so the test wakes on the handling rather than on a clock.
    struct Recorder(watch::Sender<Vec<String>>);
    impl MailChatHandler for Recorder {
        fn handle<'a>(&'a self, _link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()> {
            Box::pin(async move { self.0.send_modify(|t| t.push(msg.text)) })
        }
    }
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Mail);
    let rec = Arc::new(Recorder(watch::channel(Vec::new()).0));
    let mut handled = rec.0.subscribe();
    s.conv.set_mail_chat_handler(rec.clone());
    s.conv
        .accept(vec![
            msg("m1", OWNER, "/digest"),
            msg("m2", "stranger", "/digest"),
        ])
        .await
        .expect("accept");
    s.conv
        .accept(vec![msg("m3", OWNER, "hello")])
        .await
        .expect("accept");
    tokio::time::timeout(Duration::from_secs(10), handled.wait_for(|t| t.len() >= 2))
        .await
        .unwrap_or_else(|_| panic!("handled only {:?}", *rec.0.borrow()))
        .expect("the recorder is alive");
    assert_eq!(*rec.0.borrow(), ["/digest", "hello"]);
    assert!(s.agent.prompts().is_empty());
}

#[tokio::test]
async fn a_mail_chat_message_waits_for_the_mail_accounts_to_start() {
    // The chat can attach and get the owner's message before any mail account has started and
    // set the handler (a daemon start, or a restart resuming the journal): it must wait, not be
    // dropped.
    // The texts handled, in a watch so the test wakes on the handling rather than on a clock.
    struct Recorder(watch::Sender<Vec<String>>);
    impl MailChatHandler for Recorder {
        fn handle<'a>(&'a self, _link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()> {
            Box::pin(async move { self.0.send_modify(|t| t.push(msg.text)) })
        }
    }
    let s = setup(Senders::Owner, RemoteTools::None, Purpose::Mail);
    s.conv
        .accept(vec![msg("m1", OWNER, "/digest")])
        .await
        .expect("accept");
    // The fast lane claimed the message and waits for a handler: a wait the barrier counts as
    // parked, so it resolves once that wait began (and not for 30 s if it were counted busy).
    tokio::time::timeout(Duration::from_secs(10), s.conv.quiescent())
        .await
        .expect("the fast lane waits for the handler");
    let rec = Arc::new(Recorder(watch::channel(Vec::new()).0));
    let mut handled = rec.0.subscribe();
    s.conv.set_mail_chat_handler(rec.clone());
    tokio::time::timeout(Duration::from_secs(10), handled.wait_for(|t| !t.is_empty()))
        .await
        .expect("handled once the handler is set")
        .expect("the recorder is alive");
    assert_eq!(*rec.0.borrow(), ["/digest"]);
}

// Paused clock: the pipeline's "still downloading" moment passes without waiting for real.
#[tokio::test(start_paused = true)]
async fn a_slow_download_is_explained_in_the_chat_once_then_answered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _guard) = open(&dir.path().join("s.db"));
    let agent = TestAgent::new();
    let conv = Conversation::new(store, agent.clone());
    let channel = scv_bridge::adapters::memory::MemoryChannel::new(2000, Duration::ZERO);
    let mut l = link(&channel, Senders::Owner, RemoteTools::None, Purpose::Chat);
    let health = l.health.clone();
    std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
    l.workspace = Some(dir.path().join("ws"));
    let _attachment = conv.attach(l);
    channel.hold_media();
    let mut m = msg("p1", OWNER, "[file: slow.pdf]");
    m.media = vec![MediaRef {
        kind: scv_bridge::agent::MediaKind::File,
        name: Some("slow.pdf".into()),
        size: None,
        transcript: None,
        locator: serde_json::Value::Null,
    }];
    conv.accept(vec![m]).await.expect("accept");
    channel.wait_sent(1).await;
    assert!(
        channel.texts(OWNER)[0].starts_with("Still downloading what you sent (1 item)"),
        "{:?}",
        channel.texts(OWNER)
    );
    assert!(agent.prompts().is_empty(), "the turn waits for its media");
    let cell = health.get();
    let note = cell.notes.iter().find(|n| n.source == NoteSource::Media);
    assert!(
        note.is_some_and(|n| n.text.starts_with("media: 1 item(s) downloading")),
        "{:?}",
        cell.notes
    );
    channel.release_media();
    channel.wait_sent(2).await;
    assert!(
        channel.texts(OWNER)[1].starts_with("echo: [file: slow.pdf]"),
        "{:?}",
        channel.texts(OWNER)
    );
    assert_eq!(channel.texts(OWNER).len(), 2, "the note is said once");
    assert!(
        health
            .get()
            .notes
            .iter()
            .all(|n| n.source != NoteSource::Media),
        "the status note ends with the download"
    );
}
