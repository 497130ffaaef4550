//! The named agent form in a real headless Chromium: filled in and sent as a person would (the
//! page's CSRF token and origin, no script of ours), the agent saved and answering the
//! account's next message; and the form in Chinese for a browser that asks for it.

use fantoccini::{Client, Locator};
use scv_bridge::protocol::ComponentState;
use scv_bridge::testing::fake_openai::FakeOpenAi;

use crate::driver::*;
use crate::support::*;

/// Types `text` into the named agent form's field `name`.
async fn fill(browser: &Client, name: &str, text: &str) {
    let css = format!("form.named input[name=\"{name}\"]");
    wait_for(browser, &css)
        .await
        .send_keys(text)
        .await
        .unwrap_or_else(|e| panic!("type into {name}: {e}"));
}

/// Picks `value` in the named agent form's list `name`.
async fn pick(browser: &Client, name: &str, value: &str) {
    let css = format!("form.named select[name=\"{name}\"]");
    wait_for(browser, &css)
        .await
        .select_by_value(value)
        .await
        .unwrap_or_else(|e| panic!("pick {value} in {name}: {e}"));
}

#[tokio::test]
async fn a_named_agent_added_in_a_browser_answers_the_next_message() {
    let claude = FakeOpenAi::start().await.expect("claude's model");
    claude.require_key("sk-claude");
    let driver = Driver::start().await;
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    bed.wait_state(ComponentState::Connected).await;
    let browser = driver.browser("en-US").await;
    browser
        .goto(&bed.link().await)
        .await
        .expect("open the link");
    wait_for(&browser, "form.named").await;
    fill(&browser, "name", "claude").await;
    pick(&browser, "backend", "openai").await;
    fill(&browser, "base_url", &claude.base_url()).await;
    fill(&browser, "model", "m-claude").await;
    fill(&browser, "key", "sk-claude").await;
    pick(&browser, "account", ID).await;
    wait_for(&browser, "form.named button[type=\"submit\"]")
        .await
        .click()
        .await
        .expect("send the form");
    let saved = "//body[contains(., 'claude answers from the next message')]";
    wait_for_at(&browser, Locator::XPath(saved)).await;
    let shown = browser.source().await.expect("the answer");
    assert!(!shown.contains("sk-claude"), "the key is never shown back");

    let phone = bed.fake.handle();
    phone.push_text(OWNER, "hello from the browser");
    let answer = phone
        .wait_for_sent_where(0, PATIENCE, |m| {
            m.text.contains("echo: hello from the browser")
        })
        .await;
    assert!(answer.is_some(), "answered: {:?}", phone.sent());
    assert_eq!(claude.requests().len(), 1, "claude answered");
    browser.close().await.expect("close");

    let zh = driver.browser("zh-CN").await;
    zh.goto(&bed.link().await).await.expect("open the link");
    wait_for(&zh, "form.named").await;
    let source = zh.source().await.expect("the page");
    assert!(
        source.contains("兼容 OpenAI 的模型"),
        "the kinds in Chinese"
    );
    let heading = "//h3[contains(., '另一个代理')]";
    wait_for_at(&zh, Locator::XPath(heading)).await;
    zh.close().await.expect("close");
    bed.stop().await;
}
