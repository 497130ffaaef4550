//! Fatal and transient failures of the long connection, and the fake's own protocol checks.
#![cfg(feature = "fake")]

use crate::common;

use common::{WAIT, client_for, client_with, fast_options};
use futures_util::{SinkExt, StreamExt};
use scv_feishu::fake::{EndpointFailure, FakeConfig, FakeFeishu, HandshakeFailure};
use scv_feishu::frame::{Frame, FrameType};
use scv_feishu::ws::{LongConnection, discover};
use scv_feishu::{Credentials, Error, ErrorClass, FatalReason, classify};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

async fn run_until_err(conn: &LongConnection) -> Error {
    let (tx, _rx) = mpsc::channel(8);
    let out = tokio::time::timeout(WAIT, conn.run(tx, CancellationToken::new()))
        .await
        .expect("returns");
    out.expect_err("fatal")
}

#[tokio::test]
async fn bad_credentials_stop_the_long_connection_at_once() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.unwrap();
    let client = client_with(
        &fake,
        Credentials::new(fake.config().app_id.clone(), "nope"),
    );
    let err = run_until_err(&LongConnection::new(client, fast_options())).await;
    assert!(
        matches!(
            err,
            Error::Endpoint {
                code: 1000040345,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        classify(&err),
        ErrorClass::Fatal {
            reason: FatalReason::BadCredentials
        }
    );
    assert_eq!(
        fake.endpoint_requests(),
        1,
        "no retry loop on a fatal error"
    );
}

#[tokio::test]
async fn forbidden_and_connection_limit_handshakes_are_fatal() {
    for (failure, reason) in [
        (
            HandshakeFailure {
                status: 403,
                auth_code: None,
            },
            FatalReason::Forbidden,
        ),
        (
            HandshakeFailure {
                status: 514,
                auth_code: Some(1000040350),
            },
            FatalReason::ConnectionLimit,
        ),
    ] {
        let fake = FakeFeishu::start(FakeConfig::fast()).await.unwrap();
        fake.set_handshake_failure(Some(failure));
        let err = run_until_err(&LongConnection::new(client_for(&fake), fast_options())).await;
        assert_eq!(classify(&err), ErrorClass::Fatal { reason }, "{err:?}");
        assert_eq!(fake.refused_handshakes(), 1);
    }
}

#[tokio::test]
async fn busy_endpoint_and_auth_hiccups_are_retried() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.unwrap();
    fake.set_endpoint_failure(Some(EndpointFailure::Code(1)));
    let conn = std::sync::Arc::new(LongConnection::new(client_for(&fake), fast_options()));
    let (tx, _rx) = mpsc::channel(8);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (conn, cancel) = (conn.clone(), cancel.clone());
        async move { conn.run(tx, cancel).await }
    });
    assert!(
        fake.wait_until(WAIT, |f| f.endpoint_requests() >= 2).await,
        "code 1 is retried"
    );
    fake.set_endpoint_failure(Some(EndpointFailure::Http500));
    let n = fake.endpoint_requests();
    assert!(
        fake.wait_until(WAIT, |f| f.endpoint_requests() >= n + 2)
            .await,
        "HTTP 500 is retried"
    );
    fake.set_endpoint_failure(None);
    fake.set_handshake_failure(Some(HandshakeFailure {
        status: 514,
        auth_code: Some(1),
    }));
    assert!(
        fake.wait_until(WAIT, |f| f.refused_handshakes() >= 2).await,
        "514 without the limit code is retried"
    );
    fake.set_handshake_failure(None);
    assert!(fake.wait_until(WAIT, |f| f.live_connections() == 1).await);
    cancel.cancel();
    assert!(matches!(task.await, Ok(Ok(()))));
}

#[tokio::test]
async fn fake_refuses_used_tickets_and_frames_missing_required_fields() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.unwrap();
    let client = client_for(&fake);
    let ep = discover(&client).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(ep.url.expose())
        .await
        .expect("fresh ticket accepted");
    match tokio_tungstenite::connect_async(ep.url.expose()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.headers()["Handshake-Status"], "514");
        }
        other => panic!("a used ticket must be refused: {:?}", other.map(|_| ())),
    }
    // A proper ping is answered with a pong carrying ClientConfig.
    ws.send(Message::Binary(
        Frame::ping(ep.service_id).to_bytes().into(),
    ))
    .await
    .unwrap();
    let pong = loop {
        match tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("pong in time")
        {
            Some(Ok(Message::Binary(b))) => break Frame::from_bytes(&b).unwrap(),
            Some(Ok(_)) => continue,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(pong.frame_type(), Some(FrameType::Pong));
    let cfg: serde_json::Value = serde_json::from_slice(pong.payload.as_deref().unwrap()).unwrap();
    assert!(cfg.get("PingInterval").is_some());
    // SeqID and service only: the fake drops the connection like the Go decoder would.
    ws.send(Message::Binary(vec![0x08, 0x01, 0x18, 0x01].into()))
        .await
        .unwrap();
    let closed = loop {
        match tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("closed in time")
        {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break true,
            Some(Ok(_)) => continue,
        }
    };
    assert!(closed);
    assert_eq!(fake.rejected_frames(), 1);
}
