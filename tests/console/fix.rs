//! The fix as a button: a disabled account is enabled from its row in a real browser (the
//! control command `channel enable` sends), and shows `connected` without a reload.

use fantoccini::Locator;
use scv_bridge::protocol::ComponentState;

use crate::driver::*;
use crate::support::*;

#[tokio::test]
async fn a_disabled_account_is_enabled_by_its_button() {
    let driver = Driver::start().await;
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    bed.wait_state(ComponentState::Connected).await;
    let off = bed.cli(&["channel", "disable", "wechat", "phone"]).await;
    assert!(off.status.success(), "{off:?}");
    bed.wait_state(ComponentState::Disabled).await;

    let browser = driver.browser("en-US").await;
    browser
        .goto(&bed.link().await)
        .await
        .expect("open the link");
    let row = format!("tr[data-account=\"{ID}\"]");
    wait_for(
        &browser,
        &format!("{row} td.state[data-state=\"disabled\"]"),
    )
    .await;
    browser
        .execute("window.keptSinceLoad = 'yes'; return 1;", vec![])
        .await
        .expect("mark the page");
    let button = wait_for(
        &browser,
        &format!("{row} form.fix button[value=\"enable\"]"),
    )
    .await;
    assert_eq!(button.text().await.expect("text"), "Enable");
    button.click().await.expect("enable");
    wait_for(
        &browser,
        &format!("{row} td.state[data-state=\"connected\"]"),
    )
    .await;
    let status = bed.status().await;
    assert!(status.components.iter().any(|h| h.id == ID && h.enabled));
    assert!(
        browser
            .find_all(Locator::Css(&format!("{row} form.fix")))
            .await
            .expect("find")
            .is_empty(),
        "no fix offered once it runs"
    );
    let kept = browser
        .execute("return window.keptSinceLoad || 'reloaded';", vec![])
        .await
        .expect("read the mark");
    assert_eq!(kept, serde_json::json!("yes"), "enabled without a reload");
    browser.close().await.expect("close");
    bed.stop().await;
}
