//! The fake's Stream side (spec §7.3–7.9): one-time tickets, SYSTEM pings with their echo
//! checked, ACKs checked and recorded, `disconnect` with a delayed close, zombie sockets that
//! still answer WebSocket pings, abrupt resets, and re-pushes in duplicate mode.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::records::{AckRecord, ConnectionRecord};
use super::state::{Conn, ConnCmd, Shared, system_frame};
use crate::stream::{CARD_CALLBACK_TOPIC, ROBOT_TOPIC};

/// `GET /connect?ticket=…`: only a ticket issued within its lifetime and never used.
pub(crate) async fn upgrade(
    State(sh): State<Arc<Shared>>,
    Query(q): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let ticket = q.get("ticket").cloned().unwrap_or_default();
    let (tx, rx) = mpsc::unbounded_channel();
    let id = {
        let mut st = sh.lock();
        let verdict = match st.tickets.get_mut(&ticket) {
            None | Some((_, true, _)) => Err(StatusCode::BAD_REQUEST),
            Some((issued, _, _)) if issued.elapsed() >= sh.config.ticket_lifetime => {
                Err(StatusCode::UNAUTHORIZED)
            }
            Some((_, used, topics)) => {
                *used = true;
                Ok(topics.clone())
            }
        };
        let topics = match verdict {
            Ok(t) => t,
            Err(status) => {
                st.refused_handshakes += 1;
                return (status, "ticket invalid, expired or already used").into_response();
            }
        };
        let id = st.next();
        st.connections.push(ConnectionRecord {
            id,
            topics: topics.clone(),
        });
        st.conns.insert(
            id,
            Conn {
                tx,
                topics,
                retiring: false,
                zombie: false,
            },
        );
        id
    };
    ws.on_upgrade(move |socket| async move {
        serve(socket, &sh, id, rx).await;
        let mut st = sh.lock();
        st.conns.remove(&id);
    })
}

/// What one connection's loop keeps between turns.
struct Turns {
    zombie: bool,
    frozen: bool,
    close_at: Option<Instant>,
    next_ping: Instant,
    last_ping: Option<String>,
}

/// What a turn of the loop decided.
enum Next {
    /// Send this message.
    Send(Message),
    /// Nothing to send.
    Nothing,
    /// End the connection, with a close frame or (`false`) by dropping the socket.
    End(bool),
}

/// Runs one connection until either side ends it: one task reads and writes, so a client
/// frame is read as soon as it arrives whatever the fake is sending.
async fn serve(
    mut socket: WebSocket,
    sh: &Shared,
    id: u64,
    mut rx: mpsc::UnboundedReceiver<ConnCmd>,
) {
    let far = Instant::now() + std::time::Duration::from_secs(86_400 * 365);
    let every = sh.config.ping_every;
    let mut t = Turns {
        zombie: false,
        frozen: false,
        close_at: None,
        next_ping: every.map_or(far, |e| Instant::now() + e),
        last_ping: None,
    };
    loop {
        let next = tokio::select! {
            // A frozen connection reads nothing (not even WebSocket pings) and sends nothing.
            msg = socket.recv(), if !t.frozen => on_client(sh, id, msg),
            cmd = rx.recv() => on_cmd(sh, cmd, &mut t),
            _ = sleep_until(t.close_at.unwrap_or(far)), if t.close_at.is_some() => Next::End(true),
            _ = sleep_until(t.next_ping), if !t.zombie && !t.frozen && t.close_at.is_none() => {
                let unanswered = t.last_ping.as_ref().is_some_and(|p| sh.lock().pings.contains_key(p));
                if unanswered && sh.config.drop_on_unanswered_ping {
                    return;
                }
                let (mid, data) = new_ping(sh, id);
                t.last_ping = Some(mid.clone());
                t.next_ping = Instant::now() + every.unwrap_or_default();
                Next::Send(Message::Text(system_frame(&mid, "ping", &data).into()))
            }
        };
        match next {
            Next::Send(out) => {
                if socket.send(out).await.is_err() {
                    return;
                }
            }
            Next::Nothing => {}
            Next::End(close) => {
                if close {
                    let _ = socket.send(Message::Close(None)).await;
                }
                return;
            }
        }
    }
}

