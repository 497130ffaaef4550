//! Media: the resources of received messages downloaded into a file under a size cap (streamed,
//! never held in memory), image and file uploads streamed from disk, and the image / file / audio
//! / video messages that send what was uploaded.
//!
//! Limits are the platform's: resources up to 100 MB (234037), images up to 10 MB and files up
//! to 30 MB (234006), never 0 bytes (234010). The client checks them before any byte moves.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::classify::TOKEN_INVALID_CODES;
use crate::error::Error;
use crate::response::read_json;
use crate::rest::{Client, ReceiveId, SentMessage, path_segment, sent_message};

mod format;

pub use format::{MediaMessage, disposition_name, file_type_for, image_format};

/// The largest message resource the platform serves (234037 above it).
pub const MAX_RESOURCE_BYTES: u64 = 100 << 20;
/// The largest image `POST /open-apis/im/v1/images` takes (234006 above it).
pub const MAX_IMAGE_BYTES: u64 = 10 << 20;
/// The largest file `POST /open-apis/im/v1/files` takes (234006 above it).
pub const MAX_FILE_BYTES: u64 = 30 << 20;

/// `234002` is the resource endpoint's "unauthorized" (HTTP 401): treated like a stale token.
const RESOURCE_UNAUTHORIZED: i64 = 234002;

/// A 100 MB transfer on a slow line takes minutes; the client's 30 s default would cut it.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How long a download may go without a byte (the answer's head, then each piece) before it is
/// given up as stalled, so a server that stops sending does not hold the chat for the whole
/// [`TRANSFER_TIMEOUT`].
pub const TRANSFER_IDLE: Duration = Duration::from_secs(20);

/// The error of a download that went [`TRANSFER_IDLE`] without a byte.
fn stalled() -> Error {
    Error::Network(format!(
        "the download stalled: no data for {} s",
        TRANSFER_IDLE.as_secs()
    ))
}

/// The `type` query of the resource endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    /// An image message, or an image inside a post (`image_key`).
    Image,
    /// A file, audio or video (`file_key`).
    File,
}

impl ResourceType {
    /// The query value.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceType::Image => "image",
            ResourceType::File => "file",
        }
    }

    /// Reads a query value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "image" => Some(ResourceType::Image),
            "file" => Some(ResourceType::File),
            _ => None,
        }
    }
}

/// What a download wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Bytes written to the destination.
    pub bytes: u64,
    /// The response's `Content-Type`.
    pub content_type: Option<String>,
    /// The file name from `Content-Disposition` (untrusted: never a path).
    pub file_name: Option<String>,
}

