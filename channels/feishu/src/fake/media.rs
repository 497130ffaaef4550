//! The fake's media: image and file uploads (multipart, with the platform's field names, size
//! and type limits and codes), the message-resource endpoint serving only what it handed out,
//! received media messages for tests to push, and media sends kept with their bytes.
//!
//! Where the platform's answer is unconfirmed the fake refuses (strict beats lenient: a client
//! that passes here does not lean on a leniency the real server may not have).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::records::Pushed;
use super::reply::{Refusal, authorize, err, ok};
use super::state::Shared;
use crate::media::{
    MAX_FILE_BYTES, MAX_IMAGE_BYTES, MAX_RESOURCE_BYTES, ResourceType, image_format,
};

mod push;

/// Uploads bigger than this are cut off by the server before the handler sees them.
const BODY_LIMIT: usize = 64 << 20;

/// File types `POST /open-apis/im/v1/files` takes.
const FILE_TYPES: [&str; 7] = ["opus", "mp4", "pdf", "doc", "xls", "ppt", "stream"];

/// Message types whose resources cannot be downloaded (234043 for cards and merge-forwards;
/// stickers and folders likewise have no downloadable resource).
const NOT_DOWNLOADABLE: [&str; 4] = ["interactive", "merge_forward", "sticker", "folder"];

/// One accepted upload.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    /// The key handed out (`img_v2_…` or `file_v2_…`).
    pub key: String,
    /// `image` or `file`.
    pub kind: &'static str,
    /// `file_type` of a file upload.
    pub file_type: Option<String>,
    /// `file_name` of a file upload.
    pub file_name: Option<String>,
    /// `duration` of a file upload, as sent.
    pub duration: Option<String>,
    /// The uploaded bytes.
    pub bytes: Bytes,
}

/// One image / file / audio / video message the app sent, with what its key was uploaded as.
#[derive(Debug, Clone, PartialEq)]
pub struct SentMedia {
    /// The new `om_…` id.
    pub message_id: String,
    /// `image`, `file`, `audio` or `media`.
    pub msg_type: String,
    /// The `uuid` it was sent with.
    pub uuid: Option<String>,
    /// The upload its `image_key` / `file_key` names.
    pub upload: Upload,
}

/// A pushed media message and the resource keys it carries, in content order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedMedia {
    /// The event and IM ids.
    pub pushed: Pushed,
    /// `image_key` / `file_key` values of its resources.
    pub keys: Vec<String>,
}

/// A resource of a received message.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    ty: ResourceType,
    bytes: Bytes,
    name: Option<String>,
    mime: String,
    /// Declared over 100 MB by a test (234037) without holding 100 MB.
    oversized: bool,
}

/// The fake's media state.
#[derive(Debug, Default)]
pub(crate) struct MediaState {
    uploads: HashMap<String, Upload>,
    upload_order: Vec<String>,
    resources: HashMap<(String, String), Resource>,
    resource_failure: Option<i64>,
    upload_failure: Option<i64>,
    unsized_resources: bool,
    resource_requests: usize,
    upload_requests: usize,
}

/// The media routes, with a body limit above the 30 MB file limit so the handler can answer
/// 234006 itself.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/open-apis/im/v1/images", post(upload_image))
        .route("/open-apis/im/v1/files", post(upload_file))
        .route(
            "/open-apis/im/v1/messages/{id}/resources/{key}",
            get(resource),
        )
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

/// The multipart request read: text fields and the one file part (`None` when absent).
struct Parts {
    fields: HashMap<String, String>,
    file: Option<Bytes>,
    too_large: bool,
}

/// Reads every field; the file part `file_field` is kept up to `limit` bytes, the rest drained.
async fn read_parts(mp: &mut Multipart, file_field: &str, limit: u64) -> Result<Parts, Refusal> {
    let bad = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            (234006, "file too large")
        } else {
            (234001, "invalid multipart body")
        }
    };
    let mut parts = Parts {
        fields: HashMap::new(),
        file: None,
        too_large: false,
    };
    while let Some(mut field) = mp.next_field().await.map_err(bad)? {
        let name = field.name().unwrap_or_default().to_string();
        if name == file_field {
            let mut buf = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(bad)? {
                if buf.len() as u64 + chunk.len() as u64 > limit {
                    // Keep reading (and dropping) so the client gets the answer, not a reset.
                    parts.too_large = true;
                    continue;
                }
                buf.extend_from_slice(&chunk);
            }
            parts.file = Some(Bytes::from(buf));
        } else {
            let text = field.text().await.map_err(bad)?;
            parts.fields.insert(name, text);
        }
    }
    Ok(parts)
}

