//! Unit tests of the iLink client (see `client.rs`).
use super::*;

#[test]
fn base_url_keeps_prefix_with_or_without_slash() {
    for base in ["http://h:1/bot-api", "http://h:1/bot-api/"] {
        let c = Client::new(base, None).expect("valid");
        let url = c.url(Endpoint::NotifyStart, &[]).expect("joins");
        assert_eq!(url.as_str(), "http://h:1/bot-api/ilink/bot/msg/notifystart");
    }
    let c = Client::new("https://ilinkai.weixin.qq.com", None).expect("valid");
    let url = c
        .url(Endpoint::GetQrcodeStatus, &[("qrcode", "a b&c")])
        .expect("joins");
    assert_eq!(
        url.as_str(),
        "https://ilinkai.weixin.qq.com/ilink/bot/get_qrcode_status?qrcode=a+b%26c"
    );
    assert!(Client::new("ftp://x", None).is_err());
    assert!(Client::new("not a url", None).is_err());
}

#[test]
fn redirect_replaces_host_and_port_only() {
    let c = Client::new("https://a.example/p/", None).expect("valid");
    assert_eq!(
        c.redirected("b.example").expect("ok").base_url(),
        "https://b.example/p/"
    );
    let c = Client::new("http://127.0.0.1:1/p", None).expect("valid");
    assert_eq!(
        c.redirected("127.0.0.1:8080").expect("ok").base_url(),
        "http://127.0.0.1:8080/p/"
    );
    assert!(c.redirected("x/y").is_err());
}

#[test]
fn poll_timeout_is_hold_plus_margin() {
    let c = Client::new("http://h", None).expect("valid");
    assert_eq!(c.poll_timeout(), Duration::from_secs(45));
    c.suggested_hold_ms.store(20_000, Ordering::Relaxed);
    assert_eq!(c.poll_timeout(), Duration::from_secs(30));
}

#[tokio::test]
async fn a_refused_connection_says_so() {
    // Bound and closed again: nothing listens there now.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let c = Client::new(&format!("http://127.0.0.1:{port}"), None).expect("valid");
    let e = c.get_qrcode(&[]).await.expect_err("nothing listens");
    let text = e.to_string();
    assert!(text.contains("connection refused"), "{text}");
    assert!(!text.contains("os error"), "{text}");
}

#[test]
fn client_ids_are_unique() {
    let a = new_client_id();
    assert!(a.starts_with("scv-wechat:"));
    assert_ne!(a, new_client_id());
}
