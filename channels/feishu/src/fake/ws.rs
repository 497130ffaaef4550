//! The fake's WebSocket side: one-time tickets, protobuf frames, pongs, pushes, ACK checks.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::records::{AckRecord, ConnectionRecord, PushRecord};
use super::state::{ConnCtl, Inflight, PendingPush, Shared, envelope, kind_str};
use crate::frame::{Frame, FrameType, Header, METHOD_CONTROL, METHOD_DATA, check_required_fields};

/// `GET /ws/v2?…ticket=…`: upgrades only with a fresh ticket.
pub(crate) async fn upgrade(
    State(sh): State<Arc<Shared>>,
    Query(q): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let ticket = q.get("ticket").cloned().unwrap_or_default();
    let device_id = q.get("device_id").cloned().unwrap_or_default();
    let (tx, rx) = mpsc::unbounded_channel();
    let id = {
        let mut st = sh.lock();
        if let Some(f) = st.handshake_failure.clone() {
            st.refused_handshakes += 1;
            return refuse(f.status, f.auth_code, "refused by test");
        }
        match st.tickets.get_mut(&ticket) {
            Some(used @ false) => *used = true,
            _ => {
                st.refused_handshakes += 1;
                return refuse(514, Some(1000040351), "ticket invalid or already used");
            }
        }
        let id = st.next();
        st.conns.insert(id, tx);
        st.connections.push(ConnectionRecord { ticket, device_id });
        id
    };
    ws.on_upgrade(move |socket| async move {
        serve(socket, &sh, rx).await;
        sh.lock().conns.remove(&id);
    })
}

fn refuse(status: i64, auth_code: Option<i64>, msg: &str) -> Response {
    let mut r = (StatusCode::BAD_REQUEST, "handshake refused").into_response();
    let h = r.headers_mut();
    h.insert("Handshake-Status", HeaderValue::from(status));
    h.insert(
        "Handshake-Msg",
        HeaderValue::from_str(msg).unwrap_or(HeaderValue::from_static("refused")),
    );
    if let Some(c) = auth_code {
        h.insert("Handshake-Autherrcode", HeaderValue::from(c));
    }
    r
}

/// Runs one connection until either side closes it.
///
/// Reading and writing go on at once, as on the real platform: ACKs that come back while a
/// burst is still being pushed are read (and stop their re-push deadline) without waiting for
/// the whole queue to be written.
async fn serve(socket: WebSocket, sh: &Shared, mut ctl: mpsc::UnboundedReceiver<ConnCtl>) {
    let (mut sink, mut stream) = socket.split();
    let stalled = AtomicBool::new(false);
    // Pongs and the close the reading half decides on, written by the writing half.
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Message>();
    let writer = async {
        if send_queued(&mut sink, sh).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                cmd = ctl.recv() => match cmd {
                    None | Some(ConnCtl::Close) => {
                        let _ = sink.send(Message::Close(None)).await;
                        return;
                    }
                    Some(ConnCtl::Stall) => stalled.store(true, Ordering::Relaxed),
                    Some(ConnCtl::Wake) if !stalled.load(Ordering::Relaxed) => {
                        if send_queued(&mut sink, sh).await.is_err() {
                            return;
                        }
                    }
                    Some(ConnCtl::Wake) => {}
                },
                out = out_rx.recv() => {
                    let Some(out) = out else { return };
                    let close = matches!(out, Message::Close(_));
                    if sink.send(out).await.is_err() || close {
                        return;
                    }
                }
            }
        }
    };
    let reader = async {
        loop {
            let bytes = match stream.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(Message::Binary(b))) => b,
                Some(Ok(_)) => continue,
            };
            if check_required_fields(&bytes).is_err() {
                // The Go decoder fails the whole frame; the server drops the client.
                sh.lock().rejected_frames += 1;
                let _ = out_tx.send(Message::Close(None));
                // The writer closes the socket; this half waits for it to end.
                std::future::pending::<()>().await;
            }
            let Ok(frame) = Frame::from_bytes(&bytes) else {
                continue;
            };
            if let Some(pong) = on_frame(sh, frame, stalled.load(Ordering::Relaxed)) {
                let _ = out_tx.send(Message::Binary(pong.to_bytes().into()));
            }
        }
    };
    tokio::select! {
        _ = writer => {}
        _ = reader => {}
    }
}

/// Handles a client frame; returns a pong to send, if any.
fn on_frame(sh: &Shared, frame: Frame, stalled: bool) -> Option<Frame> {
    let mut st = sh.lock();
    match (frame.method, frame.frame_type()) {
        (METHOD_CONTROL, Some(FrameType::Ping)) => {
            if frame.service != sh.config.service_id {
                st.rejected_frames += 1;
                return None;
            }
            st.pings += 1;
            if stalled {
                return None;
            }
            let payload = st
                .pong_config
                .clone()
                .or_else(|| Some(sh.config.client_config.clone()));
            Some(Frame {
                service: sh.config.service_id,
                method: METHOD_CONTROL,
                headers: vec![Header::new("type", "pong")],
                payload: payload.map(|p| p.to_string().into_bytes()),
                ..Default::default()
            })
        }
        (METHOD_DATA, _) if st.drop_acks > 0 => {
            // Lost on the wire: the push stays in flight and is re-pushed after the deadline.
            st.drop_acks -= 1;
            None
        }
        (METHOD_DATA, _) => {
            record_ack(&mut st, frame, sh.config.ack_timeout);
            None
        }
        _ => None,
    }
}

