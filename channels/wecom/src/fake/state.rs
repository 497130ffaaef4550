//! The fake's memory: connections, callbacks and their reply handles, bubbles, sends, uploads,
//! hosted media, knobs, and the records tests read.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::FakeConfig;

/// What a connection's writer is told to do.
#[derive(Debug)]
pub(crate) enum Ctl {
    /// Write a text frame.
    Text(String),
    /// Write a close frame with this code, then end.
    Close(u16),
    /// End without a close frame (an abrupt reset as the peer sees it).
    Drop,
}

/// One open socket.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) tx: mpsc::UnboundedSender<Ctl>,
    pub(crate) subscribed: bool,
}

/// Which reply command a pushed callback's `req_id` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    Message,
    Welcome,
    CardUpdate,
    Nothing,
}

/// A pushed callback's handle, bound to the socket it went out on: a reply on another socket
/// gets `846605` (whether old `req_id`s survive a reconnect is unconfirmed, §4.2: the fake
/// takes the strict side).
#[derive(Debug, Clone)]
pub(crate) struct Handle {
    pub(crate) takes: Takes,
    pub(crate) conn: u64,
    pub(crate) at: Instant,
    pub(crate) task_id: Option<String>,
}

/// One stream bubble, as a user would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bubble {
    /// The callback's `req_id`.
    pub req_id: String,
    /// `stream.id`.
    pub stream_id: String,
    /// What the bubble shows now (every frame replaces it).
    pub content: String,
    /// Frames accepted.
    pub frames: usize,
    /// A finish frame was accepted.
    pub finished: bool,
    /// Finished with blank text: the "thinking" bubble spins for ever (a test failure).
    pub spinning: bool,
    /// Images on the finish frame.
    pub images: usize,
}

/// A command frame the fake received and what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameRecord {
    /// Which socket (1-based, in accept order).
    pub conn: u64,
    /// `cmd`.
    pub cmd: String,
    /// `headers.req_id`.
    pub req_id: String,
    /// `body` (absent: `None`).
    pub body: Option<Value>,
    /// The answer's errcode; `None` if no answer was sent.
    pub errcode: Option<i64>,
    /// When it arrived.
    pub at: Instant,
}

/// A message that reached a chat (accepted reply, welcome or proactive send).
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// `aibot_send_msg` or a reply command.
    pub cmd: String,
    /// The chat (send) or the callback's `req_id` (reply).
    pub to: String,
    /// The body as accepted.
    pub body: Value,
}

/// A media item being uploaded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Upload {
    pub(crate) kind: String,
    pub(crate) total_size: u64,
    pub(crate) total_chunks: usize,
    pub(crate) md5: Option<String>,
    pub(crate) chunks: HashMap<usize, Vec<u8>>,
}

/// A file served on the media host.
#[derive(Debug, Clone)]
pub(crate) struct Hosted {
    pub(crate) body: Vec<u8>,
    pub(crate) disposition: Option<String>,
    pub(crate) expires: Instant,
}

/// An injected answer for the next frame of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this errcode instead.
    Code(i64),
    /// Never answer.
    NoAck,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) counter: u64,
    pub(crate) conns: HashMap<u64, Conn>,
    pub(crate) accepted: u64,
    pub(crate) current: Option<u64>,
    pub(crate) handles: HashMap<String, Handle>,
    pub(crate) bubbles: Vec<Bubble>,
    pub(crate) chats: HashSet<String>,
    pub(crate) groups: HashSet<String>,
    pub(crate) send_times: HashMap<String, VecDeque<Instant>>,
    pub(crate) uploads: HashMap<String, Upload>,
    pub(crate) media_ids: HashMap<String, Instant>,
    pub(crate) hosted: HashMap<String, Hosted>,
    pub(crate) media_served: usize,
    pub(crate) task_ids: HashSet<String>,
    pub(crate) frames: Vec<FrameRecord>,
    pub(crate) sent: Vec<Sent>,
    pub(crate) pushes: Vec<Value>,
    pub(crate) dropped_pushes: usize,
    pub(crate) unanswered: HashMap<String, usize>,
    pub(crate) pipelined: usize,
    pub(crate) pings: usize,
    pub(crate) ping_bodies: usize,
    pub(crate) chunks_in_flight: usize,
    pub(crate) faults: HashMap<String, VecDeque<Fault>>,
    pub(crate) subscribe_faults: VecDeque<i64>,
    pub(crate) silent_pings: bool,
    pub(crate) ack_delay: std::time::Duration,
    pub(crate) refuse_groups: bool,
}

impl State {
    pub(crate) fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }
}

/// State plus what every handler needs; shared by the server tasks and the test handle.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: FakeConfig,
    pub(crate) base_url: String,
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    pub(crate) fn new(config: FakeConfig, base_url: String) -> Self {
        let state = State {
            chats: config.known_chats.iter().cloned().collect(),
            ..State::default()
        };
        Self {
            config,
            base_url,
            state: Mutex::new(state),
            changed: Notify::new(),
        }
    }

    /// The state; every lock is also a change tests may wait for (see `touch`).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes whoever waits for a change.
    pub(crate) fn touch(&self) {
        self.changed.notify_waiters();
    }

    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }
}
