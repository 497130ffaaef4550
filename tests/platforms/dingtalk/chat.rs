//! The sender end to end: pairing, proactive sends through the robot API, a throttled send
//! shown in status while it waits, questions with answer links, long answers split.

use scv_dingtalk::Call;
use scv_dingtalk::fake::Fault;

use super::support::*;

#[tokio::test]
async fn the_owner_pairs_with_the_code_in_a_direct_message_and_is_then_answered() {
    let mut setup = Setup::owned();
    let expires = scv_bridge::supervisor::unix_now() + 600;
    setup.credentials = Some(
        login(&setup.fake)
            .with("pairing_code", "482913")
            .with("pairing_expires", expires.to_string()),
    );
    let h = Harness::start(setup).await;
    h.connected().await;
    let note = h
        .health()
        .notes
        .iter()
        .any(|n| n.text.contains("no owner paired yet"));
    assert!(note, "{:?}", h.health());
    let owner = h.fake.config().staff[0].clone();
    let code = h.fake.push_text(&owner, "482913");
    h.until("the pairing notice", |f| !f.sent().is_empty())
        .await;
    h.acked_and_settled(&code.push.message_id).await;
    assert!(h.texts()[0].starts_with("Paired"), "{:?}", h.texts());
    assert!(
        h.agent.prompts().is_empty(),
        "the code never reaches the agent"
    );
    let stored = h.credentials.load(ACCOUNT).expect("load").expect("stored");
    assert_eq!(
        stored.get("owner_id").map(|s| s.expose().to_string()),
        Some(owner.clone())
    );
    assert!(stored.get("pairing_code").is_none(), "the spent code goes");
    let hi = h.fake.push_text(&owner, "now me");
    h.until("the answer", |f| f.sent().len() == 2).await;
    h.acked_and_settled(&hi.push.message_id).await;
    assert_eq!(h.texts()[1], "echo: now me");
    // A staff member's code after that is just a message from a stranger.
    let late = h
        .fake
        .push_text(&h.fake.config().staff[1].clone(), "482913");
    h.acked_and_settled(&late.push.message_id).await;
    assert_eq!(h.fake.sent().len(), 2);
    h.stop().await;
}

#[tokio::test]
async fn an_expired_webhook_falls_back_to_the_robot_api_and_a_throttle_shows_in_status() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    // The webhook is refused as expired (300001): the reply goes through batchSend.
    h.fake
        .fail_next(Call::SessionWebhook, Fault::Errcode(300001));
    let first = h.fake.push_text(&owner, "one");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.acked_and_settled(&first.push.message_id).await;
    let sent = h.fake.sent();
    assert_eq!(sent[0].call, Call::BatchSend, "{sent:?}");
    assert_eq!(sent[0].target, std::slice::from_ref(&owner));
    assert_eq!(sent[0].msg_key, "sampleMarkdown");
    assert_eq!(text_of(&sent[0]), "echo: one");
    // Now both paths refuse for a while: HTTP 200 with the owner flow-controlled is a slow-down,
    // and status says a message waits and when it is tried again.
    h.fake
        .fail_next(Call::SessionWebhook, Fault::Errcode(300001));
    h.fake.fail_next(Call::BatchSend, Fault::FlowControlled);
    h.fake.push_text(&owner, "two");
    h.until_health("the waiting note", |c| {
        c.notes
            .iter()
            .any(|n| n.text.contains("1 waiting") && n.text.contains("retry in 60 s"))
    })
    .await;
    assert_eq!(h.fake.sent().len(), 1, "nothing sent while throttled");
    h.stop().await;
}

#[tokio::test]
async fn a_long_answer_is_split_at_paragraphs_within_the_limit() {
    let mut setup = Setup::owned();
    let para = "word ".repeat(500);
    let long = format!(
        "{para}\n\n{para}\n\n```rust\n{}```\n",
        "let x = 1;\n".repeat(200)
    );
    let answer = long.clone();
    setup.agent = TestAgent::answering(move |_| answer.clone());
    let h = Harness::start(setup).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "long please");
    h.until("several pieces", |f| f.sent().len() >= 2).await;
    h.acked_and_settled(&pushed.push.message_id).await;
    let texts = h.texts();
    for t in &texts {
        assert!(
            t.chars().count() <= scv_dingtalk::limits::MARKDOWN_CHUNK_CHARS,
            "{}",
            t.len()
        );
        assert_eq!(
            t.matches("```").count() % 2,
            0,
            "code fences closed in each piece"
        );
    }
    let joined: String = texts.concat();
    assert_eq!(joined.matches("let x = 1;").count(), 200, "no code lost");
    assert_eq!(joined.matches("word").count(), 1000);
    h.stop().await;
}

#[tokio::test]
async fn a_question_goes_to_the_owner_with_links_that_answer_with_its_code() {
    use scv_bridge::conversation::Body;
    use scv_bridge::conversation::body::Question;
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let key = scv_bridge::ids::AccountKey::parse(ACCOUNT).expect("key");
    let chat = scv_bridge::ids::ChatId::new(format!("u:{owner}"));
    let q = Question {
        id: "q-3".into(),
        text: "Deploy v2?".into(),
        code: "7F".into(),
        deadline: "14:30".into(),
        buttons: true,
    };
    let text = "Deploy v2? Answer before 14:30 (or reply Y 7F / N 7F).";
    h.conversation
        .send_proactive(&key, &chat, text, Some(&Body::Question(q)), "ask/q-3")
        .await
        .expect("queued");
    h.until("the question", |f| !f.sent().is_empty()).await;
    let sent = h.fake.sent().remove(0);
    // Nobody wrote yet, so no reply webhook: the robot API, to the owner by staff id.
    assert_eq!(
        (sent.call, sent.msg_key.as_str()),
        (Call::BatchSend, "sampleMarkdown")
    );
    assert_eq!(sent.target, std::slice::from_ref(&owner));
    let md = text_of(&sent);
    assert!(md.starts_with(text), "{md}");
    assert!(
        md.contains("[yes](dtmd://dingtalkclient/sendMessage?content=yes%207F)")
            && md.contains("[no](dtmd://dingtalkclient/sendMessage?content=no%207F)"),
        "{md}"
    );
    // What a tap sends is the owner's own message, which the core reads as the answer.
    let answer = scv_bridge::confirm::parse_answer("yes 7F").expect("an answer");
    assert_eq!((answer.yes, answer.code.as_deref()), (true, Some("7F")));
    h.stop().await;
}