async fn upload_image(
    State(sh): State<Arc<Shared>>,
    headers: HeaderMap,
    mut mp: Multipart,
) -> Response {
    sh.lock().media.upload_requests += 1;
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    // The body is read before the refusal, as a server answers a whole request: refusing
    // mid-upload reset the connection under the client's body, which it saw as a network error.
    let parts = match read_parts(&mut mp, "image", MAX_IMAGE_BYTES).await {
        Ok(p) => p,
        Err((code, msg)) => return err(code, msg),
    };
    let failure = sh.lock().media.upload_failure;
    if let Some(code) = failure {
        return err(code, "fake upload failure");
    }
    let image_type = parts.fields.get("image_type").map(String::as_str);
    if !matches!(image_type, Some("message" | "avatar")) {
        return err(234001, "image_type must be message or avatar");
    }
    let Some(bytes) = parts.file else {
        return err(234001, "the image field is required");
    };
    if parts.too_large {
        return err(234006, "image larger than 10 MB");
    }
    if bytes.is_empty() {
        return err(234010, "the image is empty");
    }
    if image_format(&bytes).is_none() {
        return err(234011, "unrecognised image format");
    }
    store_upload(&sh, "image", None, None, None, bytes)
}

async fn upload_file(
    State(sh): State<Arc<Shared>>,
    headers: HeaderMap,
    mut mp: Multipart,
) -> Response {
    sh.lock().media.upload_requests += 1;
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    // The body is read before the refusal, as a server answers a whole request: refusing
    // mid-upload reset the connection under the client's body, which it saw as a network error.
    let parts = match read_parts(&mut mp, "file", MAX_FILE_BYTES).await {
        Ok(p) => p,
        Err((code, msg)) => return err(code, msg),
    };
    let failure = sh.lock().media.upload_failure;
    if let Some(code) = failure {
        return err(code, "fake upload failure");
    }
    let file_type = parts.fields.get("file_type").cloned().unwrap_or_default();
    if !FILE_TYPES.contains(&file_type.as_str()) {
        return err(
            234001,
            "file_type must be opus, mp4, pdf, doc, xls, ppt or stream",
        );
    }
    let Some(file_name) = parts
        .fields
        .get("file_name")
        .filter(|n| !n.is_empty())
        .cloned()
    else {
        return err(234001, "file_name is required");
    };
    let duration = parts.fields.get("duration").cloned();
    if duration
        .as_deref()
        .is_some_and(|d| d.parse::<u64>().is_err())
    {
        return err(234001, "duration must be milliseconds");
    }
    let Some(bytes) = parts.file else {
        return err(234001, "the file field is required");
    };
    if parts.too_large {
        return err(234006, "file larger than 30 MB");
    }
    if bytes.is_empty() {
        return err(234010, "the file is empty");
    }
    // An `opus` upload must be Ogg Opus (spec B7): `OggS`, its first packet `OpusHead`. The
    // platform's own check is unconfirmed; refusing is what a faithful fake may do.
    if file_type == "opus" && !(bytes.starts_with(b"OggS") && ogg_opus_head(&bytes)) {
        return err(234001, "Invalid request param: opus file is not Ogg Opus");
    }
    store_upload(
        &sh,
        "file",
        Some(file_type),
        Some(file_name),
        duration,
        bytes,
    )
}

/// Whether the first Ogg page's first packet is `OpusHead` (the page header is 27 bytes plus
/// one lacing byte per segment).
fn ogg_opus_head(bytes: &[u8]) -> bool {
    let Some(&segments) = bytes.get(26) else {
        return false;
    };
    let start = 27 + usize::from(segments);
    bytes.get(start..start + 8) == Some(&b"OpusHead"[..])
}

