//! The fake's state: the update queue, chats and their messages, files, callbacks, records.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::FakeConfig;
use super::flood::Flood;
use super::records::{ChatActionRecord, DraftFrame, SentFile, SentText};

/// What the next call of a method gets instead of its answer, as from a gateway in front of
/// the platform.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The platform's error JSON with this status and description.
    Error(u16, String),
    /// This status and these bytes exactly (bad UTF-8, an HTML page, a truncated body).
    Raw(u16, Bytes),
    /// No answer at all until the server shuts down.
    Hang,
}

/// One queued update.
pub(crate) struct Queued {
    pub id: i64,
    /// The update's kind key (`message`, `callback_query`, ...).
    pub kind: String,
    /// The whole update JSON (with `update_id`, unless a test left it out on purpose).
    pub body: Value,
    pub at: Instant,
}

/// One chat the bot can talk to.
pub(crate) struct ChatState {
    pub chat: Value,
    pub blocked: bool,
    pub migrate_to: Option<i64>,
    pub next_message_id: i64,
    /// message id → (text, reply_markup) as the chat shows it now.
    pub messages: HashMap<i64, (String, Option<Value>)>,
}

impl ChatState {
    pub fn is_private(&self) -> bool {
        self.chat["type"] == "private"
    }

    pub fn is_group(&self) -> bool {
        matches!(self.chat["type"].as_str(), Some("group" | "supergroup"))
    }
}

/// A stored file: uploaded, pushed with a message, or declared by size only (too big).
pub(crate) struct StoredFile {
    pub unique_id: String,
    pub size: u64,
    pub bytes: Option<Bytes>,
    pub path: String,
    /// When `getFile` last gave out the download link (it works for an hour from then).
    pub link_issued: Option<Instant>,
}

/// A button press waiting for its answer.
pub(crate) struct Pressed {
    pub at: Instant,
    pub answered: bool,
}

pub(crate) struct State {
    pub config: FakeConfig,
    pub base_url: String,
    pub next_update_id: i64,
    pub queue: VecDeque<Queued>,
    /// The sticky `allowed_updates`; `None` = every kind but the three opt-in ones.
    pub allowed: Option<Vec<String>>,
    /// Bumped by every `getUpdates`; a held poll whose number is no longer current lost to a
    /// newer one (409).
    pub poll_generation: u64,
    pub polls_in_flight: usize,
    pub poll_requests: usize,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    /// Where deliveries really go (the test's loopback receiver).
    pub webhook_target: Option<String>,
    pub webhook_attempts: HashMap<i64, u32>,
    pub webhook_last_error: Option<String>,
    pub chats: HashMap<i64, ChatState>,
    pub files: HashMap<String, StoredFile>,
    pub next_file: u64,
    pub callbacks: HashMap<String, Pressed>,
    pub next_callback: u64,
    pub flood: Flood,
    pub sent: Vec<SentText>,
    pub drafts: Vec<DraftFrame>,
    pub uploads: Vec<SentFile>,
    pub actions: Vec<ChatActionRecord>,
    pub callback_answers: Vec<(String, Option<String>)>,
    pub commands: HashMap<String, Value>,
    /// Faults to answer the next call of a method with.
    pub faults: VecDeque<(String, Fault)>,
}

impl State {
    pub fn new(config: FakeConfig, base_url: String) -> State {
        let mut state = State {
            base_url,
            next_update_id: 100_000_001,
            queue: VecDeque::new(),
            allowed: None,
            poll_generation: 0,
            polls_in_flight: 0,
            poll_requests: 0,
            webhook_url: None,
            webhook_secret: None,
            webhook_target: None,
            webhook_attempts: HashMap::new(),
            webhook_last_error: None,
            chats: HashMap::new(),
            files: HashMap::new(),
            next_file: 1,
            callbacks: HashMap::new(),
            next_callback: 1,
            flood: Flood::default(),
            sent: Vec::new(),
            drafts: Vec::new(),
            uploads: Vec::new(),
            actions: Vec::new(),
            callback_answers: Vec::new(),
            commands: HashMap::new(),
            faults: VecDeque::new(),
            config,
        };
        let owner = state.config.owner_id;
        state.add_chat(json!({"id": owner, "type": "private", "first_name": "Owner"}));
        state
    }

    pub fn bot_id(&self) -> i64 {
        self.config
            .token
            .split_once(':')
            .and_then(|(id, _)| id.parse().ok())
            .unwrap_or(0)
    }

    pub fn bot_user(&self) -> Value {
        json!({
            "id": self.bot_id(),
            "is_bot": true,
            "first_name": "SCV Fake",
            "username": self.config.bot_username,
            "can_join_groups": true,
            "can_read_all_group_messages": self.config.can_read_all_group_messages,
            "supports_inline_queries": false,
        })
    }

    pub fn add_chat(&mut self, chat: Value) {
        let id = chat["id"].as_i64().unwrap_or_default();
        self.chats.entry(id).or_insert(ChatState {
            chat,
            blocked: false,
            migrate_to: None,
            next_message_id: 1,
            messages: HashMap::new(),
        });
    }

    /// Gives a message id in `chat_id` and remembers the text the chat shows.
    pub fn take_message_id(&mut self, chat_id: i64, text: String, markup: Option<Value>) -> i64 {
        let Some(chat) = self.chats.get_mut(&chat_id) else {
            return 0;
        };
        let id = chat.next_message_id;
        chat.next_message_id += 1;
        chat.messages.insert(id, (text, markup));
        id
    }

    /// Queues an update of `kind` carrying `body`; returns its id.
    pub fn enqueue(&mut self, kind: &str, body: Value) -> i64 {
        let id = self.next_update_id;
        self.next_update_id += 1;
        let mut update = json!({"update_id": id});
        update[kind] = body;
        self.queue.push_back(Queued {
            id,
            kind: kind.to_owned(),
            body: update,
            at: Instant::now(),
        });
        id
    }

    /// Drops updates older than the 24 h the platform keeps them.
    pub fn expire(&mut self) {
        let keep = crate::limits::PENDING_UPDATES_KEPT;
        self.queue.retain(|q| q.at.elapsed() < keep);
    }

    /// Whether an update of `kind` passes the sticky `allowed_updates` (spec §1.2: an empty
    /// list means every kind but `chat_member`, `message_reaction`, `message_reaction_count`).
    pub fn allows(&self, kind: &str) -> bool {
        const OPT_IN: [&str; 3] = ["chat_member", "message_reaction", "message_reaction_count"];
        match &self.allowed {
            Some(list) if !list.is_empty() => list.iter().any(|k| k == kind),
            _ => !OPT_IN.contains(&kind),
        }
    }

    /// A stored file's new id and path.
    pub fn store_file(&mut self, bytes: Option<Bytes>, size: u64, dir: &str) -> (String, String) {
        let n = self.next_file;
        self.next_file += 1;
        let file_id = format!("BQACAgFake{n:06}");
        let unique_id = format!("AgADFake{n:06}");
        let path = format!("{dir}/file_{n}");
        self.files.insert(
            file_id.clone(),
            StoredFile {
                unique_id: unique_id.clone(),
                size,
                bytes,
                path,
                link_issued: None,
            },
        );
        (file_id, unique_id)
    }

    /// The next injected fault for `method`, if any.
    pub fn take_fault(&mut self, method: &str) -> Option<Fault> {
        let i = self
            .faults
            .iter()
            .position(|(m, _)| m.eq_ignore_ascii_case(method))?;
        self.faults.remove(i).map(|(_, f)| f)
    }
}
