//! One socket's life: dial, subscribe, then ping, read, write and deliver until it ends.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use super::command::Response;
use super::{Connection, LinkState, lock};
use crate::delivery::Delivery;
use crate::error::Error;
use crate::frame::{self, ServerFrame, cmd};
use crate::message::{CallbackKind, Event};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;
type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Response>>>>;

/// Callbacks kept in memory while the account task is behind, before reading pauses. At
/// most 1 MiB each; the platform lets a user have 3 messages in progress (§2.3), so a backlog
/// this long means the task is stuck, not busy.
const BACKLOG_MAX: usize = 1024;

/// The subscribed socket, as commands see it: where to write and where answers are awaited.
/// Dropped when the socket ends, which fails every waiting command at once (§1.6).
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) out: mpsc::UnboundedSender<String>,
    pub(crate) pending: Pending,
}

/// How a session ended without a pre-subscribe error.
pub(crate) enum SessionEnd {
    /// The caller cancelled.
    Cancelled,
    /// The caller dropped the delivery receiver.
    ReceiverGone,
    /// It was subscribed, then ended with this error.
    Subscribed(Error),
}

/// Dials `url` with the inbound frame cap.
pub(crate) async fn dial(url: &str, max_frame_bytes: usize) -> Result<Socket, Error> {
    if !(url.starts_with("ws://") || url.starts_with("wss://")) {
        return Err(Error::BadUrl {
            url: url.to_owned(),
            detail: "not a ws:// or wss:// URL".into(),
        });
    }
    // reqwest may have left no process-wide provider; the TLS config of the socket needs one.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_frame_bytes))
        .max_frame_size(Some(max_frame_bytes));
    match tokio_tungstenite::connect_async_with_config(url, Some(config), true).await {
        Ok((socket, _)) => Ok(socket),
        Err(tungstenite::Error::Url(e)) => Err(Error::BadUrl {
            url: url.to_owned(),
            detail: e.to_string(),
        }),
        Err(e) => Err(Error::Network(scv_net::transport(&e))),
    }
}

/// Sends `aibot_subscribe` and waits for its answer, nothing else in between (§1.3).
/// Callbacks cannot come before it: the server pushes only to subscribed sockets.
pub(crate) async fn subscribe(socket: &mut Socket, conn: &Connection) -> Result<(), Error> {
    let creds = &conn.inner.creds;
    let req_id = frame::new_req_id(cmd::SUBSCRIBE);
    let body = json!({"bot_id": creds.bot_id, "secret": creds.secret.expose()});
    let text = frame::request(cmd::SUBSCRIBE, &req_id, Some(body));
    socket
        .send(Message::text(text))
        .await
        .map_err(|e| Error::Network(scv_net::transport(&e)))?;
    let timeout = conn.inner.options.subscribe_timeout;
    let answer = tokio::time::timeout(timeout, async {
        while let Some(msg) = socket.next().await {
            let text = match msg {
                Ok(Message::Text(t)) => t,
                Ok(Message::Close(_)) => return Err(Error::Closed),
                Ok(_) => continue,
                Err(e) => return Err(Error::Network(scv_net::transport(&e))),
            };
            if let Ok(ServerFrame::Response {
                req_id: r,
                errcode,
                errmsg,
                ..
            }) = frame::parse(&text)
                && r == req_id
            {
                return Ok((errcode, errmsg));
            }
        }
        Err(Error::Closed)
    })
    .await
    .map_err(|_| Error::AckTimeout {
        cmd: cmd::SUBSCRIBE,
        after: timeout,
    })??;
    match answer {
        (0, _) => Ok(()),
        (code, errmsg) => {
            let _ = socket.close(None).await;
            Err(Error::Platform {
                cmd: cmd::SUBSCRIBE,
                code,
                errmsg,
            })
        }
    }
}

