//! The metrics page after real traffic: the daemon with the WeChat adapter against the fake iLink
//! server, one round trip, then a scrape over HTTP with a real client.

use crate::wechat_support;

use scv_bridge::protocol::ComponentState;
use scv_wechat::fake::FakeConfig;
use wechat_support::*;

#[tokio::test]
async fn a_round_trip_shows_in_the_latency_histograms_and_the_agent_is_up() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let text = std::fs::read_to_string(&h.config_path).expect("config");
    std::fs::write(
        &h.config_path,
        format!("metrics_listen = \"127.0.0.1:{port}\"\n{text}"),
    )
    .expect("config");
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "hello");
    fake.wait_for_sent(1, PATIENCE).await;
    h.settle().await;

    let url = format!("http://127.0.0.1:{port}/metrics");
    let resp = within(reqwest::get(&url), "the scrape")
        .await
        .expect("scrape");
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some(scv_bridge::metrics::CONTENT_TYPE)
    );
    let page = resp.text().await.expect("page");
    let account = "account=\"wechat:phone\"";
    for family in ["turn_seconds", "send_seconds", "journal_commit_seconds"] {
        assert!(
            page.contains(&format!("# TYPE scv_bridge_{family} histogram")),
            "{family}:\n{page}"
        );
        let count = page
            .lines()
            .find(|l| l.starts_with(&format!("scv_bridge_{family}_count{{{account}}}")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        assert!(count >= 1, "{family} recorded the round trip:\n{page}");
    }
    assert!(
        page.contains("scv_bridge_agent_up{backend=\"custom\"} 1"),
        "{page}"
    );
    assert!(
        page.contains(&format!("scv_bridge_outbox_depth{{{account}}} 0")),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "scv_bridge_messages_answered_total{{{account}}} 1"
        )),
        "{page}"
    );
    h.stop().await;
}
