//! Feishu's "scan to create an app" from the console, in a real browser: a Feishu account with
//! no app ID whose accounts host (`accounts_url`) is the fake registration endpoint and whose
//! open platform (`domain`) is the fake Feishu. Log in from its row, leave the app ID empty, the
//! page shows the registration QR, the fake plays the phone, and the row turns `connected`
//! without a reload; the new app's ID is stored, its secret never reaches the browser, and the
//! scanner's first private message to the bot binds them as the owner with no code.

use std::time::Duration;

use fantoccini::Locator;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::CredentialStore;
use scv_feishu::fake::{FakeConfig, FakeFeishu, FakeRegistration, RegistrationConfig};

use crate::driver::*;
use crate::support::*;

/// The new app's secret, planted so any byte of it in the page is found.
const APP_SECRET: &str = "planted-feishu-app-secret-3b9e71";
/// Whom the accounts host reports as the scanner.
const SCANNER: &str = "ou_scanner_in_browser";
const ACCOUNT: &str = "feishu:work";

#[tokio::test]
async fn a_feishu_app_is_created_by_scanning_in_the_console() {
    let feishu = FakeFeishu::start(FakeConfig {
        app_secret: APP_SECRET.into(),
        ..FakeConfig::fast()
    })
    .await
    .expect("fake Feishu");
    // Hands out the pair the fake Feishu accepts, at the quickest pace a client keeps (1 s).
    let reg = FakeRegistration::start(RegistrationConfig {
        client_id: feishu.config().app_id.clone(),
        client_secret: APP_SECRET.into(),
        open_id: Some(SCANNER.into()),
        interval: Duration::from_secs(1),
        min_interval: Duration::ZERO,
        ..RegistrationConfig::default()
    })
    .await
    .expect("fake accounts host");
    let driver = Driver::start().await;
    let mut bed = Bed::start(Options {
        tables: format!(
            "[feishu.work]\ndomain = \"{}\"\naccounts_url = \"{}\"\n",
            feishu.base_url(),
            reg.base_url()
        ),
        ..Options::default()
    })
    .await;
    bed.wait_state(ComponentState::Failed).await;
    let browser = driver.browser("en-US").await;
    browser
        .goto(&bed.link().await)
        .await
        .expect("open the link");
    let row = format!("tr[data-account=\"{ACCOUNT}\"]");
    wait_for(&browser, &format!("{row} td.state")).await;
    // Marks this page: a reload or navigation would lose it.
    browser
        .execute("window.keptSinceLoad = 'yes'; return 1;", vec![])
        .await
        .expect("mark the page");

    wait_for(&browser, &format!("{row} form.scan button"))
        .await
        .click()
        .await
        .expect("log in");
    let asked = wait_for(&browser, "#scan form.answer label").await;
    let prompt = asked.text().await.expect("text");
    assert!(prompt.starts_with("App ID"), "{prompt}");
    // No app ID: the login creates one by scanning.
    wait_for(&browser, "#scan form.answer button")
        .await
        .click()
        .await
        .expect("send an empty app ID");
    let svg = wait_for(&browser, "#scan .qr svg").await;
    assert!(svg.attr("viewBox").await.expect("attr").is_some());
    let link = wait_for(&browser, "#scan p a[href]").await;
    let url = link.attr("href").await.expect("attr").expect("a link");
    assert!(url.starts_with(reg.base_url()), "the fake's page: {url}");
    assert_eq!(reg.begins().len(), 1, "one code issued");
    reg.scan(&url).await.expect("the phone scans");

    wait_for(
        &browser,
        &format!("{row} td.state[data-state=\"connected\"]"),
    )
    .await;
    // The pending owner: the scanner binds with their first private message, or anyone with
    // the code shown beside it; the login waits for that.
    let pending = "//section[@id='scan']//li[contains(., 'first private message')]";
    wait_for_at(&browser, Locator::XPath(pending)).await;
    let kept = browser
        .execute("return window.keptSinceLoad || 'reloaded';", vec![])
        .await
        .expect("read the mark");
    assert_eq!(
        kept,
        serde_json::json!("yes"),
        "connected shown without a reload"
    );

    let dir = bed.config_path.parent().expect("dir").to_path_buf();
    let store = CredentialStore::Files(dir.join("state").join("credentials"));
    let stored = |field: &str| {
        let c = store.load(ACCOUNT).expect("load").expect("stored");
        c.get(field).map(|v| v.expose().to_string())
    };
    assert_eq!(stored("app_id"), Some(feishu.config().app_id.clone()));
    assert_eq!(stored("app_secret").as_deref(), Some(APP_SECRET));
    assert_eq!(stored("pending_owner").as_deref(), Some(SCANNER));

    // The scanner's first private message to the bot binds them: no code, and the bot says so;
    // the page's login ends there.
    feishu.push_p2p_text(SCANNER, "hello");
    let paired =
        format!("//section[@id='scan']//li[starts-with(normalize-space(.), 'Paired: {SCANNER}')]");
    wait_for_at(&browser, Locator::XPath(&paired)).await;
    wait_for(&browser, "#scan p.done").await;
    let told = feishu.wait_until(PATIENCE, |f| !f.sent().is_empty()).await;
    assert!(told, "the bot told the scanner");
    assert_eq!(stored("owner_id").as_deref(), Some(SCANNER));
    assert_eq!(stored("pending_owner"), None);

    // The secret in no byte the browser holds, nor in a fresh page.
    let source = browser.source().await.expect("page source");
    assert!(source.contains(SCANNER), "the page source is the live page");
    assert!(!source.contains(APP_SECRET), "the secret reached the page");
    let (cookie, _) = sign_in(&bed).await;
    let page = http()
        .get(format!("{}/", bed.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("body");
    assert!(page.contains(ACCOUNT), "{page}");
    assert!(!page.contains(APP_SECRET), "the secret reached the page");
    browser.close().await.expect("close");
    bed.stop().await;
}