/// Dials and subscribes. A server that takes the TCP connection and never completes the
/// upgrade must not hold the account for ever: the subscribe wait bounds the dial too.
async fn open(conn: &Connection) -> Result<Socket, Error> {
    let opts = &conn.inner.options;
    let wait = opts.subscribe_timeout;
    let mut socket = tokio::time::timeout(wait, dial(&opts.url, opts.max_frame_bytes))
        .await
        .map_err(|_| Error::Network(format!("no WebSocket handshake within {wait:?}")))??;
    conn.inner.status.send_modify(|s| s.dials += 1);
    subscribe(&mut socket, conn).await?;
    Ok(socket)
}

/// Dials, subscribes, and runs the socket.
pub(crate) async fn run(
    conn: &Connection,
    deliveries: &mpsc::Sender<Delivery>,
    cancel: &CancellationToken,
) -> Result<SessionEnd, Error> {
    let socket = tokio::select! {
        _ = cancel.cancelled() => return Ok(SessionEnd::Cancelled),
        s = open(conn) => s?,
    };
    let (out, out_rx) = mpsc::unbounded_channel();
    let pending: Pending = Arc::default();
    *conn.link() = Some(Link {
        out,
        pending: pending.clone(),
    });
    conn.inner.status.send_modify(|s| {
        s.state = LinkState::Connected;
        s.subscribes += 1;
        s.last_evidence = Some(Instant::now());
    });
    let (sink, stream) = socket.split();
    let mut live = Live {
        conn,
        sink,
        pending,
        pings: HashSet::new(),
        backlog: VecDeque::new(),
    };
    let end = live.serve(stream, out_rx, deliveries, cancel).await;
    // Close before anything dials again; waiting commands fail now (their senders drop).
    // Disconnected first, so a command that finds no link waits for the next socket.
    conn.inner
        .status
        .send_modify(|s| s.state = LinkState::Disconnected);
    *conn.link() = None;
    lock(&live.pending).clear();
    let _ = live.sink.close().await;
    hand_over(&mut live.backlog, &end, deliveries, cancel).await;
    Ok(end)
}

/// Hands the backlog's callbacks to the account task after the socket ended (the
/// `disconnected_event` among them): the platform will not send them again. When cancelled,
/// only what fits in the queue at once.
async fn hand_over(
    backlog: &mut VecDeque<Delivery>,
    end: &SessionEnd,
    deliveries: &mpsc::Sender<Delivery>,
    cancel: &CancellationToken,
) {
    if let SessionEnd::Subscribed(_) = end {
        while !backlog.is_empty() {
            tokio::select! {
                _ = cancel.cancelled() => break,
                permit = deliveries.reserve() => match (permit, backlog.pop_front()) {
                    (Ok(permit), Some(d)) => permit.send(d),
                    _ => return,
                },
            }
        }
    }
    while let Some(d) = backlog.pop_front() {
        if deliveries.try_send(d).is_err() {
            return;
        }
    }
}

/// A subscribed socket's state.
struct Live<'a> {
    conn: &'a Connection,
    sink: SplitSink<Socket, Message>,
    pending: Pending,
    /// Pings sent and not yet answered.
    pings: HashSet<String>,
    /// Callbacks the full queue could not take yet, in order. The socket is still read (answers
    /// and pongs must get through, or replies time out and the link looks dead, and a redial
    /// would lose what sits unread: nothing is redelivered); only past [`BACKLOG_MAX`] does
    /// reading pause.
    backlog: VecDeque<Delivery>,
}

