//! The fake's files (spec §8.11): `getFile` under the download limit, the download route, and
//! uploads (multipart or by `file_id`) under theirs.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Shared;
use super::answer::{error, ok};
use super::params::Params;
use super::records::SentFile;
use super::send::{Refusal, refuse, sent_message};
use super::state::State;
use crate::limits::FILE_LINK_LIFETIME;
use crate::method::Method;
use tokio::time::Instant;

pub(crate) fn get_file(st: &mut State, p: &Params) -> Response {
    let id = p.text("file_id").unwrap_or_default();
    let max = st.config.max_download;
    let Some(file) = st.files.get_mut(&id) else {
        return error(400, "Bad Request: invalid file_id");
    };
    if file.size > max {
        return error(400, "Bad Request: file is too big");
    }
    file.link_issued = Some(Instant::now());
    ok(json!({
        "file_id": id,
        "file_unique_id": file.unique_id,
        "file_size": file.size,
        "file_path": file.path,
    }))
}

/// `/file/bot<token>/<path>`: the bytes while the link lives (an hour from `getFile`; the
/// platform promises "at least", the fake gives exactly that), else 404.
pub(crate) fn download(shared: &Shared, path: &str) -> Response {
    let st = shared.lock();
    let found = st
        .files
        .values()
        .find(|f| f.path == path)
        .filter(|f| {
            f.link_issued
                .is_some_and(|at| at.elapsed() <= FILE_LINK_LIFETIME)
        })
        .and_then(|f| f.bytes.clone());
    match found {
        Some(bytes) => (StatusCode::OK, bytes).into_response(),
        None => error(404, "Not Found"),
    }
}

pub(crate) fn upload(st: &mut State, method: Method, p: Params) -> Response {
    let chat_id = match p.int("chat_id") {
        Some(id) if st.chats.contains_key(&id) => id,
        _ => return error(400, "Bad Request: chat not found"),
    };
    let field = match method {
        Method::SendPhoto => "photo",
        Method::SendVoice => "voice",
        Method::SendVideo => "video",
        _ => "document",
    };
    let limit = if method == Method::SendPhoto {
        st.config.max_upload_photo
    } else {
        st.config.max_upload_file
    };
    let caption_len = p
        .text("caption")
        .map_or(0, |c| crate::message::utf16_len(&c));
    if caption_len > crate::limits::MAX_CAPTION_UTF16 {
        return error(400, "Bad Request: message caption is too long");
    }
    let mut p = p;
    let (file_id, unique, file_name, bytes) = match stored(st, &mut p, field, limit) {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let caption = p.text("caption");
    let size = bytes.len();
    st.uploads.push(SentFile {
        chat_id,
        method: method.name().to_owned(),
        file_name: file_name.clone(),
        bytes,
        caption: caption.clone(),
        file_id: file_id.clone(),
    });
    let message_id = st.take_message_id(chat_id, caption.clone().unwrap_or_default(), None);
    let mut m = sent_message(st, chat_id, message_id, "", None);
    if let Some(obj) = m.as_object_mut() {
        obj.remove("text");
    }
    let file = json!({"file_id": file_id, "file_unique_id": unique, "file_size": size,
        "file_name": file_name});
    m[field] = if field == "photo" {
        Value::Array(vec![file])
    } else {
        file
    };
    if let Some(c) = caption {
        m["caption"] = json!(c);
    }
    ok(m)
}

/// The file an upload carries, stored: a multipart part under `limit` (else 413), or an
/// earlier `file_id` (no size limit, no upload). `(file_id, unique_id, name, bytes)`.
fn stored(
    st: &mut State,
    p: &mut Params,
    field: &str,
    limit: u64,
) -> Result<(String, String, String, bytes::Bytes), Refusal> {
    match p.files.remove(field) {
        Some(part) if part.too_large || part.bytes.len() as u64 > limit => {
            Err(refuse(413, "Request Entity Too Large"))
        }
        Some(part) => {
            let size = part.bytes.len() as u64;
            let (id, unique) = st.store_file(Some(part.bytes.clone()), size, field);
            Ok((id, unique, part.file_name, part.bytes))
        }
        None => {
            let id = p.text(field).unwrap_or_default();
            let Some(f) = st.files.get(&id) else {
                return Err(refuse(
                    400,
                    "Bad Request: wrong file identifier/HTTP URL specified",
                ));
            };
            let bytes = f.bytes.clone().unwrap_or_default();
            Ok((id, f.unique_id.clone(), String::new(), bytes))
        }
    }
}
