//! One socket's life (§1.3 steps 2–6): Hello, Identify or Resume, heartbeats with the last `s`,
//! dispatches handed over in order, and the reason the socket ended.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_util::sync::CancellationToken;

use super::{Cursor, Delivery, Gateway, Inbound, LinkState, Start};
use crate::client::BotIdentity;
use crate::error::{Call, Error};
use crate::event;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;
type Sink = futures_util::stream::SplitSink<Socket, Message>;
type Stream = futures_util::stream::SplitStream<Socket>;

/// Why a socket ended.
pub(super) enum End {
    /// Cancelled, or the receiver is gone.
    Stopped,
    /// The server asked for a new socket (op 7, op 9).
    Reconnect(Start),
    /// It failed; the close-code table decides what next.
    Failed(Error),
}

/// The fewest milliseconds between heartbeats we accept from a Hello (a hostile 0 would spin).
const MIN_HEARTBEAT: Duration = Duration::from_millis(20);
/// The most we accept (a hostile huge value would overflow the clock; the doc's example is 45 s).
const MAX_HEARTBEAT: Duration = Duration::from_secs(600);

/// One frame, read leniently: `op` is required, the rest is optional (§1.3 frame shape).
struct Frame {
    op: i64,
    d: Value,
    s: Option<u64>,
    t: Option<String>,
    id: Option<String>,
}

fn read_frame(text: &str) -> Option<Frame> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    Some(Frame {
        op: v.get("op")?.as_i64()?,
        s: v.get("s").and_then(Value::as_u64),
        t: v.get("t").and_then(Value::as_str).map(str::to_owned),
        id: v.get("id").and_then(Value::as_str).map(str::to_owned),
        d: v.get_mut("d").map(Value::take).unwrap_or(Value::Null),
    })
}

impl Gateway {
    /// Fetches the URL, dials, and runs one socket. `reached` is set once READY/RESUMED arrives.
    pub(super) async fn session(
        &self,
        start: Start,
        inbound: &mpsc::Sender<Inbound>,
        cancel: &CancellationToken,
        reached: &mut bool,
    ) -> End {
        let resume = match start {
            Start::Resume => self.committed(),
            Start::Identify => None,
        };
        let info = match self.client.gateway_info().await {
            Ok(i) => i,
            Err(e) => return End::Failed(e),
        };
        if resume.is_none() && info.remaining == Some(0) {
            return End::Failed(Error::SessionLimit {
                reset_after: info.reset_after,
            });
        }
        let socket = match dial(&info.url, self.options.max_frame_bytes).await {
            Ok(s) => s,
            Err(e) => return End::Failed(e),
        };
        self.status.send_modify(|s| s.sockets += 1);
        match self.drive(socket, resume, inbound, cancel, reached).await {
            Ok(end) => end,
            Err(e) => End::Failed(e),
        }
    }