impl Live<'_> {
    async fn serve(
        &mut self,
        mut stream: SplitStream<Socket>,
        mut out_rx: mpsc::UnboundedReceiver<String>,
        deliveries: &mpsc::Sender<Delivery>,
        cancel: &CancellationToken,
    ) -> SessionEnd {
        let opts = &self.conn.inner.options;
        let mut next_ping = Instant::now() + opts.ping_interval;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return SessionEnd::Cancelled,
                _ = sleep_until(next_ping) => {
                    if let Err(e) = self.ping().await {
                        return SessionEnd::Subscribed(e);
                    }
                    next_ping = Instant::now() + opts.ping_interval;
                }
                Some(text) = out_rx.recv() => {
                    if let Err(e) = self.sink.send(Message::text(text)).await {
                        return SessionEnd::Subscribed(Error::Network(scv_net::transport(&e)));
                    }
                }
                room = deliveries.reserve(), if !self.backlog.is_empty() => match (room, self.backlog.pop_front()) {
                    (Ok(permit), Some(d)) => permit.send(d),
                    _ => return SessionEnd::ReceiverGone,
                },
                msg = stream.next(), if self.backlog.len() < BACKLOG_MAX => {
                    let text = match msg {
                        None | Some(Ok(Message::Close(_))) => return SessionEnd::Subscribed(Error::Closed),
                        Some(Err(e)) => return SessionEnd::Subscribed(Error::Network(scv_net::transport(&e))),
                        Some(Ok(Message::Text(t))) => t,
                        // WS pings are answered by tungstenite; binary frames are not in the
                        // protocol (unconfirmed): alive, nothing to read.
                        Some(Ok(_)) => continue,
                    };
                    if let Some(end) = self.on_text(&text, deliveries) {
                        return end;
                    }
                }
            }
        }
    }

    /// At each tick: dead if the last pings are unanswered, else the next ping (§1.4).
    async fn ping(&mut self) -> Result<(), Error> {
        let missed = self.conn.inner.options.missed_pongs.max(1);
        if self.pings.len() as u32 >= missed {
            return Err(Error::Stalled {
                missed: self.pings.len() as u32,
            });
        }
        let req_id = frame::new_req_id(cmd::PING);
        let text = frame::request(cmd::PING, &req_id, None);
        self.pings.insert(req_id);
        self.sink
            .send(Message::text(text))
            .await
            .map_err(|e| Error::Network(scv_net::transport(&e)))
    }

    fn on_text(&mut self, text: &str, deliveries: &mpsc::Sender<Delivery>) -> Option<SessionEnd> {
        let parsed = frame::parse(text);
        self.conn
            .inner
            .status
            .send_modify(|s| s.last_evidence = Some(Instant::now()));
        match parsed {
            Err(e) => {
                tracing::warn!(error = %e, bytes = text.len(), "ignoring unreadable wecom frame");
                None
            }
            Ok(ServerFrame::Response {
                req_id,
                errcode,
                errmsg,
                body,
            }) => {
                if self.pings.remove(&req_id) {
                    // Any answer proves the link; the count is of pings in a row.
                    self.pings.clear();
                } else if let Some(waiter) = lock(&self.pending).remove(&req_id) {
                    let _ = waiter.send(Response {
                        errcode,
                        errmsg,
                        body,
                    });
                } else {
                    tracing::debug!(
                        errcode,
                        "wecom answer for no waiting command (late or unknown)"
                    );
                }
                None
            }
            Ok(ServerFrame::Callback {
                cmd,
                req_id,
                body,
                raw,
            }) => self.on_callback(Delivery::new(cmd, req_id, body, raw), deliveries),
        }
    }

    /// Hands a callback over (or queues it behind those waiting); a `disconnected_event` ends
    /// the socket for good once it is handed over.
    fn on_callback(
        &mut self,
        d: Delivery,
        deliveries: &mpsc::Sender<Delivery>,
    ) -> Option<SessionEnd> {
        let superseded = matches!(
            d.callback(),
            Ok(c) if c.kind == CallbackKind::Event(Event::Disconnected)
        );
        if !self.backlog.is_empty() {
            // Behind others already waiting: keep the order.
            self.backlog.push_back(d);
        } else {
            match deliveries.try_send(d) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(d)) => self.backlog.push_back(d),
                Err(mpsc::error::TrySendError::Closed(_)) => return Some(SessionEnd::ReceiverGone),
            }
        }
        superseded.then_some(SessionEnd::Subscribed(Error::Superseded))
    }
}
