//! "Add a chat" asks the platform's set-up questions on the page (the ones `init` asks), in a
//! real browser: a Feishu chat added as a Lark account with its app ID; the domain is written
//! to the file, the app ID is not (it is for the login), and the account's first login from
//! its row goes straight to the app secret instead of asking the app ID again.

use fantoccini::Locator;
use scv_bridge::protocol::ComponentState;

use crate::driver::*;
use crate::support::*;

const APP_ID: &str = "cli_a1b2c3d4e5";

#[tokio::test]
async fn a_chat_is_added_with_its_platform_s_questions() {
    let driver = Driver::start().await;
    let mut bed = Bed::start(Options::default()).await;
    bed.wait_state(ComponentState::Failed).await;
    let browser = driver.browser("en-US").await;
    browser
        .goto(&bed.link().await)
        .await
        .expect("open the link");
    let feishu = "details.chat[data-channel=\"feishu\"]";
    wait_for(&browser, &format!("{feishu} summary"))
        .await
        .click()
        .await
        .expect("open Feishu's form");
    let domain = wait_for(&browser, &format!("{feishu} select[name=\"q_domain\"]")).await;
    let offered = domain.text().await.expect("text");
    assert!(offered.contains("Lark (open.larksuite.com)"), "{offered}");
    domain
        .find(Locator::Css("option[value=\"lark\"]"))
        .await
        .expect("the Lark choice")
        .click()
        .await
        .expect("pick Lark");
    let name = wait_for(&browser, &format!("{feishu} input[name=\"name\"]")).await;
    assert_eq!(
        name.prop("value").await.expect("value").as_deref(),
        Some("work"),
        "the platform's default name"
    );
    wait_for(&browser, &format!("{feishu} input[name=\"q_app-id\"]"))
        .await
        .send_keys(APP_ID)
        .await
        .expect("type the app ID");
    wait_for(&browser, &format!("{feishu} form.chat button"))
        .await
        .click()
        .await
        .expect("add");

    let row = "tr[data-account=\"feishu:work\"]";
    wait_for(&browser, row).await;
    let text = std::fs::read_to_string(&bed.config_path).expect("file");
    let table = text.split("[feishu.work]").nth(1).expect("the table");
    assert!(table.contains("domain = \"lark\""), "{text}");
    assert!(!text.contains(APP_ID), "a login answer is never written");

    wait_for(&browser, &format!("{row} form.scan button"))
        .await
        .click()
        .await
        .expect("log in");
    let asked = wait_for(&browser, "#scan form.answer label").await;
    let prompt = asked.text().await.expect("text");
    assert!(
        prompt.starts_with("App secret"),
        "the app ID is not asked again: {prompt}"
    );
    let secret = wait_for(&browser, "#scan form.answer input[type=\"password\"]").await;
    assert!(secret.attr("name").await.expect("attr").is_some());
    browser.close().await.expect("close");
    bed.stop().await;
}
