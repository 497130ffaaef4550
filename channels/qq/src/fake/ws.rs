//! The fake gateway (§8.4–8.5): Hello first; Identify (token, intents) or Resume (session,
//! seq, replay, RESUMED); a heartbeat ACK for each heartbeat; the socket closed when heartbeats
//! stop; control messages from the test (frames, op 7/9, close codes, a dropped link).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::state::{Ctl, Shared};

type Sink = SplitSink<WebSocket, Message>;

/// `GET /websocket`.
pub(crate) async fn upgrade(State(sh): State<Arc<Shared>>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| serve(socket, sh))
}

fn text(v: &Value) -> Message {
    Message::Text(v.to_string().into())
}

async fn close(sink: &mut Sink, sh: &Shared, code: u16) {
    sh.lock().server_closes.push(code);
    let frame = CloseFrame {
        code,
        reason: "fake".into(),
    };
    let _ = sink.send(Message::Close(Some(frame))).await;
}

/// How long the fake waits for a heartbeat before it closes the socket: 1.5× the interval
/// (the real server's grace is unconfirmed; this forces a correct heartbeat).
fn grace(sh: &Shared) -> Duration {
    sh.lock().cfg.heartbeat_interval.mul_f64(1.5)
}

async fn serve(socket: WebSocket, sh: Arc<Shared>) {
    let (mut sink, mut stream) = socket.split();
    let (conn, interval) = {
        let mut st = sh.lock();
        st.connections += 1;
        (st.next(), st.cfg.heartbeat_interval)
    };
    let hello = json!({"op": 10, "d": {"heartbeat_interval": interval.as_millis() as u64}});
    if sink.send(text(&hello)).await.is_err() {
        return;
    }
    let deadline = Instant::now() + grace(&sh);
    let first = tokio::select! {
        _ = sleep_until(deadline) => { close(&mut sink, &sh, 4009).await; return; }
        m = stream.next() => m,
    };
    let Some(Ok(Message::Text(first))) = first else {
        return;
    };
    let first: Value = serde_json::from_str(first.as_str()).unwrap_or(Value::Null);
    let (tx, rx) = mpsc::unbounded_channel();
    let opened = match first.get("op").and_then(Value::as_i64) {
        Some(2) => identify(&sh, &first["d"], conn, tx),
        Some(6) => resume(&sh, &first["d"], conn, tx),
        // Anything before Identify (§8.4).
        _ => Err(4003),
    };
    match opened {
        Ok(frames) => {
            for f in frames {
                if sink.send(text(&f)).await.is_err() {
                    return;
                }
            }
            run(sink, stream, &sh, rx).await;
        }
        Err(code) => close(&mut sink, &sh, code).await,
    }
    let mut st = sh.lock();
    if st.live.as_ref().is_some_and(|(id, _, _)| *id == conn) {
        st.live = None;
    }
}

/// Op 2: token and intents checked, a new session, READY, then what waited for a session.
fn identify(
    sh: &Shared,
    d: &Value,
    conn: u64,
    tx: mpsc::UnboundedSender<Ctl>,
) -> Result<Vec<Value>, u16> {
    let mut st = sh.lock();
    st.identifies.push(d.clone());
    if !st.token_ok(d.get("token").and_then(Value::as_str).unwrap_or("")) {
        return Err(4004);
    }
    let intents = d.get("intents").and_then(Value::as_u64).unwrap_or(0);
    if intents & !u64::from(st.cfg.granted_intents) != 0 {
        return Err(4014);
    }
    if let Some(left) = st.session_starts_left.as_mut() {
        *left = left.saturating_sub(1);
    }
    let sid = st.new_session();
    let user = json!({"id": st.cfg.bot_id, "username": st.cfg.bot_name, "bot": true});
    let session = st.sessions.get_mut(&sid).expect("just made");
    session.s += 1;
    let ready = json!({"op": 0, "s": session.s, "t": "READY",
        "d": {"version": 1, "session_id": sid, "user": user, "shard": [0, 1]}});
    st.live = Some((conn, sid, tx));
    for (t, d, id) in std::mem::take(&mut st.pending) {
        st.dispatch(&t, d, id);
    }
    Ok(vec![ready])
}

/// Op 6: a known, valid session and a seq it has reached; replays what came after, then RESUMED.
fn resume(
    sh: &Shared,
    d: &Value,
    conn: u64,
    tx: mpsc::UnboundedSender<Ctl>,
) -> Result<Vec<Value>, u16> {
    let mut st = sh.lock();
    let sid = d
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let seq = d.get("seq").and_then(Value::as_u64).unwrap_or(0);
    st.resumes.push((sid.clone(), seq));
    if !st.token_ok(d.get("token").and_then(Value::as_str).unwrap_or("")) {
        return Err(4004);
    }
    let Some(session) = st.sessions.get(&sid).filter(|s| s.valid) else {
        return Err(4006);
    };
    if seq > session.s {
        return Err(4007);
    }
    let mut frames: Vec<Value> = session
        .buffer
        .iter()
        .filter(|(s, _)| *s > seq)
        .map(|(_, f)| f.clone())
        .collect();
    frames.push(json!({"op": 0, "t": "RESUMED", "d": ""}));
    st.live = Some((conn, sid, tx));
    Ok(frames)
}

/// The live socket: heartbeats in, control messages out, closed when heartbeats stop.
async fn run(
    mut sink: Sink,
    mut stream: futures_util::stream::SplitStream<WebSocket>,
    sh: &Shared,
    mut rx: mpsc::UnboundedReceiver<Ctl>,
) {
    let grace = grace(sh);
    let mut deadline = Instant::now() + grace;
    loop {
        tokio::select! {
            _ = sleep_until(deadline) => return close(&mut sink, sh, 4009).await,
            ctl = rx.recv() => match ctl {
                Some(Ctl::Frame(f)) => if sink.send(text(&f)).await.is_err() { return },
                Some(Ctl::Close(code)) => return close(&mut sink, sh, code).await,
                Some(Ctl::Drop) | None => return,
            },
            msg = stream.next() => {
                let Some(Ok(Message::Text(t))) = msg else {
                    match msg {
                        Some(Ok(_)) => continue,
                        _ => return,
                    }
                };
                let v: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                if v.get("op").and_then(Value::as_i64) == Some(1) {
                    deadline = Instant::now() + grace;
                    let ack = {
                        let mut st = sh.lock();
                        st.heartbeats.push(v.get("d").and_then(Value::as_u64));
                        st.heartbeat_acks
                    };
                    if ack && sink.send(text(&json!({"op": 11}))).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
