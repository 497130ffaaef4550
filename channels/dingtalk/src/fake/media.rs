//! The fake's media routes: `media/upload` (old API, multipart, type and size table),
//! `messageFiles/download` (download codes to short-lived URLs), and the URLs themselves.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::http::gate;
use super::records::UploadRecord;
use super::state::{Shared, api_error, errcode, fault_response, ok};
use crate::call::Call;
use crate::media::MediaKind;

type S = State<Arc<Shared>>;

/// Size errcode of `media/upload` (unconfirmed: the spec names only 40004 for a bad type).
pub const UPLOAD_TOO_LARGE: i64 = 40006;

fn kind(s: &str) -> Option<MediaKind> {
    [
        MediaKind::Image,
        MediaKind::Voice,
        MediaKind::Video,
        MediaKind::File,
    ]
    .into_iter()
    .find(|k| k.as_str() == s)
}

/// `POST /media/upload?access_token=…`.
pub(crate) async fn upload(
    State(sh): S,
    Query(q): Query<HashMap<String, String>>,
    multipart: Multipart,
) -> Response {
    let token = q.get("access_token").cloned().unwrap_or_default();
    sh.lock().count(Call::Upload);
    let live = sh
        .lock()
        .tokens
        .get(&token)
        .is_some_and(|e| Instant::now() < *e);
    if !live {
        return errcode(40014, "不合法的access_token");
    }
    let fault = sh.lock().fault(Call::Upload);
    if let Some(f) = &fault
        && let Some(r) = fault_response(f).await
    {
        return r;
    }
    let Some((media_type, file_name, data)) = read_form(multipart).await else {
        return errcode(40035, "不合法的参数");
    };
    let Some(k) = kind(&media_type) else {
        return errcode(40004, "不合法的媒体文件类型");
    };
    let ext = file_name
        .rsplit_once('.')
        .map(|(_, e)| e.to_lowercase())
        .unwrap_or_default();
    if !k.extensions().contains(&ext.as_str()) {
        return errcode(40004, "不合法的媒体文件类型");
    }
    if data.len() as u64 > sh.config.upload_limit(k) {
        return errcode(UPLOAD_TOO_LARGE, "不合法的文件大小");
    }
    let mut st = sh.lock();
    let media_id = format!("@lA{:016x}", rand::random::<u64>());
    st.uploads.push(UploadRecord {
        media_type,
        file_name,
        size: data.len(),
        media_id: media_id.clone(),
    });
    ok(
        json!({"errcode": 0, "errmsg": "ok", "type": k.as_str(), "media_id": media_id, "created_at": 1}),
    )
}

/// `type` and the `media` part (name and bytes), or `None` when either is missing.
async fn read_form(mut multipart: Multipart) -> Option<(String, String, Bytes)> {
    let (mut media_type, mut media) = (None, None);
    while let Ok(Some(field)) = multipart.next_field().await {
        match field.name() {
            Some("type") => media_type = field.text().await.ok(),
            Some("media") => {
                let name = field.file_name().unwrap_or_default().to_string();
                media = field.bytes().await.ok().map(|b| (name, b));
            }
            _ => {}
        }
    }
    let (name, bytes) = media?;
    Some((media_type?, name, bytes))
}

/// `POST /v1.0/robot/messageFiles/download`: a known code and the right robot code.
pub(crate) async fn download(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = gate(&sh, &headers, Call::Download).await {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if v["robotCode"] != sh.config.client_id.as_str() {
        return api_error(400, "resource.not.found", "robot 不存在");
    }
    let code = v["downloadCode"].as_str().unwrap_or_default();
    let mut st = sh.lock();
    if !st.media.contains_key(code) {
        return api_error(
            400,
            "invalidParameter.downloadCode.invalid",
            "downloadCode is invalid",
        );
    }
    let key = format!("f{}-{:016x}", st.next(), rand::random::<u64>());
    let expires = Instant::now() + sh.config.download_url_lifetime;
    st.download_urls
        .insert(key.clone(), (code.to_string(), expires));
    ok(json!({"downloadUrl": format!("{}/files/{key}", sh.base_url)}))
}

/// `GET /files/{key}`: the bytes while the URL lives, 403 after.
pub(crate) async fn file(State(sh): S, Path(key): Path<String>) -> Response {
    let st = sh.lock();
    let Some((code, expires)) = st.download_urls.get(&key) else {
        return (StatusCode::NOT_FOUND, "no such object").into_response();
    };
    if Instant::now() >= *expires {
        return (
            StatusCode::FORBIDDEN,
            "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
        )
            .into_response();
    }
    match st.media.get(code) {
        Some((bytes, _)) => (StatusCode::OK, bytes.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "no such object").into_response(),
    }
}
