//! The fakes a fresh-install walk-through runs against: an OpenAI-compatible model that needs
//! the key `sk-walk` and a WeChat iLink server whose first QR code is scanned by a phone that
//! then writes "hello"; prints both URLs, then each message the bot sends, until killed.
//! `cargo run --example walkthrough_fakes`. Test support only, never part of the product.

use std::time::Duration;

use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, FakeServer};

const OWNER: &str = "walk0001@im.wechat";

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let model = FakeOpenAi::start().await?;
    model.require_key("sk-walk");
    let ilink = FakeServer::start_with(FakeConfig {
        initial_token: None,
        ..FakeConfig::default()
    })
    .await?;
    println!("MODEL_URL={}", model.base_url());
    println!("ILINK_URL={}", ilink.base_url());
    let fake = ilink.handle();
    if fake.wait_for_qr(1, Duration::from_secs(600)).await {
        fake.qr_scan();
        fake.qr_confirm(OWNER);
        println!("phone: scanned and confirmed the QR code as {OWNER}");
    }
    // Once the daemon polls (an event the fake records), the owner writes.
    fake.wait_for_requests(Endpoint::GetUpdates, 1, Duration::from_secs(600))
        .await;
    fake.push_text(OWNER, "hello");
    println!("phone: wrote \"hello\"");
    let mut seen = 0;
    loop {
        // Woken by each accepted send, not by a clock.
        let sent = fake
            .wait_for_sent(seen + 1, Duration::from_secs(3600))
            .await;
        for s in sent.iter().skip(seen) {
            println!("bot -> {}: {}", s.to_user, s.text);
        }
        seen = sent.len();
    }
}
