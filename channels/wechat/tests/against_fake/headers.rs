//! Headers and bodies as the platform expects them, and what the fake refuses.

use std::collections::HashSet;

use scv_wechat::headers::{ClientIdentity, is_valid_uin};
use scv_wechat::{Client, Endpoint, new_client_id};
use serde_json::{Value, json};

use crate::start;

#[tokio::test]
async fn every_request_carries_the_spec_headers_and_base_info() {
    let (fake, handle, _client) = start().await;
    let identity = ClientIdentity {
        route_tag: Some("route-7".into()),
        ..ClientIdentity::default()
    };
    // No trailing slash: the prefix must still be kept.
    let base = fake.base_url();
    let client = Client::new(base.trim_end_matches('/'), handle.bot_token())
        .expect("valid")
        .with_identity(identity);
    let ctx = handle.push_text("u@im.wechat", "hi").context_token;
    client.notify_start().await.expect("notify");
    client.get_updates("").await.expect("poll");
    client
        .send_text("u@im.wechat", ctx.as_deref(), "hey", &new_client_id())
        .await
        .expect("send");
    client
        .get_config("u@im.wechat", None)
        .await
        .expect("config");
    let login = Client::new(&base, None).expect("valid");
    let ticket = login.get_qrcode(&[]).await.expect("qr");
    login
        .qrcode_status(&ticket.qrcode, None)
        .await
        .expect("status");

    let requests = handle.requests();
    assert_eq!(requests.len(), 6);
    let mut uins = HashSet::new();
    for r in &requests {
        assert_eq!(r.app_id.as_deref(), Some("bot"), "{r:?}");
        assert_eq!(r.client_version.as_deref(), Some("132099"), "{r:?}");
        if r.endpoint == Endpoint::GetQrcodeStatus {
            assert_eq!(r.method, "GET");
            assert!(
                r.uin.is_none() && !r.has_authorization,
                "GET carries only iLink-App-*: {r:?}"
            );
            continue;
        }
        assert_eq!(r.method, "POST");
        assert_eq!(r.authorization_type.as_deref(), Some("ilink_bot_token"));
        assert_eq!(r.content_type.as_deref(), Some("application/json"));
        let uin = r.uin.clone().expect("X-WECHAT-UIN");
        assert!(is_valid_uin(&uin), "{uin}");
        uins.insert(uin);
        if r.endpoint == Endpoint::GetBotQrcode {
            assert!(!r.has_authorization, "QR fetch has no token");
            assert!(r.query.as_deref().is_some_and(|q| q.contains("bot_type=3")));
            continue;
        }
        assert!(r.token_valid, "{r:?}");
        assert_eq!(r.route_tag.as_deref(), Some("route-7"));
        let info = r.base_info.clone().expect("base_info");
        assert_eq!(info["channel_version"], "2.4.3");
        assert!(
            info["bot_agent"]
                .as_str()
                .is_some_and(|a| a.starts_with("scv-bridge/"))
        );
    }
    // A fresh random UIN per request (5 POSTs; a repeat is a 1-in-10^8 event).
    assert_eq!(uins.len(), 5);
}

#[tokio::test]
async fn the_fake_refuses_what_the_platform_refuses() {
    let (fake, handle, _client) = start().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}ilink/bot/{path}", fake.base_url());
    let token = handle.bot_token().expect("initial token");
    // reqwest appends headers, so each variant is built from scratch.
    let build = |auth_type: Option<&str>, bearer: Option<&str>, uin: Option<String>| {
        let mut req = http.post(url("msg/notifystart"));
        if let Some(t) = auth_type {
            req = req.header("AuthorizationType", t);
        }
        if let Some(b) = bearer {
            req = req.header("Authorization", format!("Bearer {b}"));
        }
        if let Some(u) = uin {
            req = req.header("X-WECHAT-UIN", u);
        }
        req
    };
    let uin = || Some(scv_wechat::headers::random_uin());
    let good = || build(Some("ilink_bot_token"), Some(token.expose()), uin());
    let body = json!({"base_info": {"channel_version": "2.4.3"}}).to_string();
    let answer = |req: reqwest::RequestBuilder| {
        let body = body.clone();
        async move {
            let resp = req.body(body).send().await.expect("answers");
            assert_eq!(resp.status(), 200, "business errors are HTTP 200");
            resp.json::<Value>().await.expect("json")
        }
    };
    assert_eq!(answer(good()).await["ret"], 0);
    let expired = json!({"errcode": -14, "errmsg": "session timeout"});
    let refused = [
        build(None, Some(token.expose()), uin()),
        build(Some("other"), Some(token.expose()), uin()),
        build(Some("ilink_bot_token"), Some(token.expose()), None),
        build(
            Some("ilink_bot_token"),
            Some(token.expose()),
            Some("bm90IGRpZ2l0cw==".into()),
        ),
        build(Some("ilink_bot_token"), Some("wrong"), uin()),
        build(Some("ilink_bot_token"), None, uin()),
    ];
    for req in refused {
        assert_eq!(answer(req).await, expired);
    }
    let bad_json = good().body("{not json").send().await.expect("answers");
    assert_eq!(bad_json.json::<Value>().await.expect("json")["ret"], -1);
    assert_eq!(
        http.get(url("getupdates"))
            .send()
            .await
            .expect("answers")
            .status(),
        405
    );
    assert_eq!(
        http.post(url("nope"))
            .send()
            .await
            .expect("answers")
            .status(),
        404
    );
    let outside = format!(
        "{}ilink/bot/getupdates",
        fake.base_url().replace("/bot-api/", "/")
    );
    assert_eq!(
        http.post(outside).send().await.expect("answers").status(),
        404
    );
    assert_eq!(
        handle.notifies(),
        [Endpoint::NotifyStart],
        "only the good call counted"
    );
}
