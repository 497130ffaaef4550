//! What the fake answers to each command, with the platform's refusals (spec §7): subscribe
//! first, credentials, reply routing by `req_id`, windows, stream rules.

use serde_json::Value;
use tokio::time::Instant;

use super::answer::Answer;
use super::send;
use super::state::{Bubble, Shared, State, Takes};
use crate::classify as code;
use crate::frame::cmd;

/// Answers `cmd` from socket `conn`.
pub(crate) fn answer(
    sh: &Shared,
    st: &mut State,
    conn: u64,
    command: &str,
    req_id: &str,
    body: Option<&Value>,
) -> Answer {
    if command == cmd::SUBSCRIBE {
        return subscribe(sh, st, conn, body);
    }
    if !st.conns.get(&conn).is_some_and(|c| c.subscribed) {
        return Answer::err(code::NOT_SUBSCRIBED, "aibot websocket not subscribed");
    }
    let empty = Value::Null;
    let body = body.unwrap_or(&empty);
    match command {
        cmd::PING => Answer::ok(),
        cmd::RESPOND_MSG => respond_msg(sh, st, conn, req_id, body),
        cmd::RESPOND_WELCOME => welcome(sh, st, conn, req_id, body),
        cmd::RESPOND_UPDATE => update(sh, st, conn, req_id, body),
        cmd::SEND_MSG => send::send_msg(sh, st, body),
        cmd::UPLOAD_INIT => send::upload_init(st, body),
        cmd::UPLOAD_CHUNK => send::upload_chunk(st, body),
        cmd::UPLOAD_FINISH => send::upload_finish(st, body),
        _ => Answer::err(code::BAD_PARAMETER, "invalid Request Parameter"),
    }
}

fn subscribe(sh: &Shared, st: &mut State, conn: u64, body: Option<&Value>) -> Answer {
    if let Some(c) = st.subscribe_faults.pop_front() {
        return Answer::err(c, "injected");
    }
    let field = |k: &str| body.and_then(|b| b.get(k)).and_then(Value::as_str);
    // Ids are case-sensitive (§3): an exact match or a refusal.
    if field("bot_id") != Some(sh.config.bot_id.as_str()) {
        return Answer {
            close_after: true,
            ..Answer::err(sh.config.bad_id_code, "invalid bot_id")
        };
    }
    if field("secret") != Some(sh.config.secret.as_str()) {
        return Answer {
            close_after: true,
            ..Answer::err(sh.config.bad_secret_code, "signature is incorrect")
        };
    }
    if let Some(c) = st.conns.get_mut(&conn) {
        c.subscribed = true;
    }
    let old = st.current.replace(conn).filter(|&o| o != conn);
    if let Some(o) = old
        && let Some(c) = st.conns.get_mut(&o)
    {
        c.subscribed = false;
    }
    Answer {
        supersede: old,
        ..Answer::ok()
    }
}

/// The handle `req_id` if it takes `takes` on this socket; else the platform's `846605`.
fn handle_for(st: &State, conn: u64, req_id: &str, takes: Takes) -> Result<Instant, Answer> {
    match st.handles.get(req_id) {
        Some(h) if h.takes == takes && h.conn == conn => Ok(h.at),
        _ => Err(Answer::err(code::INVALID_REQ_ID, "invalid req_id")),
    }
}

fn respond_msg(sh: &Shared, st: &mut State, conn: u64, req_id: &str, body: &Value) -> Answer {
    let at = match handle_for(st, conn, req_id, Takes::Message) {
        Ok(at) => at,
        Err(a) => return a,
    };
    let expired = Instant::now() >= at + sh.config.stream_window;
    let msgtype = body
        .get("msgtype")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if msgtype == "stream" {
        if expired {
            return Answer::err(code::STREAM_EXPIRED, "stream message update expired");
        }
        return stream(st, req_id, body);
    }
    if expired {
        return Answer::err(code::REPLY_EXPIRED, "reply window expired");
    }
    match send::check_payload(st, msgtype, body) {
        Ok(()) => {
            st.sent.push(super::Sent {
                cmd: cmd::RESPOND_MSG.into(),
                to: req_id.into(),
                body: body.clone(),
            });
            Answer::ok()
        }
        Err(a) => a,
    }
}

