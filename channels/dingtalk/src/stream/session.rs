//! One socket's life: answer SYSTEM pings, act on `disconnect`, ping at the WebSocket level,
//! watch for silence, hand pushes over, and write the caller's ACKs.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use super::ack::{AckHandle, Delivery};
use super::frame::{Downstream, FrameKind, ack_frame};
use super::{LinkState, LinkStatus, StreamOptions};
use crate::error::Error;
use crate::secret::Secret;

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How a socket ended without an error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The caller cancelled.
    Cancelled,
    /// The caller dropped the delivery receiver.
    ReceiverGone,
    /// Retired after a `disconnect` frame: the server closed it, or the grace ran out.
    Retired,
}

/// What a socket tells the connection.
#[derive(Debug)]
pub(crate) enum Notice {
    /// A `disconnect` frame came: bring a new socket up now (this one keeps reading).
    Retiring(u64),
    /// The socket ended; `saw_frames` says whether it ever proved the link.
    Ended(u64, Result<End, Error>, bool),
}

/// What one socket needs from its connection.
pub(crate) struct Ctx {
    pub id: u64,
    pub options: StreamOptions,
    pub status: watch::Sender<LinkStatus>,
    pub deliveries: mpsc::Sender<Delivery>,
    pub cancel: CancellationToken,
}

/// Dials `url` (it carries the ticket, so it is a [`Secret`]); a refused upgrade is
/// [`Error::Handshake`].
pub(crate) async fn dial(url: &Secret, options: &StreamOptions) -> Result<Socket, Error> {
    // reqwest may have left no process-wide provider; the wss TLS config needs one.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = WebSocketConfig::default()
        .max_message_size(Some(options.max_frame_bytes))
        .max_frame_size(Some(options.max_frame_bytes));
    // No Nagle: ACKs and ping echoes are small frames that must leave at once (an ACK held
    // back behind an unacknowledged segment can wait for the peer's delayed ACK).
    let dial = tokio_tungstenite::connect_async_with_config(url.expose(), Some(config), true);
    match tokio::time::timeout(options.connect_timeout, dial).await {
        Err(_) => Err(Error::WebSocket(format!(
            "no handshake within {:?}",
            options.connect_timeout
        ))),
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(tungstenite::Error::Http(resp))) => Err(Error::Handshake {
            status: resp.status().as_u16(),
        }),
        Ok(Err(e)) => Err(ws_error(e)),
    }
}

/// A WebSocket error in words, never with the URL (it carries the ticket).
fn ws_error(e: tungstenite::Error) -> Error {
    use tungstenite::Error as E;
    Error::WebSocket(match e {
        E::Io(io) => format!("I/O: {}", io.kind()),
        E::Tls(t) => format!("TLS: {t}"),
        E::Capacity(c) => format!("frame too large: {c}"),
        E::Protocol(p) => format!("protocol: {p}"),
        E::Url(_) => "bad endpoint URL".into(),
        E::ConnectionClosed | E::AlreadyClosed => "closed".into(),
        other => format!("{other}").chars().take(80).collect(),
    })
}

/// Runs one socket until it ends; reports its end to `notices` and returns.
pub(crate) async fn run(ctx: Ctx, socket: Socket, notices: mpsc::UnboundedSender<Notice>) {
    let mut saw_frames = false;
    let mut held = None;
    let r = serve(&ctx, socket, &notices, &mut saw_frames, &mut held).await;
    // A push read but not yet handed over when the socket failed: hand it over anyway (its
    // ACK cannot be sent any more, but a robot message is never pushed again, so this copy is
    // the only one). Not when the caller stopped.
    if let Some(d) = held
        && !matches!(r, Ok(End::Cancelled | End::ReceiverGone))
    {
        let _ = ctx.deliveries.send(d).await;
    }
    let _ = notices.send(Notice::Ended(ctx.id, r, saw_frames));
}

/// Timers of one socket.
struct Clock {
    last_frame: Instant,
    next_ping: Instant,
    pong_due: Option<Instant>,
    retire_at: Option<Instant>,
}