    /// Hello, then Identify/Resume, then the loop.
    async fn drive(
        &self,
        socket: Socket,
        resume: Option<Cursor>,
        inbound: &mpsc::Sender<Inbound>,
        cancel: &CancellationToken,
        reached: &mut bool,
    ) -> Result<End, Error> {
        let (mut sink, mut stream) = socket.split();
        let interval = self.open(&mut sink, &mut stream, resume.as_ref()).await?;
        let mut st = Loop {
            session_id: resume
                .as_ref()
                .map(|c| c.session_id.clone())
                .unwrap_or_default(),
            last_s: resume.as_ref().map(|c| c.seq),
            held: None,
            awaiting_ack: false,
        };
        let mut next_beat = Instant::now() + interval;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => {
                    let _ = sink.send(Message::Close(None)).await;
                    return Ok(End::Stopped);
                }
                _ = sleep_until(next_beat) => {
                    // The previous beat was never answered: the link is a zombie (§1.3 step 5).
                    // While an item is held the socket is unread on purpose, so an ACK sitting
                    // in it proves nothing either way; beats still go out to keep the link.
                    if st.awaiting_ack && st.held.is_none() {
                        return Err(Error::HeartbeatLost(interval));
                    }
                    heartbeat(&mut sink, st.last_s).await?;
                    st.awaiting_ack = true;
                    next_beat = Instant::now() + interval;
                }
                permit = inbound.reserve(), if st.held.is_some() => match (permit, st.held.take()) {
                    (Ok(p), Some(item)) => p.send(item),
                    _ => return Ok(End::Stopped),
                },
                msg = stream.next(), if st.held.is_none() => {
                    if let Some(end) = self.on_message(msg, &mut st, &mut sink, inbound, reached).await? {
                        return Ok(end);
                    }
                }
            }
        }
    }

    /// Waits for Hello and answers it with Resume (a cursor) or Identify; returns the interval.
    async fn open(
        &self,
        sink: &mut Sink,
        stream: &mut Stream,
        resume: Option<&Cursor>,
    ) -> Result<Duration, Error> {
        let interval = match tokio::time::timeout(self.options.hello_timeout, stream.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => hello_interval(&t)?,
            Ok(Some(Ok(Message::Close(f)))) => return Err(closed(f.map(|f| u16::from(f.code)))),
            Ok(_) => return Err(closed(None)),
            Err(_) => return Err(Error::HeartbeatLost(self.options.hello_timeout)),
        };
        let token = self.client.token().await?;
        // botgo sends Resume's token without the prefix; botpy, nonebot and the Tencent plugin
        // include it (§1.3 step 6): included in both.
        let auth = format!("QQBot {}", token.expose());
        let first = match resume {
            Some(c) => {
                self.status.send_modify(|s| s.resumes += 1);
                json!({"op": 6, "d": {"token": auth, "session_id": c.session_id, "seq": c.seq}})
            }
            None => {
                self.status.send_modify(|s| s.identifies += 1);
                json!({"op": 2, "d": {"token": auth, "intents": self.options.intents,
                    "shard": [0, 1], "properties": {}}})
            }
        };
        sink.send(Message::text(first.to_string()))
            .await
            .map_err(ws_err)?;
        Ok(interval)
    }

    /// One read from the socket; `Some` when it ends the socket's life.
    async fn on_message(
        &self,
        msg: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
        st: &mut Loop,
        sink: &mut Sink,
        inbound: &mpsc::Sender<Inbound>,
        reached: &mut bool,
    ) -> Result<Option<End>, Error> {
        let text = match msg {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(f))) => return Err(closed(f.map(|f| u16::from(f.code)))),
            Some(Ok(_)) => return Ok(None),
            Some(Err(e)) => return Err(stream_err(e, self.options.max_frame_bytes)),
            None => return Err(closed(None)),
        };
        self.status
            .send_modify(|s| s.last_evidence = Some(Instant::now()));
        let Some(frame) = read_frame(&text) else {
            tracing::warn!(
                bytes = text.len(),
                "qq gateway: ignoring an unreadable frame"
            );
            return Ok(None);
        };
        match frame.op {
            0 => {
                let item = self.dispatch(st, frame, reached);
                if let Some(item) = item
                    && !st.offer(inbound, item)
                {
                    return Ok(Some(End::Stopped));
                }
            }
            // The server asks for a beat now.
            1 => heartbeat(sink, st.last_s).await?,
            7 => return Ok(Some(End::Reconnect(Start::Resume))),
            // `d` true: the session may be resumed; false: a new token and Identify.
            9 if frame.d.as_bool() == Some(true) => return Ok(Some(End::Reconnect(Start::Resume))),
            9 => {
                self.client.drop_current_token().await;
                return Ok(Some(End::Reconnect(Start::Identify)));
            }
            11 => st.awaiting_ack = false,
            _ => {}
        }
        Ok(None)
    }

    /// Turns a dispatch into what the caller gets; READY/RESUMED also mark the link connected.
    fn dispatch(&self, st: &mut Loop, frame: Frame, reached: &mut bool) -> Option<Inbound> {
        if let Some(s) = frame.s {
            st.last_s = Some(st.last_s.map_or(s, |l| l.max(s)));
        }
        let kind = frame.t.unwrap_or_default();
        let seq = frame.s.or(st.last_s).unwrap_or(0);
        match kind.as_str() {
            "READY" | "RESUMED" => {
                let resumed = kind == "RESUMED";
                if let Some(sid) = frame.d.get("session_id").and_then(Value::as_str) {
                    st.session_id = sid.to_owned();
                }
                let cursor = Cursor {
                    session_id: st.session_id.clone(),
                    seq,
                };
                if !resumed {
                    // A new session has nothing before READY: resuming from here loses nothing.
                    self.commit(cursor.clone());
                }
                *reached = true;
                self.status.send_modify(|s| s.state = LinkState::Connected);
                let bot = frame
                    .d
                    .get("user")
                    .and_then(|u| serde_json::from_value::<BotIdentity>(u.clone()).ok());
                Some(Inbound::Ready {
                    bot,
                    cursor,
                    resumed,
                })
            }
            _ => Some(Inbound::Event(Delivery {
                cursor: Cursor {
                    session_id: st.session_id.clone(),
                    seq,
                },
                event: event::parse(&kind, &frame.d),
                kind,
                frame_id: frame.id,
            })),
        }
    }
}

