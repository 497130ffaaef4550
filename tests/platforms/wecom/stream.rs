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
