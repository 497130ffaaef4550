//! The test handle: push inbound updates, press buttons, set knobs and faults, read records.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::Shared;
use super::records::{ChatActionRecord, DraftFrame, SentFile, SentText};
use super::state::{Fault, Pressed, State};
use crate::method::Method;
use crate::token::BotToken;
use crate::types::{Chat, Message, User};

/// Drives and inspects a [`super::FakeServer`]. Cheap to clone.
#[derive(Clone)]
pub struct FakeHandle {
    pub(super) shared: Arc<Shared>,
}

impl FakeHandle {
    pub(super) fn new(shared: Arc<Shared>) -> FakeHandle {
        FakeHandle { shared }
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.shared.lock());
        self.shared.bump();
        out
    }

    /// The base URL clients should use.
    pub fn base_url(&self) -> String {
        self.shared.lock().base_url.clone()
    }

    /// The valid token.
    pub fn token(&self) -> BotToken {
        let raw = self.shared.lock().config.token.clone();
        BotToken::parse(&raw).unwrap_or_else(|_| panic!("FakeConfig::token is not a bot token"))
    }

    /// The bot's id (above 2^32 by default).
    pub fn bot_id(&self) -> i64 {
        self.shared.lock().bot_id()
    }

    /// The owner as a user.
    pub fn owner(&self) -> User {
        let id = self.shared.lock().config.owner_id;
        user(id, "Owner")
    }

    /// The owner's private chat (exists from the start).
    pub fn owner_chat(&self) -> Chat {
        let id = self.shared.lock().config.owner_id;
        self.chat(id)
    }

    /// A private chat with a stranger (`user_id`), created if new.
    pub fn stranger_chat(&self, user_id: i64) -> Chat {
        self.with(|s| {
            s.add_chat(json!({"id": user_id, "type": "private", "first_name": "Stranger"}))
        });
        self.chat(user_id)
    }

    /// A group (negative id), created if new.
    pub fn group(&self, id: i64, title: &str) -> Chat {
        self.with(|s| s.add_chat(json!({"id": id, "type": "group", "title": title})));
        self.chat(id)
    }

    fn chat(&self, id: i64) -> Chat {
        let v = self.shared.lock().chats.get(&id).map(|c| c.chat.clone());
        serde_json::from_value(v.unwrap_or(Value::Null)).unwrap_or(Chat {
            id,
            kind: String::new(),
            title: None,
        })
    }

    /// Queues a text message in `chat` from its private user (or the owner in a group); a held
    /// poll is released at once. Returns the message as it will be delivered.
    pub fn push_text(&self, chat: Chat, text: &str) -> Message {
        let from = if chat.is_private() {
            user(chat.id, "User")
        } else {
            self.owner()
        };
        self.push_message(json!({"chat": chat, "from": from, "text": text}))
    }

    /// Queues a message built by the test (the fake fills `message_id` and `date` if unset);
    /// entities, media and replies go in as given. In a group with privacy mode on
    /// (`can_read_all_group_messages: false`) a message that does not address the bot is not
    /// delivered, as on the platform; [`FakeHandle::pending`] shows it.
    pub fn push_message(&self, mut body: Value) -> Message {
        self.with(|s| {
            let chat_id = body["chat"]["id"].as_i64().unwrap_or_default();
            if body.get("message_id").is_none() {
                let text = body["text"].as_str().unwrap_or_default().to_owned();
                body["message_id"] = json!(s.take_message_id(chat_id, text, None));
            }
            if body.get("date").is_none() {
                body["date"] = json!(1_780_000_000);
            }
            if super::privacy::delivered(s, &body) {
                s.enqueue("message", body.clone());
            }
        });
        serde_json::from_value(body).unwrap_or_else(|e| panic!("push_message: not a Message: {e}"))
    }

    /// A message from an anonymous group admin: `from` is `GroupAnonymousBot`, `sender_chat`
    /// the group (spec §2.2); the owner cannot be matched on it.
    pub fn push_anonymous_admin(&self, group: Chat, text: &str) -> Message {
        let from = json!({"id": 1_087_968_824, "is_bot": true, "first_name": "Group",
            "username": "GroupAnonymousBot"});
        self.push_message(json!({"chat": group, "sender_chat": group, "from": from, "text": text}))
    }

    /// Queues any update kind with any body (hostile, unknown, or an edit); returns its id.
    pub fn push_update(&self, kind: &str, body: Value) -> i64 {
        self.with(|s| s.enqueue(kind, body))
    }

    /// Queues `raw` exactly as given, `update_id` or not (the fake still orders it by a fresh
    /// internal id, which a raw update without one cannot confirm).
    pub fn push_raw(&self, raw: Value) {
        self.with(|s| {
            let id = s.next_update_id;
            s.next_update_id += 1;
            s.queue.push_back(super::state::Queued {
                id,
                kind: "message".into(),
                body: raw,
                at: Instant::now(),
            });
        });
    }

    /// Stores `bytes` as a file and queues a message carrying it as `kind` (`photo`,
    /// `document`, `voice`, `video`) in `chat`. Returns the message.
    pub fn push_file(&self, chat: Chat, kind: &str, bytes: &[u8], file_name: &str) -> Message {
        self.push_sized_file(
            chat,
            kind,
            Some(Bytes::copy_from_slice(bytes)),
            bytes.len() as u64,
            file_name,
        )
    }

    /// As [`FakeHandle::push_file`], for a file of `size` bytes that is never downloaded
    /// (over the download limit): no memory is spent on it.
    pub fn push_big_file(&self, chat: Chat, kind: &str, size: u64, file_name: &str) -> Message {
        self.push_sized_file(chat, kind, None, size, file_name)
    }

    fn push_sized_file(
        &self,
        chat: Chat,
        kind: &str,
        bytes: Option<Bytes>,
        size: u64,
        name: &str,
    ) -> Message {
        let (file_id, unique) = self.with(|s| s.store_file(bytes, size, kind));
        let file = json!({"file_id": file_id, "file_unique_id": unique, "file_size": size,
            "file_name": name, "mime_type": "application/octet-stream"});
        let media = if kind == "photo" {
            json!([{"file_id": file_id, "file_unique_id": unique, "width": 64, "height": 64,
                "file_size": size}])
        } else {
            file
        };
        let from = if chat.is_private() {
            user(chat.id, "User")
        } else {
            self.owner()
        };
        let mut body = json!({"chat": chat, "from": from, "caption": "see attached"});
        body[kind] = media;
        self.push_message(body)
    }

    /// A press of the button with `data` on `message`, by `from`; returns the query id.
    pub fn press_button(&self, from: User, message: &Message, data: &str) -> String {
        self.with(|s| {
            let id = format!("cbq{}", s.next_callback);
            s.next_callback += 1;
            s.callbacks.insert(
                id.clone(),
                Pressed {
                    at: Instant::now(),
                    answered: false,
                },
            );
            s.enqueue(
                "callback_query",
                json!({"id": id, "from": from, "message": message,
                "chat_instance": "ci-1", "data": data}),
            );
            id
        })
    }

    /// The user pressed stop on a draft (`stopped_message_generation`).
    pub fn press_stop(&self, chat: Chat, draft_id: i64) -> i64 {
        self.push_update(
            "stopped_message_generation",
            json!({"chat": chat, "draft_id": draft_id}),
        )
    }

    /// Sets a webhook: every `getUpdates` gets 409 until `deleteWebhook`.
    pub fn set_webhook(&self, url: &str) {
        self.with(|s| s.webhook_url = Some(url.to_owned()));
    }

    /// Sends webhook deliveries to `target` (a loopback URL) instead of the webhook's own
    /// URL, which must be public HTTPS.
    pub fn deliver_webhooks_to(&self, target: &str) {
        self.with(|s| s.webhook_target = Some(target.to_owned()));
    }

    /// Whether a webhook is set.
    pub fn webhook_set(&self) -> bool {
        self.shared.lock().webhook_url.is_some()
    }

    /// The user of a private chat blocked the bot: sends get 403.
    pub fn block(&self, chat_id: i64) {
        self.with(|s| s.chats.get_mut(&chat_id).map(|c| c.blocked = true));
    }

    /// The group became supergroup `to`: sends to the old id get 400 with `migrate_to_chat_id`.
    pub fn migrate(&self, chat_id: i64, to: i64) {
        self.with(|s| {
            let title = s.chats.get(&chat_id).map(|c| c.chat["title"].clone());
            if let Some(c) = s.chats.get_mut(&chat_id) {
                c.migrate_to = Some(to);
            }
            s.add_chat(json!({"id": to, "type": "supergroup", "title": title}));
        });
    }

    /// The next update ids start at `next` (after a week of silence they are random, §1.2).
    pub fn jump_update_ids(&self, next: i64) {
        self.with(|s| s.next_update_id = next);
    }

    /// The next call of `method` answers `status` with `description` (5xx, 401, anything).
    pub fn fail_next(&self, method: Method, status: u16, description: &str) {
        self.fault_next(method, Fault::Error(status, description.to_owned()));
    }

    /// The next call of `method` gets `fault` instead of its answer.
    pub fn fault_next(&self, method: Method, fault: Fault) {
        self.with(|s| s.faults.push_back((method.name().to_owned(), fault)));
    }

    /// Updates still on the server (not confirmed, not expired).
    pub fn pending(&self) -> usize {
        let mut st = self.shared.lock();
        st.expire();
        st.queue.len()
    }

    /// `getUpdates` handlers running now (held or answering).
    pub fn polls_in_flight(&self) -> usize {
        self.shared.lock().polls_in_flight
    }

    /// `getUpdates` calls received so far.
    pub fn poll_requests(&self) -> usize {
        self.shared.lock().poll_requests
    }

    /// The sticky `allowed_updates` list.
    pub fn allowed_updates(&self) -> Option<Vec<String>> {
        self.shared.lock().allowed.clone()
    }

    /// Waits (up to `timeout`) until `cond` holds on the fake's records.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&FakeHandle) -> bool) -> bool {
        let mut changed = self.shared.changed.subscribe();
        let work = async {
            loop {
                changed.borrow_and_update();
                if cond(self) {
                    return;
                }
                if changed.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, work).await.is_ok()
    }

    /// Every accepted `sendMessage`.
    pub fn sent(&self) -> Vec<SentText> {
        self.shared.lock().sent.clone()
    }

    /// The text a message shows now (after edits), and its keyboard.
    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<(String, Option<Value>)> {
        self.shared
            .lock()
            .chats
            .get(&chat_id)?
            .messages
            .get(&message_id)
            .cloned()
    }

    /// Every accepted draft frame.
    pub fn drafts(&self) -> Vec<DraftFrame> {
        self.shared.lock().drafts.clone()
    }

    /// Every accepted upload or resend.
    pub fn uploads(&self) -> Vec<SentFile> {
        self.shared.lock().uploads.clone()
    }

    /// Every accepted chat action.
    pub fn chat_actions(&self) -> Vec<ChatActionRecord> {
        self.shared.lock().actions.clone()
    }

    /// Every accepted button answer: (query id, text).
    pub fn callback_answers(&self) -> Vec<(String, Option<String>)> {
        self.shared.lock().callback_answers.clone()
    }

    /// The command menu set for `language` (`""` = default).
    pub fn commands(&self, language: &str) -> Option<Value> {
        self.shared.lock().commands.get(language).cloned()
    }
}

fn user(id: i64, name: &str) -> User {
    User {
        id,
        is_bot: false,
        first_name: name.to_owned(),
        username: None,
        language_code: Some("en".into()),
    }
}
