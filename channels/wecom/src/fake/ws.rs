//! The fake's WebSocket side: accept, read command frames, answer them (after the configured
//! delay, or never), push callbacks to the subscribed socket, close or drop sockets on demand.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State as AxumState;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::answer::Answer;
use super::rules;
use super::state::{Conn, Ctl, Fault, FrameRecord, Shared, State};
use crate::frame::cmd;

/// How long a refused subscribe's socket stays open before the fake closes it (§7.3).
const CLOSE_AFTER_REFUSAL: Duration = Duration::from_secs(1);
/// Upload chunks the fake takes at once; more get "system error" (§4.6).
const MAX_CONCURRENT_CHUNKS: usize = 3;

/// `GET /`: every upgrade is accepted; subscribe decides.
pub(crate) async fn upgrade(
    AxumState(sh): AxumState<Arc<Shared>>,
    ws: WebSocketUpgrade,
) -> Response {
    let (tx, rx) = mpsc::unbounded_channel();
    let id = {
        let mut st = sh.lock();
        st.accepted += 1;
        let id = st.accepted;
        st.conns.insert(
            id,
            Conn {
                tx,
                subscribed: false,
            },
        );
        id
    };
    sh.touch();
    ws.on_upgrade(move |socket| async move {
        serve(socket, &sh, id, rx).await;
        {
            let mut st = sh.lock();
            st.conns.remove(&id);
            if st.current == Some(id) {
                st.current = None;
            }
        }
        sh.touch();
    })
}

async fn serve(socket: WebSocket, sh: &Arc<Shared>, id: u64, mut rx: mpsc::UnboundedReceiver<Ctl>) {
    let (mut sink, mut stream) = socket.split();
    let writer = async {
        while let Some(ctl) = rx.recv().await {
            match ctl {
                Ctl::Text(t) => {
                    if sink.send(Message::Text(t.into())).await.is_err() {
                        return;
                    }
                }
                Ctl::Close(code) => {
                    let frame = CloseFrame {
                        code,
                        reason: "closed by the fake".into(),
                    };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    return;
                }
                // Returning drops the socket without a close frame.
                Ctl::Drop => return,
            }
        }
    };
    let reader = async {
        while let Some(Ok(msg)) = stream.next().await {
            match msg {
                Message::Text(t) => on_text(sh, id, t.as_str()),
                Message::Close(_) => return,
                _ => {}
            }
        }
    };
    tokio::select! {
        _ = writer => {}
        _ = reader => {}
    }
}

/// Handles one client frame. Frames that are not JSON objects with a `cmd` and a `req_id`
/// get no answer (§7.1).
fn on_text(sh: &Arc<Shared>, conn: u64, text: &str) {
    let Ok(Value::Object(frame)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let command = frame
        .get("cmd")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(req_id) = frame
        .get("headers")
        .and_then(|h| h.get("req_id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return;
    };
    let body = frame.get("body");
    let mut st = sh.lock();
    let answer = decide(sh, &mut st, conn, &command, &req_id, body);
    st.frames.push(FrameRecord {
        conn,
        cmd: command.clone(),
        req_id: req_id.clone(),
        body: body.cloned(),
        errcode: answer.as_ref().map(|a| a.code),
        at: Instant::now(),
    });
    let Some(answer) = answer else {
        drop(st);
        sh.touch();
        return;
    };
    if let Some(old) = answer.supersede {
        supersede(&mut st, old);
    }
    if answer.close_after
        && let Some(c) = st.conns.get(&conn)
    {
        let tx = c.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CLOSE_AFTER_REFUSAL).await;
            let _ = tx.send(Ctl::Close(1000));
        });
    }
    let delay = st.ack_delay;
    drop(st);
    let reply = response(&req_id, &answer);
    let sh = sh.clone();
    let is_chunk = command == cmd::UPLOAD_CHUNK;
    if delay.is_zero() {
        send_answer(&sh, conn, &req_id, reply, is_chunk);
    } else {
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            send_answer(&sh, conn, &req_id, reply, is_chunk);
        });
    }
    // A touch for the frame record (send_answer touches again once answered).
}

/// The answer to a frame, or `None` for no answer at all (silenced pings, injected no-acks).
fn decide(
    sh: &Shared,
    st: &mut State,
    conn: u64,
    command: &str,
    req_id: &str,
    body: Option<&Value>,
) -> Option<Answer> {
    if command == cmd::PING {
        st.pings += 1;
        // A ping must carry no body (§1.4): a test fails on any.
        if body.is_some() {
            st.ping_bodies += 1;
        }
        if st.silent_pings {
            return None;
        }
    }
    let count = st.unanswered.entry(req_id.to_owned()).or_default();
    *count += 1;
    if *count > 1 {
        // Two frames on one req_id without an answer between them (§4.1).
        st.pipelined += 1;
    }
    let fault = (command != cmd::SUBSCRIBE)
        .then(|| st.faults.get_mut(command).and_then(|q| q.pop_front()))
        .flatten();
    let answer = match fault {
        Some(Fault::NoAck) => None,
        Some(Fault::Code(c)) => Some(Answer::err(c, "injected")),
        None if command == cmd::UPLOAD_CHUNK && st.chunks_in_flight >= MAX_CONCURRENT_CHUNKS => {
            Some(Answer::err(-1, "system error"))
        }
        None => Some(rules::answer(sh, st, conn, command, req_id, body)),
    };
    if answer.is_none() {
        forget(st, req_id);
    } else if command == cmd::UPLOAD_CHUNK {
        st.chunks_in_flight += 1;
    }
    answer
}

fn forget(st: &mut State, req_id: &str) {
    if let Some(n) = st.unanswered.get_mut(req_id) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            st.unanswered.remove(req_id);
        }
    }
}

fn response(req_id: &str, a: &Answer) -> String {
    let mut v = json!({"headers": {"req_id": req_id}, "errcode": a.code, "errmsg": a.errmsg});
    if let Some(b) = &a.body {
        v["body"] = b.clone();
    }
    v.to_string()
}

fn send_answer(sh: &Shared, conn: u64, req_id: &str, text: String, is_chunk: bool) {
    {
        let mut st = sh.lock();
        forget(&mut st, req_id);
        if is_chunk {
            st.chunks_in_flight = st.chunks_in_flight.saturating_sub(1);
        }
        if let Some(c) = st.conns.get(&conn) {
            let _ = c.tx.send(Ctl::Text(text));
        }
    }
    sh.touch();
}

/// Tells the old socket another one took the bot, then closes it (§1.5).
fn supersede(st: &mut State, old: u64) {
    let n = st.next();
    let body = json!({"msgid": format!("disc{n}"), "create_time": super::epoch_secs(),
        "aibotid": "", "from": {"userid": ""}, "msgtype": "event",
        "event": {"eventtype": "disconnected_event"}});
    let frame =
        json!({"cmd": cmd::EVENT_CALLBACK, "headers": {"req_id": format!("REQ{n}")}, "body": body});
    st.pushes.push(frame.clone());
    if let Some(c) = st.conns.get(&old) {
        let _ = c.tx.send(Ctl::Text(frame.to_string()));
        let _ = c.tx.send(Ctl::Close(1000));
    }
}