impl Clock {
    /// A WebSocket ping went out: a pong is due (the first unanswered one's deadline stays).
    fn pinged(&mut self, o: &StreamOptions) {
        let now = Instant::now();
        self.pong_due.get_or_insert(now + o.pong_timeout);
        self.next_ping = now + o.ping_interval;
    }

    /// Reading resumes after a held push was handed over: the idle and pong windows start
    /// again (what came meanwhile waits unread in the socket).
    fn resumed(&mut self, o: &StreamOptions) {
        let now = Instant::now();
        self.last_frame = now;
        if self.pong_due.is_some() {
            self.pong_due = Some(now + o.pong_timeout);
        }
    }
}

async fn serve(
    ctx: &Ctx,
    socket: Socket,
    notices: &mpsc::UnboundedSender<Notice>,
    saw_frames: &mut bool,
    held: &mut Option<Delivery>,
) -> Result<End, Error> {
    let o = &ctx.options;
    let (mut sink, mut stream) = socket.split();
    let (ack_tx, mut ack_rx) = mpsc::unbounded_channel::<String>();
    let now = Instant::now();
    let mut t = Clock {
        last_frame: now,
        next_ping: now + o.ping_interval,
        pong_due: None,
        retire_at: None,
    };
    // `held`: a push the full queue could not take yet. The socket is not read until it is
    // handed over, so nothing is dropped (a dropped robot message is never re-pushed).
    let far = now + Duration::from_secs(86_400 * 365);
    loop {
        let watching = held.is_none() && t.retire_at.is_none();
        tokio::select! {
            _ = ctx.cancel.cancelled() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ok(End::Cancelled);
            }
            _ = sleep_until(t.retire_at.unwrap_or(far)), if t.retire_at.is_some() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ok(End::Retired);
            }
            // Not while holding (the socket is unread on purpose) nor while retiring (the
            // server sends nothing more on a socket it asked us to leave).
            _ = sleep_until(t.last_frame + o.idle_timeout), if watching => {
                return Err(Error::Idle(o.idle_timeout));
            }
            // Not while holding either: the pong waits unread behind the held push.
            _ = sleep_until(t.pong_due.unwrap_or(far)), if t.pong_due.is_some() && watching => {
                return Err(Error::PongMissing(o.pong_timeout));
            }
            _ = sleep_until(t.next_ping) => {
                sink.send(Message::Ping(Vec::new().into())).await.map_err(ws_error)?;
                t.pinged(o);
            }
            Some(ack) = ack_rx.recv() => {
                sink.send(Message::Text(ack.into())).await.map_err(ws_error)?;
            }
            room = ctx.deliveries.reserve(), if held.is_some() => match (room, held.take()) {
                (Ok(permit), Some(d)) => {
                    permit.send(d);
                    t.resumed(o);
                }
                _ => return Ok(End::ReceiverGone),
            },
            msg = stream.next(), if held.is_none() => {
                let frame = match read(msg, &mut t)? {
                    Read::Frame(f) => f,
                    Read::Skip => continue,
                    Read::End(end) => return Ok(end),
                };
                *saw_frames = true;
                mark_alive(&ctx.status);
                if let Some(d) = on_frame(ctx, frame, &ack_tx, &mut sink, notices, &mut t).await? {
                    *held = match hand_over(ctx, d) {
                        Ok(held) => held,
                        Err(end) => return Ok(end),
                    };
                }
            }
        }
    }
}

/// What one read from the socket gave.
enum Read {
    /// A frame of the protocol.
    Frame(Downstream),
    /// Nothing to act on (pong, WebSocket ping, binary, unreadable text).
    Skip,
    /// The socket ended without an error.
    End(End),
}