/// Stream rules (§7.12): size, no frames after finish, `msg_item` only on finish and ≤ 10.
fn stream(st: &mut State, req_id: &str, body: &Value) -> Answer {
    let s = body.get("stream").unwrap_or(&Value::Null);
    let (Some(id), Some(content)) = (
        s.get("id").and_then(Value::as_str),
        s.get("content").and_then(Value::as_str),
    ) else {
        return Answer::err(code::BAD_PARAMETER, "invalid Request Parameter");
    };
    let finish = s.get("finish").and_then(Value::as_bool).unwrap_or(false);
    // The over-size code is unconfirmed; 40058 is the platform's "bad parameter".
    if content.len() > crate::limits::STREAM_CONTENT_MAX_BYTES {
        return Answer::err(code::BAD_PARAMETER, "content exceed max length");
    }
    let items = s
        .get("msg_item")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let images = items.len();
    let bad_item = !items.iter().all(image_ok);
    if images > 0 && (!finish || images > crate::limits::FINISH_IMAGES_MAX || bad_item) {
        return Answer::err(code::BAD_PARAMETER, "invalid msg_item");
    }
    let pos = st
        .bubbles
        .iter()
        .position(|b| b.req_id == req_id && b.stream_id == id);
    let bubble = match pos {
        Some(i) => &mut st.bubbles[i],
        None => {
            st.bubbles.push(Bubble {
                req_id: req_id.into(),
                stream_id: id.into(),
                content: String::new(),
                frames: 0,
                finished: false,
                spinning: false,
                images: 0,
            });
            let last = st.bubbles.len() - 1;
            &mut st.bubbles[last]
        }
    };
    // The code for a frame after finish is unconfirmed; the fake says "expired".
    if bubble.finished {
        return Answer::err(code::STREAM_EXPIRED, "stream already finished");
    }
    bubble.content = content.into();
    bubble.frames += 1;
    bubble.finished = finish;
    bubble.spinning = finish && content.trim().is_empty();
    bubble.images = images;
    Answer::ok()
}

fn welcome(sh: &Shared, st: &mut State, conn: u64, req_id: &str, body: &Value) -> Answer {
    let at = match handle_for(st, conn, req_id, Takes::Welcome) {
        Ok(at) => at,
        Err(a) => return a,
    };
    // The code past the 5 s window is unconfirmed; 846605 as for a wrong handle (§7.11).
    if Instant::now() >= at + sh.config.event_window {
        return Answer::err(code::INVALID_REQ_ID, "invalid req_id");
    }
    let msgtype = body
        .get("msgtype")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ok = match msgtype {
        "text" => body
            .pointer("/text/content")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty()),
        "template_card" => send::check_payload(st, msgtype, body).is_ok(),
        _ => false,
    };
    if !ok {
        return Answer::err(code::BAD_MSGTYPE, "invalid message type");
    }
    st.sent.push(super::Sent {
        cmd: cmd::RESPOND_WELCOME.into(),
        to: req_id.into(),
        body: body.clone(),
    });
    Answer::ok()
}

fn update(sh: &Shared, st: &mut State, conn: u64, req_id: &str, body: &Value) -> Answer {
    let at = match handle_for(st, conn, req_id, Takes::CardUpdate) {
        Ok(at) => at,
        Err(a) => return a,
    };
    if Instant::now() >= at + sh.config.event_window {
        return Answer::err(code::INVALID_REQ_ID, "invalid req_id");
    }
    let clicked = st.handles.get(req_id).and_then(|h| h.task_id.clone());
    let task = body
        .pointer("/template_card/task_id")
        .and_then(Value::as_str);
    if body.get("response_type").and_then(Value::as_str) != Some("update_template_card")
        || task.is_none()
        || task != clicked.as_deref()
    {
        return Answer::err(code::BAD_PARAMETER, "invalid Request Parameter");
    }
    st.sent.push(super::Sent {
        cmd: cmd::RESPOND_UPDATE.into(),
        to: req_id.into(),
        body: body.clone(),
    });
    Answer::ok()
}

/// A finish-frame image: base64 that decodes, ≤ 10 MB, with the md5 of its bytes (§4.5).
fn image_ok(item: &Value) -> bool {
    use base64::Engine;
    let b64 = item
        .pointer("/image/base64")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let md5 = item
        .pointer("/image/md5")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match base64::engine::general_purpose::STANDARD.decode(b64) {
        Ok(raw) => {
            item.get("msgtype").and_then(Value::as_str) == Some("image")
                && !raw.is_empty()
                && raw.len() as u64 <= crate::limits::IMAGE_MAX_BYTES
                && crate::media::md5_hex(&raw) == md5
        }
        Err(_) => false,
    }
}
