//! A QQ run's logs, at TRACE from every thread, carry no message, group or stranger text,
//! answer, link or AppSecret (the log-privacy coverage, for QQ): over the fake's real sockets,
//! with a send the platform rate-limits first.

use std::sync::Arc;

use scv_bridge::testing::InstantAgent;

use crate::qq_support::{Harness, OWNER, Setup};
use crate::{assert_logs_clean, captured};

#[tokio::test]
async fn no_qq_message_answer_or_app_secret_reaches_the_logs() {
    captured();
    let mut setup = Setup::owned();
    setup.agent = Arc::new(InstantAgent::new(|_| {
        "qq-answer-heron-3391 https://qq-link-ibis.example/a".into()
    }));
    let app_secret = setup.fake.app_secret.clone();
    let h = Harness::start(setup).await;
    h.connected().await;
    h.fake
        .rate_limit_next(1, scv_qq::fake::RateLimitStyle::Code22009);
    h.fake.push_c2c(OWNER, "qq-secret-walrus-7720");
    h.fake
        .push_c2c("STRANGER000000000000000000000009", "qq-stranger-otter-5512");
    h.fake.push_group_at(
        "GROUP00000000000000000000000009",
        "MEMBER0000000000000000000000009",
        "qq-group-lynx-8830",
    );
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    assert!(
        h.fake.sent()[0].content.contains("qq-answer-heron-3391"),
        "the answer really went out"
    );
    h.stop().await;
    assert_logs_clean(&[
        "qq-secret-walrus",
        "qq-stranger-otter",
        "qq-group-lynx",
        "qq-answer-heron",
        "qq-link-ibis",
        &app_secret,
    ]);
}
