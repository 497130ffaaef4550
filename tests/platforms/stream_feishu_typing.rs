//! The typing sign on Feishu: a `Typing` reaction on the owner's message while the agent
//! works, removed once the answer is done; best-effort when Feishu refuses it.

use crate::feishu_support;

use feishu_support::*;
use scv_bridge::protocol::ComponentState;

#[tokio::test]
async fn a_typing_reaction_is_added_while_the_agent_works_then_removed() {
    let mut setup = Setup::owned();
    setup.agent = TestAgent::gated();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;

    let pushed = h.fake.push_p2p_text(OWNER, "hello");
    h.until("the typing reaction", |f| !f.reactions().is_empty())
        .await;
    let r = &h.fake.reactions()[0];
    assert_eq!(
        (r.message_id.as_str(), r.emoji.as_str(), r.removed),
        (pushed.message_id.as_str(), "Typing", false),
        "on the owner's message while the agent works"
    );
    assert!(h.fake.sent().is_empty(), "no answer yet");

    h.agent.release();
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.until("the reaction removed", |f| f.reactions()[0].removed)
        .await;
    h.settle().await;
    assert_eq!(h.fake.reactions().len(), 1, "one sign per answer");
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: hello"]);
    h.stop().await;
}

#[tokio::test]
async fn a_refused_reaction_never_holds_up_the_answer_nor_loops() {
    let mut setup = Setup::owned();
    setup.agent = TestAgent::gated();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    // The message was recalled: every add is refused.
    h.fake.refuse_reactions(231003, usize::MAX);

    h.fake.push_p2p_text(OWNER, "hello");
    h.until("the refused add", |f| f.reaction_requests() == 1)
        .await;
    h.agent.release();
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: hello"]);
    assert!(h.fake.reactions().is_empty());
    assert_eq!(
        h.fake.reaction_requests(),
        1,
        "one refused add, no retries and no remove of nothing"
    );
    h.stop().await;
}