impl Client {
    /// Downloads resource `key` of received message `message_id` into `dest`, at most
    /// `max_bytes` (and never above the platform's 100 MB). The body is streamed into a temporary
    /// file beside `dest`, synced, then renamed: `dest` appears only complete, and a refused or
    /// failed download leaves nothing behind.
    pub async fn download_resource(
        &self,
        message_id: &str,
        key: &str,
        ty: ResourceType,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<Downloaded, Error> {
        let limit = max_bytes.min(MAX_RESOURCE_BYTES);
        let path = format!(
            "/open-apis/im/v1/messages/{}/resources/{}?type={}",
            path_segment(message_id)?,
            path_segment(key)?,
            ty.as_str()
        );
        let mut retried = false;
        loop {
            let token = self.tenant_token().await?;
            let resp = self
                .http()
                .request(Method::GET, format!("{}{}", self.base_url(), path))
                .bearer_auth(token.expose())
                .timeout(TRANSFER_TIMEOUT)
                .send();
            let resp = tokio::time::timeout(TRANSFER_IDLE, resp)
                .await
                .map_err(|_| stalled())??;
            // Success is HTTP 200 with the binary body; every error is a JSON envelope (400/401).
            // A JSON *file* also comes as 200, so the status decides, not the content type.
            if resp.status().as_u16() == 200 {
                return stream_to_file(resp, dest, limit).await;
            }
            let (status, value, retry_after) = read_json(resp).await?;
            let code = value.get("code").and_then(Value::as_i64).unwrap_or(-1);
            if (TOKEN_INVALID_CODES.contains(&code) || code == RESOURCE_UNAUTHORIZED) && !retried {
                self.drop_token(&token).await;
                retried = true;
                continue;
            }
            return Err(api_error(status, &value, code, retry_after));
        }
    }

    /// Uploads an image (`image_type = message`) from `path`; returns its `image_key`.
    /// Refused before sending when empty, over 10 MB, or not an image format the platform takes.
    pub async fn upload_image(&self, path: &Path) -> Result<String, Error> {
        let (len, head) = local_file(path, MAX_IMAGE_BYTES).await?;
        if image_format(&head).is_none() {
            return Err(Error::Invalid(
                "not an image format Feishu takes (JPG, PNG, WEBP, GIF, BMP, ICO, TIFF, HEIC)"
                    .into(),
            ));
        }
        let name = upload_name(path, "image");
        let data = self
            .upload(
                "/open-apis/im/v1/images",
                path,
                || Ok(Form::new().text("image_type", "message")),
                "image",
                &name,
                len,
            )
            .await?;
        key_of(&data, "image_key")
    }

    /// Uploads a file from `path` as `file_name` (its `file_type` from the extension, see
    /// [`file_type_for`]); `duration_ms` for audio and video. Returns its `file_key`.
    /// Refused before sending when empty or over 30 MB.
    pub async fn upload_file(
        &self,
        path: &Path,
        file_name: &str,
        duration_ms: Option<u64>,
    ) -> Result<String, Error> {
        let (len, _) = local_file(path, MAX_FILE_BYTES).await?;
        let file_name = file_name.to_string();
        let file_type = file_type_for(&file_name);
        let data = self
            .upload(
                "/open-apis/im/v1/files",
                path,
                || {
                    let mut form = Form::new()
                        .text("file_type", file_type)
                        .text("file_name", file_name.clone());
                    if let Some(d) = duration_ms {
                        form = form.text("duration", d.to_string());
                    }
                    Ok(form)
                },
                "file",
                &file_name,
                len,
            )
            .await?;
        key_of(&data, "file_key")
    }

    /// Sends a media message; `uuid` is the idempotency key (same uuid within 1 h = sent once).
    pub async fn send_media(
        &self,
        to: &ReceiveId,
        media: &MediaMessage,
        uuid: &str,
    ) -> Result<SentMessage, Error> {
        let (id_type, id) = match to {
            ReceiveId::OpenId(id) => ("open_id", id),
            ReceiveId::ChatId(id) => ("chat_id", id),
            ReceiveId::UnionId(id) => ("union_id", id),
        };
        let body = json!({
            "receive_id": id,
            "msg_type": media.msg_type(),
            "content": media.content_string(),
            "uuid": uuid,
        });
        let path = format!("/open-apis/im/v1/messages?receive_id_type={id_type}");
        sent_message(self.call(Method::POST, &path, Some(body)).await?)
    }

    /// Replies to `message_id` with a media message (in its thread when `in_thread`).
    pub async fn reply_media(
        &self,
        message_id: &str,
        media: &MediaMessage,
        in_thread: bool,
        uuid: &str,
    ) -> Result<SentMessage, Error> {
        let body = json!({
            "msg_type": media.msg_type(),
            "content": media.content_string(),
            "reply_in_thread": in_thread,
            "uuid": uuid,
        });
        let path = format!(
            "/open-apis/im/v1/messages/{}/reply",
            path_segment(message_id)?
        );
        sent_message(self.call(Method::POST, &path, Some(body)).await?)
    }

    /// One multipart upload: `fields()` then the file part `part` streamed from `path`; on a
    /// token-invalid code the token is refetched and the upload made once more (the file is
    /// reopened: a consumed stream cannot be replayed).
    async fn upload(
        &self,
        api: &str,
        path: &Path,
        fields: impl Fn() -> Result<Form, Error>,
        part: &'static str,
        file_name: &str,
        len: u64,
    ) -> Result<Value, Error> {
        let mut retried = false;
        loop {
            let file = tokio::fs::File::open(path).await.map_err(io)?;
            let stream = tokio_util::io::ReaderStream::new(file);
            let body = reqwest::Body::wrap_stream(stream);
            let file_part = Part::stream_with_length(body, len)
                .file_name(file_name.to_string())
                .mime_str("application/octet-stream")?;
            let form = fields()?.part(part, file_part);
            let token = self.tenant_token().await?;
            let resp = self
                .http()
                .post(format!("{}{}", self.base_url(), api))
                .bearer_auth(token.expose())
                .timeout(TRANSFER_TIMEOUT)
                .multipart(form)
                .send()
                .await?;
            // An HTML 400 from the edge CDN comes back as `Error::Http` (retried as transient).
            let (status, mut value, retry_after) = read_json(resp).await?;
            let code = value.get("code").and_then(Value::as_i64).unwrap_or(-1);
            if code == 0 {
                return Ok(value
                    .get_mut("data")
                    .map(Value::take)
                    .unwrap_or(Value::Null));
            }
            if (TOKEN_INVALID_CODES.contains(&code) || code == RESOURCE_UNAUTHORIZED) && !retried {
                self.drop_token(&token).await;
                retried = true;
                continue;
            }
            return Err(api_error(status, &value, code, retry_after));
        }
    }
}

fn api_error(status: u16, value: &Value, code: i64, retry_after: Option<Duration>) -> Error {
    let code = if code == -1 && status == 429 {
        99991400
    } else {
        code
    };
    Error::Api {
        code,
        msg: value
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        http_status: status,
        retry_after,
    }
}

fn key_of(data: &Value, field: &str) -> Result<String, Error> {
    data.get(field)
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .map(String::from)
        .ok_or_else(|| Error::Decode(format!("upload response without {field}")))
}

fn io(e: std::io::Error) -> Error {
    Error::Io(e.kind().to_string())
}

/// The size and first bytes of a file to upload, after the platform's size checks.
async fn local_file(path: &Path, limit: u64) -> Result<(u64, Vec<u8>), Error> {
    use tokio::io::AsyncReadExt;
    let meta = tokio::fs::metadata(path).await.map_err(io)?;
    if !meta.is_file() {
        return Err(Error::Io("not a regular file".into()));
    }
    let len = meta.len();
    if len == 0 {
        return Err(Error::Invalid("the file is empty (0 bytes)".into()));
    }
    if len > limit {
        return Err(Error::TooLarge { limit });
    }
    let mut head = vec![0u8; 16];
    let mut f = tokio::fs::File::open(path).await.map_err(io)?;
    let n = f.read(&mut head).await.map_err(io)?;
    head.truncate(n);
    Ok((len, head))
}

/// The file name the platform sees: the path's own name, or `fallback`.
fn upload_name(path: &Path, fallback: &str) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(fallback)
        .to_string()
}