/// The socket loop's state.
struct Loop {
    session_id: String,
    last_s: Option<u64>,
    /// An item the full queue could not take: the socket is not read until it is handed over.
    held: Option<Inbound>,
    /// A heartbeat went out and its ACK has not come.
    awaiting_ack: bool,
}

impl Loop {
    /// Hands `item` over or holds it; false when the receiver is gone.
    fn offer(&mut self, inbound: &mpsc::Sender<Inbound>, item: Inbound) -> bool {
        match inbound.try_send(item) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(item)) => {
                self.held = Some(item);
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// Op 1 with the last `s` received (`null` before any).
async fn heartbeat(sink: &mut Sink, last_s: Option<u64>) -> Result<(), Error> {
    let beat = json!({"op": 1, "d": last_s});
    sink.send(Message::text(beat.to_string()))
        .await
        .map_err(ws_err)
}

fn hello_interval(text: &str) -> Result<Duration, Error> {
    let frame = read_frame(text).filter(|f| f.op == 10);
    let ms = frame.and_then(|f| f.d.get("heartbeat_interval").and_then(Value::as_u64));
    let Some(ms) = ms else {
        return Err(Error::Malformed {
            call: Call::Socket,
            detail: "first frame is not Hello".into(),
        });
    };
    Ok(Duration::from_millis(ms).clamp(MIN_HEARTBEAT, MAX_HEARTBEAT))
}

fn closed(code: Option<u16>) -> Error {
    Error::GatewayClosed {
        code: code.unwrap_or(0),
    }
}

/// A read error; a frame over the size limit is [`Error::TooLarge`], which starts a new session
/// rather than resuming into the same frame again.
fn stream_err(e: tokio_tungstenite::tungstenite::Error, limit: usize) -> Error {
    match e {
        tokio_tungstenite::tungstenite::Error::Capacity(_) => Error::TooLarge {
            call: Call::Socket,
            limit: limit as u64,
        },
        e => ws_err(e),
    }
}

fn ws_err(e: tokio_tungstenite::tungstenite::Error) -> Error {
    Error::Network {
        call: Call::Socket,
        detail: e.to_string(),
    }
}

/// Dials the gateway URL with frame-size limits.
async fn dial(url: &str, max_frame_bytes: usize) -> Result<Socket, Error> {
    // reqwest may not have installed a process-wide provider; wss:// needs one.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_frame_bytes))
        .max_frame_size(Some(max_frame_bytes));
    match tokio_tungstenite::connect_async_with_config(url, Some(config), false).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(Error::Api {
            call: Call::Socket,
            http_status: resp.status().as_u16(),
            code: 0,
            message: String::new(),
            retry_after: None,
        }),
        Err(e) => Err(ws_err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_leniently() {
        assert!(read_frame("not json").is_none());
        assert!(read_frame(r#"{"op":"x"}"#).is_none());
        let f = read_frame(r#"{"op":0,"s":3,"t":"X","id":"e","d":{"a":1}}"#).unwrap();
        assert_eq!(
            (f.op, f.s, f.t.as_deref(), f.id.as_deref()),
            (0, Some(3), Some("X"), Some("e"))
        );
        assert_eq!(
            hello_interval(r#"{"op":10,"d":{"heartbeat_interval":0}}"#).unwrap(),
            MIN_HEARTBEAT
        );
        assert!(hello_interval(r#"{"op":0,"d":{}}"#).is_err());
        let huge = format!(r#"{{"op":10,"d":{{"heartbeat_interval":{}}}}}"#, u64::MAX);
        assert_eq!(hello_interval(&huge).unwrap(), MAX_HEARTBEAT);
    }
}
