//! Building the callbacks the fake pushes (§2.2–§2.4, §7.7): fresh opaque `req_id`s, unique
//! `msgid`s, and encrypted media hosted for each media message.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::state::{Ctl, Handle, Hosted, Shared, State, Takes};
use crate::frame::cmd;

/// What a push produced, for the test to match against what the client saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The callback's `msgid` (the dedupe key).
    pub msgid: String,
    /// The callback's `req_id` (the reply handle).
    pub req_id: String,
    /// Whether a subscribed socket took it (`false`: dropped, as the platform would, §7.9).
    pub delivered: bool,
}

/// Sends `cmd` with `body` (its `msgid` already set) to the subscribed socket, if any.
pub(crate) fn push(st: &mut State, command: &str, body: Value, req_id: Option<String>) -> Pushed {
    let msgid = body
        .get("msgid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let req_id =
        req_id.unwrap_or_else(|| format!("REQ{}x{:08x}", st.next(), rand::random::<u32>()));
    let takes = takes(command, &body);
    let frame = json!({"cmd": command, "headers": {"req_id": req_id}, "body": body});
    let target = st
        .current
        .and_then(|c| st.conns.get(&c).map(|conn| (c, conn.tx.clone())));
    let Some((conn, tx)) = target else {
        st.dropped_pushes += 1;
        return Pushed {
            msgid,
            req_id,
            delivered: false,
        };
    };
    let task_id = body
        .pointer("/event/template_card_event/task_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    st.handles.insert(
        req_id.clone(),
        Handle {
            takes,
            conn,
            at: Instant::now(),
            task_id,
        },
    );
    if let Some(u) = body.pointer("/from/userid").and_then(Value::as_str) {
        st.chats.insert(u.to_owned());
    }
    if let Some(g) = body.get("chatid").and_then(Value::as_str) {
        st.chats.insert(g.to_owned());
        st.groups.insert(g.to_owned());
    }
    st.pushes.push(frame.clone());
    let _ = tx.send(Ctl::Text(frame.to_string()));
    Pushed {
        msgid,
        req_id,
        delivered: true,
    }
}

fn takes(command: &str, body: &Value) -> Takes {
    if command == cmd::MSG_CALLBACK {
        return Takes::Message;
    }
    match body.pointer("/event/eventtype").and_then(Value::as_str) {
        Some("enter_chat") => Takes::Welcome,
        Some("template_card_event") => Takes::CardUpdate,
        _ => Takes::Nothing,
    }
}

/// The common fields of a callback body from `userid`, in a DM or in `group`.
pub(crate) fn base(
    st: &mut State,
    bot_id: &str,
    userid: &str,
    group: Option<&str>,
    msgtype: &str,
) -> Value {
    let n = st.next();
    let mut b = json!({"msgid": format!("MSG{n}/{:08x}=", rand::random::<u32>()), "aibotid": bot_id,
        "chattype": if group.is_some() { "group" } else { "single" },
        "from": {"userid": userid}, "create_time": super::epoch_secs(), "msgtype": msgtype});
    if let Some(g) = group {
        b["chatid"] = Value::from(g);
    }
    b
}

/// Hosts `bytes` encrypted with a fresh key; returns the `{url, aeskey}` object.
pub(crate) fn host(sh: &Shared, st: &mut State, bytes: &[u8], name: Option<&str>) -> Value {
    let key: [u8; 32] = rand::random();
    let id = format!("m{}", st.next());
    st.hosted.insert(
        id.clone(),
        Hosted {
            body: crate::media::encrypt(&key, bytes),
            disposition: name.map(super::host::disposition),
            expires: Instant::now() + sh.config.media_url_ttl,
        },
    );
    let mut aeskey = STANDARD.encode(key);
    if sh.config.strip_key_padding {
        aeskey = aeskey.trim_end_matches('=').to_owned();
    }
    json!({"url": format!("{}/media/{id}", sh.base_url), "aeskey": aeskey})
}