/// Streams a 200 response into `dest` through a temporary sibling, refusing above `limit`.
async fn stream_to_file(
    mut resp: reqwest::Response,
    dest: &Path,
    limit: u64,
) -> Result<Downloaded, Error> {
    // A declared length over the limit is refused before a byte is read.
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(Error::TooLarge { limit });
    }
    let header = |k: &str| {
        resp.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let content_type = header("content-type");
    let file_name = header("content-disposition").and_then(|d| disposition_name(&d));
    let part = part_path(dest);
    let result = async {
        let mut out = tokio::fs::File::create(&part).await.map_err(io)?;
        let mut written: u64 = 0;
        while let Some(chunk) = tokio::time::timeout(TRANSFER_IDLE, resp.chunk())
            .await
            .map_err(|_| stalled())??
        {
            written += chunk.len() as u64;
            // A body longer than it said, or than the limit: stop reading at once.
            if written > limit {
                return Err(Error::TooLarge { limit });
            }
            out.write_all(&chunk).await.map_err(io)?;
        }
        out.sync_all().await.map_err(io)?;
        Ok(written)
    }
    .await;
    match result {
        Ok(bytes) => {
            tokio::fs::rename(&part, dest).await.map_err(|e| {
                let _ = std::fs::remove_file(&part);
                io(e)
            })?;
            Ok(Downloaded {
                bytes,
                content_type,
                file_name,
            })
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&part).await;
            Err(e)
        }
    }
}

/// `dest`'s temporary sibling while it downloads.
fn part_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.{:08x}.part", rand::random::<u32>()))
}
