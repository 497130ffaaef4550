//! One socket's life: ping, watch liveness, reassemble, deliver, write the caller's ACKs.

use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use super::ack::{AckHandle, Delivery};
use super::endpoint::{ClientConfig, Endpoint};
use super::reassembly::Reassembler;
use super::{LinkState, LinkStatus, WsOptions};
use crate::error::Error;
use crate::event::{CARD_ACTION, peek_event_type};
use crate::frame::{Frame, FrameType, METHOD_DATA};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Why a session ended without an error.
pub(crate) enum SessionEnd {
    /// The caller cancelled.
    Cancelled,
    /// The caller dropped the delivery receiver.
    ReceiverGone,
}

/// Dials the endpoint; a refused upgrade becomes [`Error::Handshake`] with its headers.
pub(crate) async fn dial(endpoint: &Endpoint, max_message_bytes: usize) -> Result<Socket, Error> {
    // reqwest may have left no process-wide provider; the WS TLS config needs one.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_message_bytes))
        .max_frame_size(Some(max_message_bytes));
    match tokio_tungstenite::connect_async_with_config(endpoint.url.expose(), Some(config), true)
        .await
    {
        Ok((socket, _)) => Ok(socket),
        Err(tungstenite::Error::Http(resp)) => {
            let h = |k: &str| {
                resp.headers()
                    .get(k)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let num = |k: &str| h(k).and_then(|v| v.trim().parse::<i64>().ok());
            Err(Error::Handshake {
                http_status: resp.status().as_u16(),
                status: num("Handshake-Status"),
                auth_code: num("Handshake-Autherrcode"),
                msg: h("Handshake-Msg"),
            })
        }
        Err(e) => Err(Error::WebSocket(e.to_string())),
    }
}

/// Runs one connected socket until it fails, the caller cancels, or the receiver is dropped.
pub(crate) async fn run(
    socket: Socket,
    endpoint: &Endpoint,
    config: &mut ClientConfig,
    options: &WsOptions,
    status: &watch::Sender<LinkStatus>,
    deliveries: &mpsc::Sender<Delivery>,
    cancel: &CancellationToken,
) -> Result<SessionEnd, Error> {
    let (mut sink, mut stream) = socket.split();
    let (ack_tx, mut ack_rx) = mpsc::unbounded_channel::<Frame>();
    let mut reasm = Reassembler::new(options.fragment_timeout, options.max_message_bytes);
    let ping = Message::Binary(Frame::ping(endpoint.service_id).to_bytes().into());
    let ws_err = |e: tungstenite::Error| Error::WebSocket(e.to_string());

    sink.send(ping.clone()).await.map_err(ws_err)?;
    let mut next_ping = Instant::now() + config.ping_interval;
    let mut last_inbound = Instant::now();
    // An event the full queue could not take yet: the socket is not read until it is handed
    // over, so TCP holds the rest of a burst and nothing is dropped (a dropped event is not
    // ACKed and comes back 3 s later as a re-push).
    let mut held: Option<Delivery> = None;
    loop {
        let window = config.ping_interval * options.watchdog_factor.max(1);
        let purge_at = reasm.next_deadline();
        tokio::select! {
            _ = cancel.cancelled() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ok(SessionEnd::Cancelled);
            }
            // Not while holding: the socket is unread on purpose, so its silence proves nothing.
            _ = sleep_until(last_inbound + window), if held.is_none() => return Err(Error::Stalled(window)),
            _ = sleep_until(next_ping) => {
                sink.send(ping.clone()).await.map_err(ws_err)?;
                next_ping = Instant::now() + config.ping_interval;
            }
            _ = sleep_until(purge_at.unwrap_or_else(Instant::now)), if purge_at.is_some() => {
                let dropped = reasm.purge(Instant::now());
                tracing::warn!(dropped, "incomplete fragmented messages timed out");
            }
            Some(ack) = ack_rx.recv() => {
                // A committed batch ACKs many events at once: one flush for all that are queued.
                sink.feed(Message::Binary(ack.to_bytes().into())).await.map_err(ws_err)?;
                while let Ok(more) = ack_rx.try_recv() {
                    sink.feed(Message::Binary(more.to_bytes().into())).await.map_err(ws_err)?;
                }
                sink.flush().await.map_err(ws_err)?;
            }
            room = deliveries.reserve(), if held.is_some() => match (room, held.take()) {
                (Ok(permit), Some(d)) => {
                    permit.send(d);
                    // The watchdog's window starts again once the socket is read again.
                    last_inbound = Instant::now();
                }
                _ => return Ok(SessionEnd::ReceiverGone),
            },
            msg = stream.next(), if held.is_none() => {
                let bytes = match msg {
                    None => return Err(Error::Closed),
                    Some(Err(e)) => return Err(ws_err(e)),
                    Some(Ok(Message::Close(_))) => return Err(Error::Closed),
                    Some(Ok(Message::Binary(b))) => b,
                    // WS-level pings and text frames: alive, nothing to do (tungstenite answers pings).
                    Some(Ok(_)) => {
                        last_inbound = Instant::now();
                        continue;
                    }
                };
                last_inbound = Instant::now();
                let frame = match Frame::from_bytes(&bytes) {
                    Ok(f) => f,
                    Err(e) => {
                        tracing::warn!(error = %e, "ignoring undecodable frame");
                        continue;
                    }
                };
                mark_alive(status);
                match frame.frame_type() {
                    Some(FrameType::Pong) => {
                        let before = config.ping_interval;
                        adopt_config(config, &frame, status);
                        if config.ping_interval != before {
                            next_ping = next_ping.min(Instant::now() + config.ping_interval);
                        }
                    }
                    Some(kind @ (FrameType::Event | FrameType::Card)) if frame.method == METHOD_DATA => {
                        if let Some((done, payload)) = reasm.push(frame, Instant::now()) {
                            let d = delivery(kind, done, plaintext(payload, options), &ack_tx);
                            match deliveries.try_send(d) {
                                Ok(()) => {}
                                Err(mpsc::error::TrySendError::Full(d)) => held = Some(d),
                                Err(mpsc::error::TrySendError::Closed(_)) => {
                                    return Ok(SessionEnd::ReceiverGone);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

fn mark_alive(status: &watch::Sender<LinkStatus>) {
    status.send_modify(|s| {
        s.state = LinkState::Connected;
        s.last_evidence = Some(Instant::now());
    });
}

fn adopt_config(config: &mut ClientConfig, pong: &Frame, status: &watch::Sender<LinkStatus>) {
    let Some(payload) = pong.payload.as_deref().filter(|p| !p.is_empty()) else {
        return;
    };
    match serde_json::from_slice::<serde_json::Value>(payload) {
        Ok(v) if v.is_object() => {
            config.merge_json(&v);
            let c = *config;
            status.send_modify(|s| s.config = c);
        }
        _ => tracing::debug!("pong payload is not a ClientConfig object"),
    }
}

/// Decrypts a `{"encrypt":…}` payload when a key is configured; other payloads pass through.
fn plaintext(payload: Vec<u8>, options: &WsOptions) -> Vec<u8> {
    let Some(key) = &options.encrypt_key else {
        return payload;
    };
    let encrypted = serde_json::from_slice::<serde_json::Value>(&payload)
        .ok()
        .and_then(|v| {
            v.get("encrypt")
                .and_then(|e| e.as_str())
                .map(str::to_string)
        });
    match encrypted.map(|ct| crate::webhook::decrypt(key, &ct)) {
        Some(Ok(plain)) => plain,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "encrypted push does not decrypt; passing it on as is");
            payload
        }
        None => payload,
    }
}

/// A complete event with the handle that ACKs it.
fn delivery(
    kind: FrameType,
    frame: Frame,
    payload: Vec<u8>,
    ack_tx: &mpsc::UnboundedSender<Frame>,
) -> Delivery {
    let event_type = peek_event_type(&payload);
    let callback = kind == FrameType::Card || event_type.as_deref() == Some(CARD_ACTION);
    Delivery {
        kind,
        frame_message_id: frame.header("message_id").unwrap_or_default().to_string(),
        trace_id: frame.header("trace_id").map(str::to_string),
        event_type,
        payload,
        ack: AckHandle::new(frame, ack_tx.clone(), callback),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn encrypted_push_is_decrypted_only_with_a_key() {
        let key = Secret::new("ek");
        let body =
            serde_json::json!({"encrypt": crate::webhook::encrypt(&key, br#"{"schema":"2.0"}"#)});
        let raw = body.to_string().into_bytes();
        let with_key = WsOptions {
            encrypt_key: Some(key),
            ..WsOptions::default()
        };
        assert_eq!(plaintext(raw.clone(), &with_key), br#"{"schema":"2.0"}"#);
        assert_eq!(plaintext(raw.clone(), &WsOptions::default()), raw);
        assert_eq!(plaintext(b"{}".to_vec(), &with_key), b"{}");
    }

    #[test]
    fn public_handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Delivery>();
        check::<AckHandle>();
        check::<super::super::LongConnection>();
        check::<crate::rest::Client>();
    }
}