fn store_upload(
    sh: &Shared,
    kind: &'static str,
    file_type: Option<String>,
    file_name: Option<String>,
    duration: Option<String>,
    bytes: Bytes,
) -> Response {
    let mut st = sh.lock();
    let n = st.next();
    let (key, field) = match kind {
        "image" => (format!("img_v2_fake{n}"), "image_key"),
        _ => (format!("file_v2_fake{n}"), "file_key"),
    };
    st.media.upload_order.push(key.clone());
    st.media.uploads.insert(
        key.clone(),
        Upload {
            key: key.clone(),
            kind,
            file_type,
            file_name,
            duration,
            bytes,
        },
    );
    ok(json!({ field: key }))
}

/// An error of the resource endpoint: HTTP 400 JSON, except 234002 which is 401.
fn resource_err(code: i64, msg: &str) -> Response {
    if code == 234002 {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"code": code, "msg": msg})),
        )
            .into_response();
    }
    err(code, msg)
}

async fn resource(
    State(sh): State<Arc<Shared>>,
    Path((id, key)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    sh.lock().media.resource_requests += 1;
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let Some(ty) = q.get("type").and_then(|t| ResourceType::parse(t)) else {
        return resource_err(234001, "type must be image or file");
    };
    let st = sh.lock();
    if let Some(code) = st.media.resource_failure {
        return resource_err(code, "fake resource failure");
    }
    // An unknown message has no such key either (the platform's exact code is unconfirmed).
    let Some(msg) = st.messages.get(&id) else {
        return resource_err(234003, "file_key is not in this message");
    };
    if msg.recalled {
        return resource_err(230110, "the message was deleted");
    }
    if NOT_DOWNLOADABLE.contains(&msg.msg_type.as_str()) {
        return resource_err(234043, "unsupported message type");
    }
    let Some(r) = st.media.resources.get(&(id.clone(), key)) else {
        return resource_err(234003, "file_key is not in this message");
    };
    // An image asked as a file (or the reverse) is refused: code unconfirmed, strict here.
    if r.ty != ty {
        return resource_err(234001, "type does not match the resource");
    }
    if r.oversized || r.bytes.len() as u64 > MAX_RESOURCE_BYTES {
        return resource_err(234037, "the resource is larger than 100 MB");
    }
    let name = r.name.clone().unwrap_or_else(|| "resource".into());
    let disposition = format!(
        "attachment; filename=\"{}\"; filename*=UTF-8''{}",
        // The plain form is ASCII only (header values are); the extended form has it all.
        name.chars()
            .map(
                |c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                    c
                } else {
                    '_'
                }
            )
            .collect::<String>(),
        percent_encode(&name)
    );
    let mut resp = if st.media.unsized_resources {
        // No Content-Length: the client has to count what it reads.
        let chunks: Vec<Result<Bytes, std::io::Error>> = r
            .bytes
            .chunks(64 * 1024)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        Body::from_stream(futures_util::stream::iter(chunks)).into_response()
    } else {
        Body::from(r.bytes.clone()).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = r.mime.parse() {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = disposition.parse() {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    resp
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Checks the content of a media message against what was uploaded: an image names an image
/// upload, a file any file upload, audio an `opus` upload, media an `mp4` upload (and its
/// optional cover an image). The platform's code for a bad key is unconfirmed; 230001 here.
pub(crate) fn check_content(
    m: &MediaState,
    msg_type: &str,
    content: &Value,
) -> Result<(), Refusal> {
    let key = |field: &str| content.get(field).and_then(Value::as_str);
    let upload =
        |k: Option<&str>, kind: &str| k.and_then(|k| m.uploads.get(k)).filter(|u| u.kind == kind);
    let file_of_type = |want: Option<&str>| {
        upload(key("file_key"), "file")
            .filter(|u| want.is_none() || u.file_type.as_deref() == want)
            .is_some()
    };
    let fine = match msg_type {
        "image" => upload(key("image_key"), "image").is_some(),
        "file" => file_of_type(None),
        "audio" => file_of_type(Some("opus")),
        "media" => {
            file_of_type(Some("mp4"))
                && key("image_key").is_none_or(|_| upload(key("image_key"), "image").is_some())
        }
        _ => true,
    };
    if fine {
        Ok(())
    } else {
        Err((
            230001,
            "invalid content: the key was not uploaded as this type",
        ))
    }
}
