//! The console in a real headless Chromium, driven over WebDriver (fantoccini): in through the
//! one-time link, a WeChat account logged in by scanning (the fake plays the phone, and asks for
//! the digits it shows: the page asks for them) and shown `connected` without a reload, a
//! `scv-bridge confirm` question answered Yes, and the page in
//! Chinese for a browser that asks for it.

use std::process::Stdio;

use fantoccini::Locator;
use scv_bridge::protocol::ComponentState;

use crate::driver::*;
use crate::support::*;

#[tokio::test]
async fn the_console_in_a_browser() {
    let driver = Driver::start().await;
    let mut bed = Bed::start(Options::default()).await;
    bed.wait_state(ComponentState::Failed).await;
    let browser = driver.browser("en-US").await;
    browser
        .goto(&bed.link().await)
        .await
        .expect("open the link");
    let row = format!("tr[data-account=\"{ID}\"]");
    wait_for(&browser, &format!("{row} td.state[data-state=\"failed\"]")).await;
    // Marks this page: a reload or navigation would lose it.
    browser
        .execute("window.keptSinceLoad = 'yes'; return 1;", vec![])
        .await
        .expect("mark the page");

    wait_for(&browser, &format!("{row} form.scan button"))
        .await
        .click()
        .await
        .expect("scan");
    let fake = bed.fake.handle();
    assert!(fake.wait_for_qr(1, PATIENCE).await, "a code was issued");
    let svg = wait_for(&browser, "#scan .qr svg").await;
    assert!(svg.attr("viewBox").await.expect("attr").is_some());
    // The phone asks for the digits it shows: the page asks the person, the answer goes to the
    // waiting login step, and the scan goes on.
    assert!(fake.qr_require_verify_code("4821"), "a code to guard");
    let digits = wait_for(&browser, "#scan form.answer input[name=\"answer\"]").await;
    digits.send_keys("4821").await.expect("type the digits");
    wait_for(&browser, "#scan form.answer button")
        .await
        .click()
        .await
        .expect("send the digits");
    let scanned = "//section[@id='scan']//li[starts-with(normalize-space(.), 'scanned')]";
    wait_for_at(&browser, Locator::XPath(scanned)).await;
    fake.qr_confirm(OWNER).expect("a code to confirm");
    wait_for(
        &browser,
        &format!("{row} td.state[data-state=\"connected\"]"),
    )
    .await;
    wait_for(&browser, "#scan p.done").await;
    let kept = browser
        .execute("return window.keptSinceLoad || 'reloaded';", vec![])
        .await
        .expect("read the mark");
    assert_eq!(
        kept,
        serde_json::json!("yes"),
        "connected shown without a reload"
    );

    let asker = bed
        .cli_command(&["confirm", "Deploy release 1.4?", "--chat", ID])
        .stdout(Stdio::piped())
        .spawn()
        .expect("ask");
    let question = wait_for(&browser, "form.question").await;
    let text = question.text().await.expect("text");
    assert!(text.contains("Deploy release 1.4?"), "{text}");
    click(&browser, "form.question button[value=\"yes\"]").await;
    let out = within(asker.wait_with_output(), "the CLI to end")
        .await
        .expect("the CLI ran");
    assert_eq!(out.status.code(), Some(0), "{:?}", out);
    wait_for(&browser, "#questions p").await;
    browser.close().await.expect("close");

    let zh = driver.browser("zh-CN").await;
    zh.goto(&bed.link().await).await.expect("open the link");
    let h1 = wait_for(&zh, "html[lang=\"zh-CN\"] h1").await;
    assert!(h1.text().await.expect("text").contains("控制台"));
    let switch = wait_for(&zh, "a.lang").await;
    assert_eq!(switch.text().await.expect("text"), "English");
    zh.close().await.expect("close");
    bed.stop().await;
}
