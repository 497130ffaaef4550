//! The fake's media host (§7.10): each pushed media item is served encrypted with its own
//! key, with a UTF-8 file name in `Content-Disposition`, until its URL expires (then 404).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::state::Shared;

/// `GET /media/{id}`.
pub(crate) async fn serve(State(sh): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let hosted = {
        let mut st = sh.lock();
        let h = st.hosted.get(&id).cloned();
        let h = h.filter(|h| Instant::now() < h.expires);
        st.media_served += usize::from(h.is_some());
        h
    };
    sh.touch();
    let Some(h) = hosted else {
        return (StatusCode::NOT_FOUND, "expired or unknown").into_response();
    };
    let mut resp = (StatusCode::OK, h.body).into_response();
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/octet-stream"),
    );
    if let Some(d) = h
        .disposition
        .and_then(|d| header::HeaderValue::from_str(&d).ok())
    {
        headers.insert(header::CONTENT_DISPOSITION, d);
    }
    resp
}

/// `filename*=UTF-8''…` with every non-unreserved byte percent-encoded.
pub(crate) fn disposition(name: &str) -> String {
    let enc: String = name
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("attachment; filename*=UTF-8''{enc}")
}
