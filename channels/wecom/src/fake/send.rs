//! Proactive sends, payload checks shared with replies, and uploads (spec §7.14–§7.16).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::answer::Answer;
use super::state::{Shared, State, Upload};
use crate::classify as code;
use crate::frame::cmd;
use crate::limits;

/// `aibot_send_msg`: a known chat (exact case), a known type with a payload, the rate limit.
pub(crate) fn send_msg(sh: &Shared, st: &mut State, body: &Value) -> Answer {
    let chat = body
        .get("chatid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !st.chats.contains(chat) {
        return Answer::err(code::INVALID_CHATID, "invalid chatid");
    }
    if st.refuse_groups && st.groups.contains(chat) {
        return Answer::err(code::DEVICE_NOT_SUPPORTED, "device type not support");
    }
    let msgtype = body
        .get("msgtype")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Err(a) = check_payload(st, msgtype, body) {
        return a;
    }
    // The send-rate code and scope are unconfirmed (§4.3); 45009 per chat, as the spec's fake.
    let now = Instant::now();
    let times = st.send_times.entry(chat.to_owned()).or_default();
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= sh.config.send_window)
    {
        times.pop_front();
    }
    if times.len() >= sh.config.sends_per_window {
        return Answer::err(code::RATE_LIMITED, "api freq out of limit");
    }
    times.push_back(now);
    if let Some(task) = body
        .pointer("/template_card/task_id")
        .and_then(Value::as_str)
    {
        st.task_ids.insert(task.to_owned());
    }
    st.sent.push(super::Sent {
        cmd: cmd::SEND_MSG.into(),
        to: chat.into(),
        body: body.clone(),
    });
    Answer::ok()
}

/// The payload of a reply or send: a known `msgtype` with a non-empty object (§7.14).
pub(crate) fn check_payload(st: &State, msgtype: &str, body: &Value) -> Result<(), Answer> {
    let bad_type = || Answer::err(code::BAD_MSGTYPE, "invalid message type");
    let payload = body.get(msgtype).ok_or_else(bad_type)?;
    match msgtype {
        "markdown" => {
            let text = payload
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if text.trim().is_empty() {
                return Err(bad_type());
            }
            Ok(())
        }
        "template_card" => check_card(st, payload),
        "file" | "image" | "voice" | "video" => {
            let id = payload
                .get("media_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match st.media_ids.get(id) {
                Some(at) if Instant::now() < *at + limits::MEDIA_ID_LIFETIME => Ok(()),
                _ => Err(Answer::err(code::BAD_PARAMETER, "invalid media_id")),
            }
        }
        _ => Err(bad_type()),
    }
}

/// `button_interaction` rules (§4.7): 1–6 buttons, unique keys, a valid `task_id` unused by
/// this bot. Other card types pass (the bridge sends only this one).
fn check_card(st: &State, card: &Value) -> Result<(), Answer> {
    let bad = || Answer::err(code::BAD_PARAMETER, "invalid template_card");
    if card.get("card_type").and_then(Value::as_str) != Some("button_interaction") {
        return Ok(());
    }
    let task = card
        .get("task_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !crate::card::valid_task_id(task) || st.task_ids.contains(task) {
        return Err(bad());
    }
    let buttons = card
        .get("button_list")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    if buttons.is_empty() || buttons.len() > limits::CARD_BUTTONS_MAX {
        return Err(bad());
    }
    let mut keys = std::collections::HashSet::new();
    for b in buttons {
        let key = b.get("key").and_then(Value::as_str).unwrap_or_default();
        if key.is_empty() || key.len() > limits::CARD_KEY_MAX_BYTES || !keys.insert(key) {
            return Err(bad());
        }
    }
    Ok(())
}

pub(crate) fn upload_init(st: &mut State, body: &Value) -> Answer {
    let kind = body.get("type").and_then(Value::as_str).unwrap_or_default();
    let total_size = body.get("total_size").and_then(Value::as_u64).unwrap_or(0);
    let total_chunks = body
        .get("total_chunks")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    if !matches!(kind, "file" | "image" | "voice" | "video")
        || total_size == 0
        || total_chunks == 0
        || total_chunks > limits::UPLOAD_MAX_CHUNKS
    {
        return Answer::err(code::BAD_PARAMETER, "invalid Request Parameter");
    }
    let id = format!("up{}", st.next());
    st.uploads.insert(
        id.clone(),
        Upload {
            kind: kind.into(),
            total_size,
            total_chunks,
            md5: body.get("md5").and_then(Value::as_str).map(str::to_owned),
            chunks: Default::default(),
        },
    );
    Answer::with_body(json!({"upload_id": id}))
}

pub(crate) fn upload_chunk(st: &mut State, body: &Value) -> Answer {
    let bad = || Answer::err(code::BAD_PARAMETER, "invalid Request Parameter");
    let id = body
        .get("upload_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let index = body
        .get("chunk_index")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX) as usize;
    let Some(data) = body
        .get("base64_data")
        .and_then(Value::as_str)
        .and_then(|d| STANDARD.decode(d).ok())
    else {
        return bad();
    };
    let Some(up) = st.uploads.get_mut(id) else {
        return bad();
    };
    if index >= up.total_chunks || data.len() > limits::UPLOAD_CHUNK_BYTES || data.is_empty() {
        return bad();
    }
    up.chunks.insert(index, data);
    Answer::ok()
}

pub(crate) fn upload_finish(st: &mut State, body: &Value) -> Answer {
    let bad = || Answer::err(code::BAD_PARAMETER, "invalid Request Parameter");
    let id = body
        .get("upload_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(up) = st.uploads.remove(id) else {
        return bad();
    };
    let mut all = Vec::new();
    for i in 0..up.total_chunks {
        match up.chunks.get(&i) {
            Some(c) => all.extend_from_slice(c),
            None => return bad(),
        }
    }
    if all.len() as u64 != up.total_size
        || up
            .md5
            .as_deref()
            .is_some_and(|m| m != crate::media::md5_hex(&all))
    {
        return bad();
    }
    let media_id = format!("media{}", st.next());
    st.media_ids.insert(media_id.clone(), Instant::now());
    Answer::with_body(
        json!({"type": up.kind, "media_id": media_id, "created_at": super::epoch_secs()}),
    )
}