fn record_ack(st: &mut super::state::State, ack: Frame, ack_timeout: Duration) {
    let id = ack.header("message_id").unwrap_or_default().to_string();
    let body: Value = ack
        .payload
        .as_deref()
        .and_then(|p| serde_json::from_slice(p).ok())
        .unwrap_or(Value::Null);
    let code = body.get("code").and_then(Value::as_i64);
    let data = body
        .get("data")
        .and_then(Value::as_str)
        .and_then(|d| B64.decode(d).ok())
        .and_then(|d| serde_json::from_slice::<Value>(&d).ok());
    let inflight = st.inflight.remove(&id);
    let now = Instant::now();
    let latency = inflight
        .as_ref()
        .map(|f| ack_timeout.saturating_sub(f.deadline.saturating_duration_since(now)));
    let echo_ok = inflight
        .as_ref()
        .is_some_and(|f| echoes(&f.last_frame, &ack));
    let headers = ack
        .headers
        .iter()
        .map(|h| (h.key.clone(), h.value.clone()))
        .collect();
    st.acks.push(AckRecord {
        frame_message_id: id,
        event_id: inflight.as_ref().map(|f| f.push.event_id.clone()),
        headers,
        echo_ok,
        code,
        data: data.clone(),
        latency,
    });
    let Some(f) = inflight else { return };
    if code != Some(200) {
        st.requeue(f.push);
        st.wake_all();
        return;
    }
    // A card-click response may replace the clicked card.
    if f.push.event_type == crate::event::CARD_ACTION
        && let Some(card) = data.as_ref().and_then(|d| d.pointer("/card/data")).cloned()
        && let Some(msg) = f
            .push
            .event
            .pointer("/context/open_message_id")
            .and_then(Value::as_str)
    {
        let msg = msg.to_string();
        let _ = super::http::apply_card(st, &msg, card);
    }
}

/// True when `ack` repeats SeqID, LogID, service, method and every header of `sent`, then `biz_rt`.
fn echoes(sent: &Frame, ack: &Frame) -> bool {
    let n = sent.headers.len();
    (sent.seq_id, sent.log_id, sent.service, sent.method)
        == (ack.seq_id, ack.log_id, ack.service, ack.method)
        && ack.headers.len() == n + 1
        && ack.headers[..n] == sent.headers[..]
        && ack.headers[n].key == "biz_rt"
        && ack.headers[n].value.parse::<u64>().is_ok()
}

/// Sends every queued push on this socket and marks them in flight.
async fn send_queued(
    socket: &mut SplitSink<WebSocket, Message>,
    sh: &Shared,
) -> Result<(), axum::Error> {
    loop {
        let Some((frames, push)) = next_frames(sh) else {
            return Ok(());
        };
        let mut sent = Ok(());
        for f in &frames {
            sent = socket.send(Message::Binary(f.to_bytes().into())).await;
            if sent.is_err() {
                break;
            }
        }
        // In flight even when the socket failed: the platform cannot tell a dead peer from a
        // slow one, so the event is re-pushed after the deadline, never silently lost.
        let mut st = sh.lock();
        if let Some(last) = frames.last() {
            let id = last.header("message_id").unwrap_or_default().to_string();
            let deadline = Instant::now() + sh.config.ack_timeout;
            st.inflight.insert(
                id,
                Inflight {
                    push,
                    last_frame: last.clone(),
                    deadline,
                },
            );
        }
        sent?;
    }
}

/// Pops one push and encodes it as frames (fragments last-first, to exercise reordering).
fn next_frames(sh: &Shared) -> Option<(Vec<Frame>, PendingPush)> {
    let mut st = sh.lock();
    let push = st.queue.pop_front()?;
    st.pushes.push(PushRecord {
        event_id: push.event_id.clone(),
        event_type: push.event_type.clone(),
        im_message_id: push.im_message_id.clone(),
        attempt: push.attempt,
        kind: push.options.kind,
    });
    let payload = envelope(&push, &sh.config.app_id).to_string().into_bytes();
    let sum = push.options.fragments.clamp(1, payload.len().max(1));
    let chunk = payload.len().div_ceil(sum);
    let frame_id = format!("fm_{}", st.next());
    let trace = format!("trace-{}", st.next());
    let (seq_id, log_id) = (
        rand::random::<u32>() as u64 + 1,
        rand::random::<u32>() as u64 + 1,
    );
    let mut frames: Vec<Frame> = payload
        .chunks(chunk.max(1))
        .enumerate()
        .map(|(seq, part)| {
            let mut headers = vec![
                Header::new("type", kind_str(push.options.kind)),
                Header::new("message_id", frame_id.clone()),
                Header::new("sum", sum.to_string()),
                Header::new("seq", seq.to_string()),
                Header::new("trace_id", trace.clone()),
                Header::new("timestamp", super::state::now_ms().to_string()),
            ];
            headers.extend(
                push.options
                    .extra_headers
                    .iter()
                    .map(|(k, v)| Header::new(k, v)),
            );
            Frame {
                seq_id,
                log_id,
                service: sh.config.service_id,
                method: METHOD_DATA,
                headers,
                payload: Some(part.to_vec()),
                ..Default::default()
            }
        })
        .collect();
    frames.reverse();
    Some((frames, push))
}

/// Re-pushes in-flight events whose ACK did not come in time, until the fake stops.
pub(crate) async fn ack_watcher(sh: Arc<Shared>) {
    let tick = (sh.config.ack_timeout / 4).max(Duration::from_millis(5));
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        let n = sh.lock().repush_expired(Instant::now());
        if n > 0 {
            tracing::debug!(n, "fake: ACK timed out; re-pushing with new event_id");
        }
    }
}