/// A client message: pings answered (a zombie answers too: that is what makes it one), text
/// frames checked, binary ones counted as protocol errors.
fn on_client(sh: &Shared, id: u64, msg: Option<Result<Message, axum::Error>>) -> Next {
    match msg {
        None | Some(Err(_)) | Some(Ok(Message::Close(_))) => Next::End(false),
        Some(Ok(Message::Ping(data))) => Next::Send(Message::Pong(data)),
        Some(Ok(Message::Text(t))) => {
            on_client_text(sh, id, t.as_str());
            Next::Nothing
        }
        Some(Ok(Message::Binary(_))) => {
            sh.lock().protocol_errors += 1;
            Next::Nothing
        }
        Some(Ok(_)) => Next::Nothing,
    }
}

/// A test's command for this connection.
fn on_cmd(sh: &Shared, cmd: Option<ConnCmd>, t: &mut Turns) -> Next {
    match cmd {
        None | Some(ConnCmd::Close) => Next::End(true),
        // Dropping the socket without a close frame: an abrupt end.
        Some(ConnCmd::Reset) => Next::End(false),
        Some(ConnCmd::Zombie) => {
            t.zombie = true;
            Next::Nothing
        }
        Some(ConnCmd::Freeze) => {
            t.frozen = true;
            Next::Nothing
        }
        Some(ConnCmd::Text(text)) | Some(ConnCmd::Raw(text)) if !t.zombie && !t.frozen => {
            Next::Send(Message::Text(text.into()))
        }
        Some(ConnCmd::Text(_)) | Some(ConnCmd::Raw(_)) => Next::Nothing,
        Some(ConnCmd::Disconnect) => {
            t.close_at = Some(Instant::now() + sh.config.disconnect_close_after);
            let n = sh.lock().next();
            let data = json!({"reason": "connection is expired"});
            Next::Send(Message::Text(
                system_frame(&format!("sys-{n}"), "disconnect", &data).into(),
            ))
        }
    }
}

/// Registers a SYSTEM ping for connection `id`: its messageId and data.
fn new_ping(sh: &Shared, id: u64) -> (String, Value) {
    let mut st = sh.lock();
    let n = st.next();
    let mid = format!("ping-{n}");
    let data = json!({"opaque": format!("opaque-{n}-{:08x}", rand::random::<u32>())});
    st.pings.insert(mid.clone(), (id, data.to_string()));
    (mid, data)
}

/// A client frame: a ping's echo or a push's ACK; anything else is a protocol error.
fn on_client_text(sh: &Shared, conn: u64, text: &str) {
    let mut st = sh.lock();
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        st.protocol_errors += 1;
        return;
    };
    let message_id = v
        .pointer("/headers/messageId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some((_, data)) = st.pings.remove(&message_id) {
        if v["code"] == 200 && v["data"].as_str() == Some(data.as_str()) {
            st.ping_replies += 1;
        } else {
            st.bad_ping_replies += 1;
        }
        return;
    }
    let inflight = st.inflight.remove(&message_id);
    let data_is_string = v["data"].is_string();
    let data = v["data"]
        .as_str()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null);
    let code = v["code"].as_i64();
    st.acks.push(AckRecord {
        message_id,
        known: inflight.is_some(),
        code,
        data_is_string,
        data: data.clone(),
        connection: conn,
        after: inflight.as_ref().map(|f| f.sent_at.elapsed()),
    });
    // A card callback's answer updates the card (spec §4.7 B).
    if let Some(f) = inflight.filter(|f| f.topic == CARD_CALLBACK_TOPIC && code == Some(200))
        && let Some(map) = data
            .pointer("/response/cardData/cardParamMap")
            .and_then(Value::as_object)
        && let Some(card) = st.cards.get_mut(&f.key)
    {
        card.params.extend(map.clone());
    }
}

/// Duplicate mode (spec §7.6): a robot message not ACKed within `after` is pushed again with
/// the same `msgId` and a new `messageId`, once.
pub(crate) async fn repush_watcher(sh: Arc<Shared>, after: std::time::Duration) {
    let mut tick = tokio::time::interval((after / 4).max(std::time::Duration::from_millis(10)));
    loop {
        tick.tick().await;
        let mut st = sh.lock();
        let due: Vec<(String, String, String)> = st
            .inflight
            .iter_mut()
            .filter(|(_, f)| !f.repushed && f.topic == ROBOT_TOPIC && f.sent_at.elapsed() >= after)
            .map(|(_, f)| {
                f.repushed = true;
                (f.topic.clone(), f.key.clone(), f.data.clone())
            })
            .collect();
        for (topic, key, data) in due {
            st.dispatch(&topic, &key, data, true);
        }
    }
}
