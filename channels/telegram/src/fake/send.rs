//! The fake's outbound methods (spec §8.7–§8.10): what `sendMessage`, edits, drafts, chat
//! actions and button answers refuse, with the platform's texts.

use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::answer::{error, error_with, ok};
use super::html::visible_text;
use super::params::Params;
use super::records::{ChatActionRecord, DraftFrame, SentText};
use super::state::State;
use crate::limits::{MAX_CALLBACK_DATA_BYTES, MAX_DRAFT_UTF16, MAX_TEXT_UTF16};
use crate::message::utf16_len;

const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";
const QUERY_TOO_OLD: &str =
    "Bad Request: query is too old and response timeout expired or query id is invalid";

/// A refusal on its way to becoming the response (a `Response` is too big to pass around in
/// every `Result`).
pub(crate) struct Refusal {
    code: u16,
    description: String,
    parameters: Option<Value>,
}

pub(crate) fn refuse(code: u16, description: &str) -> Refusal {
    Refusal {
        code,
        description: description.to_owned(),
        parameters: None,
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error_with(self.code, &self.description, self.parameters)
    }
}

/// 429 with the wait in both `parameters` and `description` (spec §4.6).
fn too_many(retry_after: u64) -> Refusal {
    Refusal {
        code: 429,
        description: format!("Too Many Requests: retry after {retry_after}"),
        parameters: Some(json!({"retry_after": retry_after})),
    }
}

/// The chat a send goes to, refused as the platform refuses it.
fn target(st: &State, p: &Params) -> Result<i64, Refusal> {
    let Some(chat_id) = p.int("chat_id") else {
        return Err(refuse(400, "Bad Request: chat_id is empty"));
    };
    let Some(chat) = st.chats.get(&chat_id) else {
        return Err(refuse(400, "Bad Request: chat not found"));
    };
    if chat.blocked {
        return Err(refuse(403, "Forbidden: bot was blocked by the user"));
    }
    if let Some(to) = chat.migrate_to {
        return Err(Refusal {
            code: 400,
            description: "Bad Request: group chat was upgraded to a supergroup chat".into(),
            parameters: Some(json!({"migrate_to_chat_id": to})),
        });
    }
    Ok(chat_id)
}

/// The visible text of `text` under `parse_mode`, or the refusal.
fn parsed(text: &str, parse_mode: Option<&str>) -> Result<String, Refusal> {
    match parse_mode {
        Some(m) if m.eq_ignore_ascii_case("html") => visible_text(text)
            .map_err(|d| refuse(400, &format!("Bad Request: can't parse entities: {d}"))),
        Some(m) if m.eq_ignore_ascii_case("markdownv2") => super::markdown::visible_text(text)
            .map_err(|d| refuse(400, &format!("Bad Request: can't parse entities: {d}"))),
        _ => Ok(text.to_owned()),
    }
}

/// `callback_data` of every button within 1–64 bytes.
fn check_markup(markup: Option<&Value>) -> Result<(), Refusal> {
    let rows = markup
        .and_then(|m| m.get("inline_keyboard"))
        .and_then(Value::as_array);
    for button in rows
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
    {
        if let Some(data) = button.get("callback_data").and_then(Value::as_str)
            && (data.is_empty() || data.len() > MAX_CALLBACK_DATA_BYTES)
        {
            return Err(refuse(400, "Bad Request: BUTTON_DATA_INVALID"));
        }
    }
    Ok(())
}

pub(crate) fn send_message(st: &mut State, p: &Params) -> Response {
    match try_send(st, p) {
        Ok(r) => r,
        Err(r) => r.into_response(),
    }
}

fn try_send(st: &mut State, p: &Params) -> Result<Response, Refusal> {
    let chat_id = target(st, p)?;
    let text = p.text("text").unwrap_or_default();
    let mode = p.text("parse_mode");
    let visible = parsed(&text, mode.as_deref())?;
    if visible.trim().is_empty() {
        return Err(refuse(400, "Bad Request: message text is empty"));
    }
    if utf16_len(&visible) > MAX_TEXT_UTF16 {
        return Err(refuse(400, "Bad Request: message is too long"));
    }
    let markup = p.json("reply_markup");
    check_markup(markup.as_ref())?;
    let reply = p.json("reply_parameters");
    let reply_to = reply.as_ref().and_then(|r| r["message_id"].as_i64());
    if let Some(id) = reply_to {
        let lenient = reply
            .as_ref()
            .and_then(|r| r["allow_sending_without_reply"].as_bool());
        let exists = st
            .chats
            .get(&chat_id)
            .is_some_and(|c| c.messages.contains_key(&id));
        if !exists && lenient != Some(true) {
            return Err(refuse(400, "Bad Request: message to be replied not found"));
        }
    }
    let is_group = st.chats.get(&chat_id).is_some_and(|c| c.is_group());
    let burst = st.config.chat_burst;
    st.flood.take(chat_id, is_group, burst).map_err(too_many)?;
    let message_id = st.take_message_id(chat_id, text.clone(), markup.clone());
    st.sent.push(SentText {
        chat_id,
        message_id,
        text: text.clone(),
        parse_mode: mode,
        reply_markup: markup.clone(),
        reply_to,
    });
    Ok(ok(sent_message(st, chat_id, message_id, &visible, markup)))
}

