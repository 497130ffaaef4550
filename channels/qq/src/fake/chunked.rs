//! The fake's chunked upload (§8.8): `upload_prepare` hands out loopback presigned URLs, blocks
//! are `PUT` there, `upload_part_finish` checks each block's size and MD5 (answering `40093001`
//! while the `part_busy` knob lasts), and `files {upload_id}` checks the whole file's MD5 before
//! it issues a `file_info`. A used-up daily quota answers `40093002`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use md5::{Digest, Md5};
use serde_json::{Value, json};

use super::http::{reject, unauthorized};
use super::records::{FAKE_FILE_TOO_LARGE, UploadRecord};
use super::state::{Chunked, Scope, Shared, State as FakeState};

type Refusal = (u16, i64, &'static str);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `POST /v2/users/{openid}/upload_prepare`.
pub(crate) async fn prepare_user(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    prepare(sh, Scope::User(id), h, b)
}

/// `POST /v2/groups/{group_openid}/upload_prepare`.
pub(crate) async fn prepare_group(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    prepare(sh, Scope::Group(id), h, b)
}

fn prepare(
    State(sh): State<Arc<Shared>>,
    scope: Scope,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut st = sh.lock();
    match start(&mut st, scope, &v) {
        Ok(answer) => axum::Json(answer).into_response(),
        Err((status, code, why)) => {
            drop(st);
            reject(&sh, "upload", status, code, why)
        }
    }
}

fn start(st: &mut FakeState, scope: Scope, v: &Value) -> Result<Value, Refusal> {
    if st.upload_quota_used {
        return Err((400, 40093002, "daily upload quota used up"));
    }
    let size = v.get("file_size").and_then(Value::as_u64).unwrap_or(0) as usize;
    let md5 = v.get("md5").and_then(Value::as_str).unwrap_or("");
    let sha1_ok = v
        .get("sha1")
        .and_then(Value::as_str)
        .is_some_and(|s| s.len() == 40);
    let md5_10m_ok = v
        .get("md5_10m")
        .and_then(Value::as_str)
        .is_some_and(|s| s.len() == 32);
    if size == 0 || md5.len() != 32 || !sha1_ok || !md5_10m_ok {
        return Err((400, 0, "file_size, md5, sha1 and md5_10m are required"));
    }
    if size as u64 > st.cfg.max_chunked_bytes {
        return Err((400, FAKE_FILE_TOO_LARGE, "file too large"));
    }
    let block = st.cfg.chunk_block_size.max(1) as usize;
    let count = size.div_ceil(block);
    let upload_id = format!("FAKE_UPLOAD_{}", st.next());
    let parts: Vec<Value> = (1..=count)
        .map(|i| json!({"index": i, "presigned_url": format!("{}/fake-blocks/{upload_id}/{i}", st.base_url)}))
        .collect();
    let file_type = v.get("file_type").and_then(Value::as_i64).unwrap_or(0);
    let upload = Chunked {
        scope,
        file_type,
        size,
        md5: md5.to_owned(),
        block,
        blocks: vec![None; count],
        finished: vec![false; count],
    };
    st.chunked.insert(upload_id.clone(), upload);
    Ok(
        json!({"upload_id": upload_id, "block_size": block, "parts": parts, "concurrency": 1, "retry_timeout": 5}),
    )
}

/// `PUT /fake-blocks/{upload_id}/{index}`: a presigned URL, so no Authorization.
pub(crate) async fn put_block(
    State(sh): State<Arc<Shared>>,
    Path((id, index)): Path<(String, usize)>,
    body: Bytes,
) -> Response {
    let mut st = sh.lock();
    let slot = st
        .chunked
        .get_mut(&id)
        .and_then(|u| index.checked_sub(1).and_then(|i| u.blocks.get_mut(i)));
    match slot {
        Some(slot) => {
            *slot = Some(body.to_vec());
            StatusCode::OK.into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `POST /v2/users/{openid}/upload_part_finish`.
pub(crate) async fn finish_user(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    finish(sh, Scope::User(id), h, b)
}

/// `POST /v2/groups/{group_openid}/upload_part_finish`.
pub(crate) async fn finish_group(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    finish(sh, Scope::Group(id), h, b)
}

fn finish(
    State(sh): State<Arc<Shared>>,
    scope: Scope,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut st = sh.lock();
    match finish_part(&mut st, &scope, &v) {
        Ok(()) => axum::Json(json!({})).into_response(),
        Err((status, code, why)) => {
            drop(st);
            reject(&sh, "upload", status, code, why)
        }
    }
}

fn finish_part(st: &mut FakeState, scope: &Scope, v: &Value) -> Result<(), Refusal> {
    let id = v.get("upload_id").and_then(Value::as_str).unwrap_or("");
    let index = v.get("part_index").and_then(Value::as_u64).unwrap_or(0) as usize;
    let busy = st.part_busy > 0;
    let upload = st.chunked.get_mut(id).filter(|u| u.scope == *scope);
    let upload = upload.ok_or((400, 0, "unknown upload_id"))?;
    let Some(Some(block)) = index.checked_sub(1).and_then(|i| upload.blocks.get(i)) else {
        return Err((400, 0, "part not uploaded"));
    };
    let size_ok = v.get("block_size").and_then(Value::as_u64) == Some(block.len() as u64);
    let md5_ok = v.get("md5").and_then(Value::as_str) == Some(hex(&Md5::digest(block)).as_str());
    if !size_ok || !md5_ok {
        return Err((400, 0, "part size or md5 does not match"));
    }
    if busy {
        st.part_busy -= 1;
        return Err((400, 40093001, "part not ready, retry"));
    }
    upload.finished[index - 1] = true;
    Ok(())
}

/// `files {upload_id}`: every part finished and the whole file's MD5 as declared.
pub(crate) fn complete(
    st: &mut FakeState,
    scope: &Scope,
    v: &Value,
) -> Result<UploadRecord, (u16, i64, String)> {
    let id = v.get("upload_id").and_then(Value::as_str).unwrap_or("");
    let no = |why: &str| (400, 0, why.to_owned());
    let upload = st
        .chunked
        .get(id)
        .filter(|u| u.scope == *scope)
        .ok_or_else(|| no("unknown upload_id"))?;
    if !upload.finished.iter().all(|f| *f) {
        return Err(no("not every part is finished"));
    }
    let data: Vec<u8> = upload.blocks.iter().flatten().flatten().copied().collect();
    if data.len() != upload.size || hex(&Md5::digest(&data)) != upload.md5 || upload.block == 0 {
        return Err(no("the assembled file does not match its md5"));
    }
    let file_type = upload.file_type;
    st.chunked.remove(id);
    let file_info = format!("FAKE_FILE_INFO_{}", st.next());
    Ok(UploadRecord {
        to: scope.name(),
        file_type,
        data_len: Some(data.len()),
        url: None,
        file_info,
    })
}
