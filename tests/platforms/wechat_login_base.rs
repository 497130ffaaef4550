//! `scv-bridge login wechat ACCOUNT` logs in where the account lives: the `base_url` of its
//! table (so the command `status` prints works as copied), and a failure names that host.

use crate::wechat_support;

use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_bridge::adapters::wechat::WechatSettings;
use scv_bridge::config::{Channel, ChannelSettings, PlatformTable};
use scv_bridge::login::LoginArgs;
use scv_bridge::port::login_flow::{Field, LoginUi, Shown};
use scv_wechat::fake::FakeConfig;
use wechat_support::*;

/// Scans as soon as a code is shown: the fake confirms in the same breath.
struct Phone(scv_wechat::fake::FakeHandle);

impl LoginUi for Phone {
    fn show(&mut self, shown: Shown) {
        if matches!(shown, Shown::Qr { .. }) {
            self.0.qr_scan();
            let _ = self.0.qr_confirm(OWNER);
        }
    }

    fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>> {
        async move { Err(format!("nobody types {} here", field.name)) }.boxed()
    }
}

/// No flags; the scan is polled quickly.
fn quick() -> LoginArgs {
    LoginArgs {
        poll: Some(Duration::from_millis(20)),
        ..LoginArgs::default()
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
        scv_bridge::login::run_with(Channel::Wechat, &h.config(), "phone", &quick(), &mut phone),
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
        if spec.key.channel == Channel::Wechat {
            let w = WechatSettings {
                base_url: Some(base.clone()),
                ..WechatSettings::of(&spec.settings)
            };
            spec.settings = ChannelSettings::Own(PlatformTable::from_settings(&w));
        }
    }
    let mut phone = Phone(h.fake.handle());
    let err = within(
        scv_bridge::login::run_with(Channel::Wechat, &config, "phone", &quick(), &mut phone),
        "the login",
    )
    .await
    .expect_err("nothing listens there");
    assert!(err.contains(&base), "{err}");
    assert!(err.contains("base_url"), "{err}");
}
