//! `scv-bridge login wechat ACCOUNT` logs in where the account lives: the `base_url` of its
//! table (so the command `status` prints works as copied), and a failure names that host.

use crate::wechat_support;

use std::time::Duration;

use scv_bridge::config::ChannelSettings;
use scv_bridge::login::LoginArgs;
use scv_wechat::fake::FakeConfig;
use scv_wechat::login::{LoginEvent, LoginOptions, LoginUi};
use wechat_support::*;

/// Scans as soon as a code is shown: the fake confirms in the same breath.
struct Phone(scv_wechat::fake::FakeHandle);

impl LoginUi for Phone {
    fn event(&mut self, event: LoginEvent) {
        if matches!(event, LoginEvent::ShowQr { .. }) {
            self.0.qr_scan();
            let _ = self.0.qr_confirm(OWNER);
        }
    }

    async fn verify_code(&mut self) -> Option<String> {
        None
    }
}

fn quick() -> LoginOptions {
    LoginOptions {
        poll_interval: Duration::from_millis(20),
        ..LoginOptions::default()
    }
}

#[tokio::test]
async fn without_the_flag_the_configured_base_url_is_used() {
    let h = Harness::new(
        FakeConfig {
            initial_token: None,
            ..FakeConfig::default()
        },
        "",
    )
    .await;
    let mut phone = Phone(h.fake.handle());
    let line = within(
        scv_bridge::login::wechat::run_with(
            &h.config(),
            "phone",
            &LoginArgs::default(),
            &quick(),
            &mut phone,
        ),
        "the login",
    )
    .await
    .expect("login succeeds against the configured host");
    assert!(line.contains("logged in: wechat:phone"), "{line}");
    assert_eq!(h.fake.handle().qr_codes_issued(), 1);
}

#[tokio::test]
async fn a_host_that_cannot_be_reached_is_named() {
    let h = Harness::new(FakeConfig::default(), "").await;
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut config = h.config();
    for spec in config.accounts.values_mut() {
        if let ChannelSettings::Wechat(w) = &mut spec.settings {
            w.base_url = Some(base.clone());
        }
    }
    let mut phone = Phone(h.fake.handle());
    let err = within(
        scv_bridge::login::wechat::run_with(
            &config,
            "phone",
            &LoginArgs::default(),
            &quick(),
            &mut phone,
        ),
        "the login",
    )
    .await
    .expect_err("nothing listens there");
    assert!(err.contains(&base), "{err}");
    assert!(err.contains("base_url"), "{err}");
}
