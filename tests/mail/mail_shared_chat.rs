//! Mail without a second bot: `report_to` names an ordinary chat, one that also talks to the
//! agent. Digests arrive there marked as digests, `/digest`, `/reply` and the reply's yes are
//! handled by the mail accounts, and none of it reaches the model or its stored history. Real
//! Dovecot, the daemon, the real OpenAI backend against the fake model.

use crate::support_mail;

use std::sync::Arc;

use scv_bridge::agent::openai::{OpenAiAgent, OpenAiOptions};
use scv_bridge::protocol::{ComponentState, ConfirmState, DaemonCommand, Purpose};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use support_mail::Harness;

/// Every message text the model was sent, request by request.
fn sent(fake: &FakeOpenAi) -> Vec<Vec<String>> {
    fake.requests()
        .iter()
        .map(|r| r.messages.iter().map(|m| m.content.clone()).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digests_and_their_commands_share_a_chat_with_the_agent_but_not_its_history() {
    let fake = FakeOpenAi::start().await.expect("fake model");
    let url = fake.base_url();
    let mut h = Harness::new("").await;
    h.chat_purpose = Purpose::Chat;
    h.agent = Arc::new(move |store| {
        let opts = OpenAiOptions::new(url.clone(), "chat-model");
        Arc::new(OpenAiAgent::new(opts, store.clone()).expect("agent"))
    });
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;

    // The agent answers the owner as in any chat.
    h.owner_says("c1", "Hello-Agent-One").await;
    fake.wait_requests(1).await;
    h.wait_chat(1).await;

    h.mail("Plum-Subject", "Can you come?").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.owner_says("m1", "/digest").await;
    h.wait_chat(2).await;
    let digest = h.digests()[1].clone();
    assert!(
        digest.starts_with("Mail digest (box): 1 new\n1. "),
        "{digest}"
    );
    assert!(digest.contains("Plum-Subject"), "{digest}");

    h.owner_says("m2", "/reply 1 Plum-Reply-Text").await;
    h.wait_chat(3).await;
    let question = h.digests()[2].clone();
    assert!(question.starts_with("Send this reply to"), "{question}");
    // A bare yes is the reply's while one waits...
    h.owner_says("m3", "yes").await;
    h.wait_chat(4).await;
    assert!(h.digests()[3].starts_with("Sent"), "{:?}", h.digests());
    assert_eq!(fake.requests().len(), 1, "{:?}", sent(&fake));

    // ...and the agent's again once none does; its history holds only the chat.
    h.owner_says("c2", "yes").await;
    fake.wait_requests(2).await;
    h.wait_chat(5).await;
    let requests = sent(&fake);
    assert_eq!(requests.len(), 2, "{requests:?}");
    let last = &requests[1];
    assert!(last.iter().any(|m| m == "Hello-Agent-One"), "{last:?}");
    assert_eq!(last.last().map(String::as_str), Some("yes"), "{last:?}");
    for m in requests.iter().flatten() {
        for word in [
            "Plum",
            "/digest",
            "/reply",
            "Mail digest",
            "Send this reply",
            "Sent",
        ] {
            assert!(
                !m.contains(word),
                "{word:?} reached the model: {requests:?}"
            );
        }
    }
    // The user turns the model saw: the two chat messages, nothing the mail accounts handled.
    let turns = last
        .iter()
        .filter(|m| *m == "Hello-Agent-One" || *m == "yes");
    assert_eq!(turns.count(), 2, "{last:?}");
    h.stop().await;
}

/// How many mails the SMTP receiver spooled that contain `text`.
fn sent_mail(h: &Harness, text: &str) -> usize {
    let spool = std::path::PathBuf::from(h.server.var("MAILSERVER_SPOOL"));
    std::fs::read_dir(&spool)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(text)))
                .count()
        })
        .unwrap_or(0)
}

/// Asks a confirm question through the daemon's control socket, as `scv-bridge confirm` does.
async fn ask(h: &Harness, question: &str) -> String {
    let d = h.daemon.as_ref().expect("running");
    let status = scv_bridge::client::request(
        &d.socket,
        DaemonCommand::ConfirmAsk {
            question: question.into(),
            parent: None,
            timeout_seconds: Some(600),
        },
    )
    .await
    .expect("confirm_ask");
    status.confirm.expect("the question").id
}

/// The README's recommended set-up: digests in the ordinary chat, where `scv-bridge confirm`
/// also asks. A "yes" meant for a drafted mail reply is the reply's, even right after a confirm
/// question there closed; with a question and a draft both open the bridge asks which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_yes_goes_to_what_is_open_and_two_open_things_ask_which() {
    let mut h = Harness::new("").await;
    h.chat_purpose = Purpose::Chat;
    h.with_confirm = true;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.mail("Plum-Subject", "Can you come?").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;

    // A script's question, answered: it is closed now.
    let first = ask(&h, "Deploy-One?").await;
    h.wait_chat(2).await;
    h.owner_says("a1", "yes").await;
    h.wait_chat(3).await;
    assert!(
        h.digests()[2].starts_with("Got it: yes"),
        "{:?}",
        h.digests()
    );

    // A drafted reply, then a bare yes: the open draft takes it, not the closed question.
    h.owner_says("m2", "/reply 1 Plum-Reply-Text").await;
    h.wait_chat(4).await;
    assert!(
        h.digests()[3].starts_with("Send this reply to"),
        "{:?}",
        h.digests()
    );
    h.owner_says("m3", "yes").await;
    h.wait_chat(5).await;
    assert!(h.digests()[4].starts_with("Sent"), "{:?}", h.digests());
    assert_eq!(
        sent_mail(&h, "Plum-Reply-Text"),
        1,
        "the reply left by SMTP"
    );

    // A draft and a question both open: a bare yes asks which, and takes neither.
    h.owner_says("m4", "/reply 1 Second-Reply").await;
    h.wait_chat(6).await;
    let second = ask(&h, "Deploy-Two?").await;
    h.wait_chat(7).await;
    h.owner_says("m5", "yes").await;
    h.wait_chat(8).await;
    let which = h.digests()[7].clone();
    assert!(which.starts_with("Which one?"), "{which}");
    assert!(
        which.contains("/reply yes") && which.contains("Deploy-Two?"),
        "{which}"
    );
    assert_eq!(
        sent_mail(&h, "Second-Reply"),
        0,
        "nothing sent on an ambiguous yes"
    );
    let d = h.daemon.as_ref().expect("running");
    let pending = |id: String| {
        let socket = d.socket.clone();
        async move {
            scv_bridge::client::request(&socket, DaemonCommand::ConfirmStatus { id })
                .await
                .expect("confirm_status")
                .confirm
                .expect("question")
                .state
        }
    };
    assert_eq!(pending(second.clone()).await, ConfirmState::Pending);
    assert_eq!(pending(first).await, ConfirmState::Yes);

    // Each answered the way the bridge said: the draft by `/reply yes`, then the question bare.
    h.owner_says("m6", "/reply yes").await;
    h.wait_chat(9).await;
    assert!(h.digests()[8].starts_with("Sent"), "{:?}", h.digests());
    assert_eq!(sent_mail(&h, "Second-Reply"), 1);
    h.owner_says("a2", "no").await;
    h.wait_chat(10).await;
    assert!(
        h.digests()[9].starts_with("Got it: no"),
        "{:?}",
        h.digests()
    );
    assert_eq!(pending(second).await, ConfirmState::No);
    h.stop().await;
}
