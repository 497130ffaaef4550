//! Long answers fill one WeCom `stream` bubble while the model writes: frames on the message's
//! handle, each the whole text so far, the bubble finished once with the whole answer and never
//! blank; a bubble WeCom refuses mid-answer ends with the answer as a proactive message.

use scv_wecom::fake::Fault;
use scv_wecom::frame::cmd;

use crate::stream_support::{PartsAgent, answer};
use crate::wecom::support::*;

/// Parts the agent writes the answer in.
const PARTS: usize = 5;

async fn start(agent: std::sync::Arc<PartsAgent>) -> Harness {
    let mut setup = Setup::owned();
    setup.other_agent = Some(agent);
    let h = Harness::start(setup).await;
    h.connected().await;
    h
}

#[tokio::test]
async fn a_long_answer_fills_one_bubble_and_ends_with_the_whole_answer() {
    let agent = PartsAgent::new(answer(), PARTS);
    let h = start(agent.clone()).await;
    let asked = h.fake.push_text(OWNER, "write a lot");
    agent.next_part();
    h.until("the bubble opened", |f| {
        f.bubbles().iter().any(|b| b.req_id == asked.req_id)
    })
    .await;
    for k in 2..=PARTS {
        agent.next_part();
        h.until("the next frame", |f| {
            f.bubbles().first().is_some_and(|b| b.frames >= k)
        })
        .await;
    }
    assert!(!h.fake.bubbles()[0].finished, "open while the model writes");
    agent.next_part();
    h.until("the bubble finished", |f| f.bubbles()[0].finished)
        .await;
    h.settle().await;
    let bubbles = h.fake.bubbles();
    assert_eq!(bubbles.len(), 1, "one bubble");
    let b = &bubbles[0];
    assert_eq!(b.req_id, asked.req_id);
    assert_eq!(b.content, answer(), "the whole answer, once");
    assert!(b.frames > PARTS, "{}", b.frames);
    assert!(!b.spinning);
    assert!(h.sent_to(OWNER).is_empty(), "nothing else sent");
    assert_eq!(h.fake.pipelined(), 0, "one frame in flight per handle");
    h.stop().await;
}

#[tokio::test]
async fn a_bubble_wecom_refuses_ends_with_the_answer_as_a_message() {
    let agent = PartsAgent::new(answer(), PARTS);
    let h = start(agent.clone()).await;
    h.fake.push_text(OWNER, "write a lot");
    agent.next_part();
    h.until("the bubble opened", |f| !f.bubbles().is_empty())
        .await;
    // The handle's window ends on WeCom's side mid-answer (846608 to every frame after).
    h.fake.fail_next(cmd::RESPOND_MSG, Fault::Code(846608), 100);
    for _ in 1..=PARTS {
        agent.next_part();
    }
    h.until("the answer as a message", |f| {
        f.sent().iter().any(|s| s.cmd == cmd::SEND_MSG)
    })
    .await;
    h.settle().await;
    assert_eq!(h.sent_to(OWNER), [answer()], "the whole answer, once");
    h.stop().await;
}

#[tokio::test]
async fn when_wecom_refuses_streams_the_owner_is_told_once_and_answers_go_whole() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    // The owner's client cannot show a stream (§4.5: 600039 on the reply, a stream frame).
    h.fake.fail_next(cmd::RESPOND_MSG, Fault::Code(600039), 1);
    h.fake.push_text(OWNER, "first");
    h.until("the first answer as a message", |_| {
        h.sent_to(OWNER).contains(&"echo: first".to_string())
    })
    .await;
    h.settle().await;
    // The next answer does not try the handle again: the fake would take it now.
    h.fake.push_text(OWNER, "second");
    h.until("the second answer as a message", |_| {
        h.sent_to(OWNER).contains(&"echo: second".to_string())
    })
    .await;
    h.settle().await;
    let notes: Vec<String> = h
        .sent_to(OWNER)
        .into_iter()
        .filter(|t| t.contains("600039"))
        .collect();
    assert_eq!(notes.len(), 1, "one note: {:?}", h.sent_to(OWNER));
    assert!(notes[0].contains("whole"), "{notes:?}");
    assert_eq!(h.sent_to(OWNER).len(), 3, "{:?}", h.sent_to(OWNER));
    assert_eq!(
        h.fake.frames_of(cmd::RESPOND_MSG).len(),
        1,
        "the handle tried once"
    );
    assert!(h.replies().is_empty(), "no bubble");
    assert!(
        h.health()
            .notes
            .iter()
            .any(|n| n.text.starts_with("streams:") && n.text.contains("600039")),
        "{:?}",
        h.health().notes
    );
    h.stop().await;
}

