//! A tool approval answered No in a real browser: the agent (the SCV fake, whose `[approval]`
//! turn asks before it runs a tool) is told "denied", the tool never runs, and the phone is
//! told so; the question leaves the page without a reload.

use std::sync::Arc;

use scv_bridge::agent::{Agent, ScvAgent, ScvOptions, Transport};
use scv_bridge::protocol::ComponentState;
use scv_bridge::testing::fake_scv::FakeScv;

use crate::driver::*;
use crate::support::*;

#[tokio::test]
async fn a_tool_approval_answered_no_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scv = FakeScv::start(&dir.path().join("agent.sock"))
        .await
        .expect("fake scv");
    let agent: Arc<dyn Agent> = Arc::new(ScvAgent::new(ScvOptions::new(Transport::Socket(
        scv.path().into(),
    ))));
    let driver = Driver::start().await;
    let mut bed = Bed::start(Options {
        logged_in: true,
        account_extra: "remote_tools = \"owner\"\napprovals = \"ask\"\n",
        agent: Some(agent),
        ..Options::default()
    })
    .await;
    bed.wait_state(ComponentState::Connected).await;
    let browser = driver.browser("en-US").await;
    browser
        .goto(&bed.link().await)
        .await
        .expect("open the link");
    wait_for(&browser, "#questions").await;
    browser
        .execute("window.keptSinceLoad = 'yes'; return 1;", vec![])
        .await
        .expect("mark the page");

    let phone = bed.fake.handle();
    phone.push_text(OWNER, "[approval] tidy up");
    let question = wait_for(&browser, "form.question").await;
    let text = question.text().await.expect("text");
    assert!(text.contains("rm -rf build"), "the tool is named: {text}");
    assert!(
        scv.recorded().approvals.is_empty(),
        "decided before the owner"
    );
    click(&browser, "form.question button[value=\"no\"]").await;

    within(scv.wait(|r| !r.approvals.is_empty()), "the agent told").await;
    let approved: Vec<bool> = scv
        .recorded()
        .approvals
        .iter()
        .map(|a| a.approved)
        .collect();
    assert_eq!(approved, [false], "the agent was told No");
    let denied = phone
        .wait_for_sent_where(0, PATIENCE, |m| m.text == "denied")
        .await;
    assert!(denied.is_some(), "the phone is told: {:?}", phone.sent());
    assert!(
        !phone.sent().iter().any(|m| m.text == "approved"),
        "the tool ran: {:?}",
        phone.sent()
    );
    wait_for(&browser, "#questions p").await;
    assert!(
        browser
            .find_all(fantoccini::Locator::Css("form.question"))
            .await
            .expect("find")
            .is_empty(),
        "the question left the page"
    );
    let kept = browser
        .execute("return window.keptSinceLoad || 'reloaded';", vec![])
        .await
        .expect("read the mark");
    assert_eq!(kept, serde_json::json!("yes"), "answered without a reload");
    browser.close().await.expect("close");
    bed.stop().await;
}
