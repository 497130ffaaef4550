//! The fake's state: tokens, sessions with their replay buffers, reply triggers, uploads,
//! faults, and everything recorded for assertions. One mutex; no await while it is held.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::records::{InteractionAck, Rejected, SentRecord, UploadRecord};
use super::{FakeConfig, RateLimitStyle};

/// What a test tells the live socket to do.
#[derive(Debug)]
pub(crate) enum Ctl {
    /// Write this frame.
    Frame(Value),
    /// Close with this code.
    Close(u16),
    /// Drop the TCP connection without a close frame.
    Drop,
}

/// Which kind of chat a trigger, upload or send belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    User(String),
    Group(String),
}

impl Scope {
    pub(crate) fn is_group(&self) -> bool {
        matches!(self, Scope::Group(_))
    }

    /// `user:<openid>` or `group:<openid>`, as the records name a destination.
    pub(crate) fn name(&self) -> String {
        match self {
            Scope::User(id) => format!("user:{id}"),
            Scope::Group(id) => format!("group:{id}"),
        }
    }
}

/// A `msg_id` or `event_id` a reply may carry.
#[derive(Debug)]
pub(crate) struct TriggerRec {
    pub scope: Scope,
    pub at: Instant,
    pub replies: u32,
    pub seqs: HashSet<u64>,
    pub is_event: bool,
}

/// A gateway session: its sequence and every dispatch, for Resume to replay.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub s: u64,
    pub buffer: Vec<(u64, Value)>,
    pub valid: bool,
}

/// A chunked upload in progress (§8.8); its steps are in `chunked`.
#[derive(Debug)]
pub(crate) struct Chunked {
    pub scope: Scope,
    pub file_type: i64,
    pub size: usize,
    pub md5: String,
    pub block: usize,
    pub blocks: Vec<Option<Vec<u8>>>,
    pub finished: Vec<bool>,
}

/// A minted access token.
#[derive(Debug)]
pub(crate) struct TokenRec {
    pub value: String,
    pub expires: Instant,
}

#[derive(Debug)]
pub(crate) struct State {
    pub cfg: FakeConfig,
    pub base_url: String,
    next: u64,
    pub tokens: Vec<TokenRec>,
    pub revoked: HashSet<String>,
    pub sessions: HashMap<String, Session>,
    /// The newest session: dispatches go there.
    pub current: Option<String>,
    /// Dispatches pushed before any session existed, sent after the first READY.
    pub pending: Vec<(String, Value, String)>,
    /// The live socket: its id, session and control channel.
    pub live: Option<(u64, String, mpsc::UnboundedSender<Ctl>)>,
    pub triggers: HashMap<String, TriggerRec>,
    /// Issued `file_info`s: the chat kind they are for and when they expire.
    pub files: HashMap<String, (Scope, Instant)>,
    pub media: HashMap<String, Vec<u8>>,
    /// Chunked uploads in progress.
    pub chunked: HashMap<String, Chunked>,
    // Faults.
    pub rate_limit_next: u32,
    pub rate_style: RateLimitStyle,
    pub typing_fails: bool,
    pub session_starts_left: Option<u64>,
    pub heartbeat_acks: bool,
    pub part_busy: u32,
    pub upload_quota_used: bool,
    // Records.
    pub sent: Vec<SentRecord>,
    pub rejected: Vec<Rejected>,
    pub uploads: Vec<UploadRecord>,
    pub interaction_acks: Vec<InteractionAck>,
    pub heartbeats: Vec<Option<u64>>,
    pub identifies: Vec<Value>,
    pub resumes: Vec<(String, u64)>,
    pub server_closes: Vec<u16>,
    pub connections: u64,
    pub token_requests: u64,
}