/// Sorts one read: a text frame parsed (the idle window restarts), a pong noted, the end.
fn read(msg: Option<Result<Message, tungstenite::Error>>, t: &mut Clock) -> Result<Read, Error> {
    let text = match msg {
        None | Some(Ok(Message::Close(_))) if t.retire_at.is_some() => {
            return Ok(Read::End(End::Retired));
        }
        None | Some(Ok(Message::Close(_))) => return Err(Error::Closed),
        Some(Err(e)) if t.retire_at.is_some() => {
            tracing::debug!(error = %ws_error(e), "retired Stream socket ended");
            return Ok(Read::End(End::Retired));
        }
        Some(Err(e)) => return Err(ws_error(e)),
        Some(Ok(Message::Text(text))) => text,
        Some(Ok(Message::Pong(_))) => {
            t.pong_due = None;
            return Ok(Read::Skip);
        }
        Some(Ok(Message::Binary(_))) => {
            tracing::warn!("dingtalk stream: binary frame ignored (the protocol is text JSON)");
            return Ok(Read::Skip);
        }
        // WebSocket pings are answered by tungstenite; they prove nothing about delivery (a
        // zombie answers them), so the idle window is not reset.
        Some(Ok(_)) => return Ok(Read::Skip),
    };
    let Some(frame) = Downstream::parse(text.as_str()) else {
        tracing::warn!(
            bytes = text.len(),
            "dingtalk stream: unreadable frame ignored"
        );
        return Ok(Read::Skip);
    };
    t.last_frame = Instant::now();
    Ok(Read::Frame(frame))
}

/// Hands a push to the caller; `Ok(Some)` when the queue is full (hold it, stop reading).
fn hand_over(ctx: &Ctx, d: Delivery) -> Result<Option<Delivery>, End> {
    match ctx.deliveries.try_send(d) {
        Ok(()) => Ok(None),
        Err(mpsc::error::TrySendError::Full(d)) => Ok(Some(d)),
        Err(mpsc::error::TrySendError::Closed(_)) => Err(End::ReceiverGone),
    }
}

type Sink = futures_util::stream::SplitSink<Socket, Message>;

/// Handles one frame: SYSTEM frames here, pushes returned for delivery.
async fn on_frame(
    ctx: &Ctx,
    frame: Downstream,
    ack_tx: &mpsc::UnboundedSender<String>,
    sink: &mut Sink,
    notices: &mpsc::UnboundedSender<Notice>,
    t: &mut Clock,
) -> Result<Option<Delivery>, Error> {
    match &frame.kind {
        FrameKind::System => {
            match frame.topic().as_str() {
                // The answer echoes the ping's own data (its opaque), spec §1.7.
                "ping" => {
                    let ack = ack_frame(&frame.message_id(), 200, &frame.data);
                    sink.send(Message::Text(ack.into()))
                        .await
                        .map_err(ws_error)?;
                }
                "disconnect" if t.retire_at.is_none() => {
                    tracing::info!(
                        socket = ctx.id,
                        "dingtalk stream: disconnect frame; opening a new connection"
                    );
                    t.retire_at = Some(Instant::now() + ctx.options.disconnect_grace);
                    let _ = notices.send(Notice::Retiring(ctx.id));
                }
                other => tracing::debug!(topic = %other, "dingtalk stream: SYSTEM frame"),
            }
            Ok(None)
        }
        FrameKind::Other(kind) => {
            tracing::info!(kind = %kind, "dingtalk stream: frame of an unknown type ignored");
            Ok(None)
        }
        FrameKind::Event | FrameKind::Callback => {
            let message_id = frame.message_id();
            let topic = frame.topic();
            let ack = AckHandle::new(
                message_id.clone(),
                frame.kind.clone(),
                topic.clone(),
                frame.header("eventType"),
                ack_tx.clone(),
            );
            Ok(Some(Delivery {
                kind: frame.kind,
                topic,
                message_id,
                connection: ctx.id,
                data: frame.data,
                ack,
            }))
        }
    }
}

fn mark_alive(status: &watch::Sender<LinkStatus>) {
    status.send_modify(|s| {
        s.state = LinkState::Connected;
        s.last_frame = Some(Instant::now());
    });
}