/// Writes a long first part at once, then waits for the test to release its prompt.
struct HoldAgent {
    gates:
        std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Semaphore>>>,
}

impl HoldAgent {
    fn gate(&self, prompt: &str) -> std::sync::Arc<tokio::sync::Semaphore> {
        let mut gates = self.gates.lock().expect("gates");
        gates
            .entry(prompt.to_string())
            .or_insert_with(|| std::sync::Arc::new(tokio::sync::Semaphore::new(0)))
            .clone()
    }

    fn release(&self, prompt: &str) {
        self.gate(prompt).add_permits(1);
    }
}

/// The whole answer to `prompt`.
fn held_answer(prompt: &str) -> String {
    format!(
        "The first part of the answer to {prompt}, long enough to be shown while written. The end."
    )
}

impl scv_bridge::agent::Agent for HoldAgent {
    fn turn(
        &self,
        req: scv_bridge::agent::TurnRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> futures_util::future::BoxFuture<
        '_,
        Result<scv_bridge::agent::TurnOutput, scv_bridge::agent::AgentError>,
    > {
        Box::pin(async move {
            let whole = held_answer(&req.prompt);
            let cut = whole.find(" The end.").unwrap_or(whole.len());
            req.events.text(&whole[..cut]);
            let gate = self.gate(&req.prompt);
            let _permit = gate.acquire().await;
            req.events.text(&whole[cut..]);
            Ok(scv_bridge::agent::TurnOutput {
                text: whole,
                ..Default::default()
            })
        })
    }

    fn reset<'a>(
        &'a self,
        _session: &'a scv_bridge::agent::SessionKey,
    ) -> futures_util::future::BoxFuture<'a, Result<(), scv_bridge::agent::AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// The most stream bubbles open at once over the fake's record of frames.
fn most_open(f: &scv_wecom::fake::FakeWeCom) -> usize {
    let mut open = std::collections::BTreeSet::new();
    let mut most = 0;
    for r in f.frames_of(cmd::RESPOND_MSG) {
        let Some(stream) = r.body.as_ref().and_then(|b| b.get("stream")) else {
            continue;
        };
        let id = (
            r.req_id.clone(),
            stream["id"].as_str().unwrap_or("").to_string(),
        );
        if stream["finish"].as_bool() == Some(true) {
            open.remove(&id);
        } else {
            open.insert(id);
        }
        most = most.max(open.len());
    }
    most
}

#[tokio::test]
async fn a_fourth_answer_in_progress_for_one_user_goes_whole() {
    let agent = std::sync::Arc::new(HoldAgent {
        gates: Default::default(),
    });
    let mut setup = Setup::owned();
    setup.other_agent = Some(agent.clone());
    let h = Harness::start(setup).await;
    h.connected().await;
    // The owner asks in three groups: three bubbles open and wait (§2.3: three in progress).
    let mut asked = Vec::new();
    for i in 0..3 {
        asked.push(
            h.fake
                .push_group_text(&format!("wrG{i}"), OWNER, &format!("@Bot q{i}")),
        );
    }
    h.until("three bubbles open", |f| {
        f.bubbles()
            .iter()
            .filter(|b| !b.finished && b.frames > 0)
            .count()
            == 3
    })
    .await;
    // A fourth, while they are open: its answer is written, and goes whole.
    let fourth = h.fake.push_group_text("wrG3", OWNER, "@Bot q3");
    h.until_health("status says the fourth is not shown while written", |c| {
        c.notes
            .iter()
            .any(|n| n.text.starts_with("streams: 3 answers"))
    })
    .await;
    agent.release("q3");
    h.until("the fourth answer", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == fourth.req_id && b.finished)
    })
    .await;
    let b4 = h
        .fake
        .bubbles()
        .into_iter()
        .find(|b| b.req_id == fourth.req_id)
        .expect("the fourth reply");
    assert_eq!(
        (b4.frames, b4.content.as_str()),
        (1, held_answer("q3").as_str()),
        "whole, in one frame"
    );
    for i in 0..3 {
        agent.release(&format!("q{i}"));
    }
    h.until("every answer", |f| {
        f.bubbles().iter().filter(|b| b.finished).count() == 4
    })
    .await;
    h.settle().await;
    assert_eq!(most_open(&h.fake), 3, "never more than three in progress");
    h.until_health("the note gone with the bubbles", |c| {
        c.notes.iter().all(|n| !n.text.starts_with("streams:"))
    })
    .await;
    for (i, a) in asked.iter().enumerate() {
        assert_eq!(
            h.reply_to(&a.req_id).as_deref(),
            Some(held_answer(&format!("q{i}")).as_str())
        );
    }
    assert!(h.fake.bubbles().iter().all(|b| !b.spinning));
    h.stop().await;
}