impl State {
    pub(crate) fn new(cfg: FakeConfig, base_url: String) -> Self {
        Self {
            cfg,
            base_url,
            next: 0,
            tokens: Vec::new(),
            revoked: HashSet::new(),
            sessions: HashMap::new(),
            current: None,
            pending: Vec::new(),
            live: None,
            triggers: HashMap::new(),
            files: HashMap::new(),
            media: HashMap::new(),
            chunked: HashMap::new(),
            rate_limit_next: 0,
            rate_style: RateLimitStyle::Http429,
            typing_fails: false,
            session_starts_left: None,
            heartbeat_acks: true,
            part_busy: 0,
            upload_quota_used: false,
            sent: Vec::new(),
            rejected: Vec::new(),
            uploads: Vec::new(),
            interaction_acks: Vec::new(),
            heartbeats: Vec::new(),
            identifies: Vec::new(),
            resumes: Vec::new(),
            server_closes: Vec::new(),
            connections: 0,
            token_requests: 0,
        }
    }

    /// A fresh number for ids.
    pub(crate) fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Whether `auth` (the whole `Authorization` value) names a live token.
    pub(crate) fn token_ok(&self, auth: &str) -> bool {
        let Some(tok) = auth.strip_prefix("QQBot ") else {
            return false;
        };
        let now = Instant::now();
        !self.revoked.contains(tok)
            && self
                .tokens
                .iter()
                .any(|t| t.value == tok && now < t.expires)
    }

    /// The token to hand out: the same one until its last 60 s, then a new one (§1.2).
    pub(crate) fn issue_token(&mut self) -> (String, Duration) {
        let now = Instant::now();
        let reuse = self.tokens.last().filter(|t| {
            !self.revoked.contains(&t.value) && now + Duration::from_secs(60) < t.expires
        });
        if let Some(t) = reuse {
            return (t.value.clone(), t.expires - now);
        }
        let value = format!("FAKE_TOKEN_{}", self.next());
        let lifetime = self.cfg.token_lifetime;
        self.tokens.push(TokenRec {
            value: value.clone(),
            expires: now + lifetime,
        });
        (value, lifetime)
    }

    /// Starts a session and returns its id.
    pub(crate) fn new_session(&mut self) -> String {
        let id = format!("fake-session-{}", self.next());
        self.sessions.insert(
            id.clone(),
            Session {
                valid: true,
                ..Session::default()
            },
        );
        self.current = Some(id.clone());
        id
    }

    /// Puts a dispatch into the current session (sending it if its socket is live), or holds it
    /// until the first session exists.
    pub(crate) fn dispatch(&mut self, t: &str, d: Value, frame_id: String) {
        let Some(sid) = self.current.clone() else {
            self.pending.push((t.to_owned(), d, frame_id));
            return;
        };
        let Some(session) = self.sessions.get_mut(&sid) else {
            return;
        };
        session.s += 1;
        let frame = json!({"op": 0, "s": session.s, "t": t, "d": d, "id": frame_id});
        session.buffer.push((session.s, frame.clone()));
        if let Some((_, live_sid, tx)) = &self.live
            && *live_sid == sid
        {
            let _ = tx.send(Ctl::Frame(frame));
        }
    }

    /// Sends a control message to the live socket; false when none is live.
    pub(crate) fn control(&self, ctl: Ctl) -> bool {
        self.live
            .as_ref()
            .is_some_and(|(_, _, tx)| tx.send(ctl).is_ok())
    }

    /// Registers an inbound message or event id as a reply trigger.
    pub(crate) fn add_trigger(&mut self, id: &str, scope: Scope, is_event: bool) {
        let rec = TriggerRec {
            scope,
            at: Instant::now(),
            replies: 0,
            seqs: HashSet::new(),
            is_event,
        };
        self.triggers.insert(id.to_owned(), rec);
    }
}

/// The state behind one lock, shared by the handlers and the test handle.
#[derive(Debug)]
pub(crate) struct Shared(Mutex<State>);

impl Shared {
    pub(crate) fn new(cfg: FakeConfig, base_url: String) -> Arc<Self> {
        Arc::new(Shared(Mutex::new(State::new(cfg, base_url))))
    }

    /// The state; a test that panicked while holding it does not poison the others.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