/// The `Message` the platform returns for a bot's send.
pub(crate) fn sent_message(
    st: &State,
    chat_id: i64,
    message_id: i64,
    visible: &str,
    markup: Option<Value>,
) -> Value {
    let mut m = json!({
        "message_id": message_id,
        "from": st.bot_user(),
        "chat": st.chats.get(&chat_id).map(|c| c.chat.clone()).unwrap_or(Value::Null),
        "date": 1_780_000_000,
        "text": visible,
    });
    if let Some(k) = markup {
        m["reply_markup"] = k;
    }
    m
}

pub(crate) fn edit_text(st: &mut State, p: &Params) -> Response {
    let (chat_id, message_id) = match existing(st, p) {
        Ok(ids) => ids,
        Err(r) => return r.into_response(),
    };
    let text = p.text("text").unwrap_or_default();
    let visible = match parsed(&text, p.text("parse_mode").as_deref()) {
        Ok(v) => v,
        Err(r) => return r.into_response(),
    };
    if visible.trim().is_empty() {
        return error(400, "Bad Request: message text is empty");
    }
    if utf16_len(&visible) > MAX_TEXT_UTF16 {
        return error(400, "Bad Request: MESSAGE_TOO_LONG");
    }
    let markup = p.json("reply_markup");
    if let Err(r) = check_markup(markup.as_ref()) {
        return r.into_response();
    }
    let Some(chat) = st.chats.get_mut(&chat_id) else {
        return error(400, "Bad Request: chat not found");
    };
    let is_group = chat.is_group();
    let entry = chat.messages.entry(message_id).or_default();
    if entry.0 == text && entry.1 == markup {
        return error(400, NOT_MODIFIED);
    }
    // Edits count against the flood limits like sends (spec §4.3).
    let burst = st.config.chat_burst;
    if let Err(secs) = st.flood.take(chat_id, is_group, burst) {
        return too_many(secs).into_response();
    }
    if let Some(chat) = st.chats.get_mut(&chat_id) {
        chat.messages.insert(message_id, (text, markup.clone()));
    }
    ok(sent_message(st, chat_id, message_id, &visible, markup))
}

pub(crate) fn edit_markup(st: &mut State, p: &Params) -> Response {
    let (chat_id, message_id) = match existing(st, p) {
        Ok(ids) => ids,
        Err(r) => return r.into_response(),
    };
    // An empty keyboard is the same as none.
    let markup = p.json("reply_markup").filter(|m| {
        m["inline_keyboard"]
            .as_array()
            .is_some_and(|rows| !rows.is_empty())
    });
    if let Err(r) = check_markup(markup.as_ref()) {
        return r.into_response();
    }
    let Some(chat) = st.chats.get_mut(&chat_id) else {
        return error(400, "Bad Request: chat not found");
    };
    let entry = chat.messages.entry(message_id).or_default();
    if entry.1 == markup {
        return error(400, NOT_MODIFIED);
    }
    entry.1 = markup.clone();
    let text = entry.0.clone();
    ok(sent_message(st, chat_id, message_id, &text, markup))
}

/// The chat and message an edit names, if the message exists.
fn existing(st: &State, p: &Params) -> Result<(i64, i64), Refusal> {
    let chat_id = target(st, p)?;
    let message_id = p.int("message_id").unwrap_or(0);
    let known = st
        .chats
        .get(&chat_id)
        .is_some_and(|c| c.messages.contains_key(&message_id));
    if !known {
        return Err(refuse(400, "Bad Request: message to edit not found"));
    }
    Ok((chat_id, message_id))
}

/// The draft's refusal texts are unconfirmed (spec §9); these are plausible and distinct.
pub(crate) fn send_draft(st: &mut State, p: &Params) -> Response {
    let chat_id = match target(st, p) {
        Ok(id) => id,
        Err(r) => return r.into_response(),
    };
    if !st.chats.get(&chat_id).is_some_and(|c| c.is_private()) {
        return error(400, "Bad Request: TEXTDRAFT_PEER_INVALID");
    }
    let draft_id = p.int("draft_id").unwrap_or(0);
    if draft_id == 0 {
        return error(400, "Bad Request: DRAFT_ID_INVALID");
    }
    let text = p.text("text").unwrap_or_default();
    let visible = match parsed(&text, p.text("parse_mode").as_deref()) {
        Ok(v) => v,
        Err(r) => return r.into_response(),
    };
    if utf16_len(&visible) > MAX_DRAFT_UTF16 {
        return error(400, "Bad Request: text is too long");
    }
    st.drafts.push(DraftFrame {
        chat_id,
        draft_id,
        can_stop: p.flag("can_stop"),
        text,
        at: Instant::now(),
    });
    ok(json!(true))
}

pub(crate) fn chat_action(st: &mut State, p: &Params) -> Response {
    let chat_id = match target(st, p) {
        Ok(id) => id,
        Err(r) => return r.into_response(),
    };
    let action = p.text("action").unwrap_or_default();
    st.actions.push(ChatActionRecord { chat_id, action });
    ok(json!(true))
}

/// Accepted once per press, within the deadline.
pub(crate) fn answer_callback(st: &mut State, p: &Params) -> Response {
    let id = p.text("callback_query_id").unwrap_or_default();
    let deadline = st.config.callback_deadline;
    let Some(press) = st.callbacks.get_mut(&id) else {
        return error(400, QUERY_TOO_OLD);
    };
    if press.answered || press.at.elapsed() > deadline {
        return error(400, QUERY_TOO_OLD);
    }
    press.answered = true;
    st.callback_answers.push((id, p.text("text")));
    ok(json!(true))
}
