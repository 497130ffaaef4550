//! Files both ways (spec §2.3, §4.5): `getFile` and the download under a size cap, and
//! multipart uploads streamed from disk (or a resend by `file_id`).

use std::path::Path;

use futures_util::StreamExt;
use reqwest::multipart::{Form, Part};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::client::{Client, envelope, network};
use crate::error::Error;
use crate::limits::{MAX_UPLOAD_FILE_BYTES, MAX_UPLOAD_PHOTO_BYTES};
use crate::method::Method;
use crate::types::{File, Message};

/// How a file goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadKind {
    /// `sendPhoto` (≤ [`MAX_UPLOAD_PHOTO_BYTES`]).
    Photo,
    /// `sendDocument` (≤ [`MAX_UPLOAD_FILE_BYTES`]).
    Document,
    /// `sendVoice` (OGG/Opus to show as a voice note).
    Voice,
    /// `sendVideo`.
    Video,
}

impl UploadKind {
    fn method(self) -> Method {
        match self {
            UploadKind::Photo => Method::SendPhoto,
            UploadKind::Document => Method::SendDocument,
            UploadKind::Voice => Method::SendVoice,
            UploadKind::Video => Method::SendVideo,
        }
    }

    /// The form field that carries the file (the method's own name for it).
    fn field(self) -> &'static str {
        match self {
            UploadKind::Photo => "photo",
            UploadKind::Document => "document",
            UploadKind::Voice => "voice",
            UploadKind::Video => "video",
        }
    }

    /// The multipart limit for this kind.
    pub fn limit(self) -> u64 {
        match self {
            UploadKind::Photo => MAX_UPLOAD_PHOTO_BYTES,
            _ => MAX_UPLOAD_FILE_BYTES,
        }
    }
}

/// A file name a sender chose, made safe to show and to use as the last part of a path:
/// directories dropped (`../../x` → `x`), control characters removed, at most 128 characters.
/// `None` when nothing usable is left.
pub fn safe_file_name(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(128).collect();
    let cleaned = cleaned.trim().trim_start_matches('.').to_owned();
    (!cleaned.is_empty()).then_some(cleaned)
}

impl Client {
    /// `getFile`: where to download `file_id` from. Over
    /// [`crate::limits::MAX_DOWNLOAD_BYTES`] the platform refuses ([`crate::Rejection::FileTooBig`]).
    pub async fn get_file(&self, file_id: &str) -> Result<File, Error> {
        self.call(Method::GetFile, &json!({"file_id": file_id}))
            .await
    }

    /// Downloads `file` to `dest` (created or truncated), at most `cap` bytes (use
    /// [`crate::limits::MAX_DOWNLOAD_BYTES`] or the inbox's smaller cap). Over the cap it stops, removes
    /// `dest` and returns [`Error::TooBig`]. Returns the bytes written. The URL holds the
    /// token and is never logged.
    pub async fn download(&self, file: &File, dest: &Path, cap: u64) -> Result<u64, Error> {
        let method = Method::DownloadFile;
        if let Some(size) = file.file_size.filter(|s| *s > cap) {
            return Err(Error::TooBig {
                method,
                size,
                limit: cap,
            });
        }
        let path = file.file_path.as_deref().ok_or(Error::Malformed {
            method,
            detail: "getFile gave no file_path".into(),
        })?;
        let url = self.file_url(path)?;
        let call = self.fetch_to(url, dest, cap);
        let result = match tokio::time::timeout(method.timeout(), call).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout {
                method,
                after: method.timeout(),
            }),
        };
        if result.is_err() {
            // A partial file must not look like a download.
            let _ = tokio::fs::remove_file(dest).await;
        }
        result
    }

    async fn fetch_to(&self, url: url::Url, dest: &Path, cap: u64) -> Result<u64, Error> {
        let method = Method::DownloadFile;
        let response = self
            .http()
            .get(url)
            .send()
            .await
            .map_err(|e| network(method, e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let bytes = response.bytes().await.map_err(|e| network(method, e))?;
            return envelope::<serde_json::Value>(method, status, &bytes)
                .and(Err(Error::Http { method, status }));
        }
        let mut out = tokio::fs::File::create(dest)
            .await
            .map_err(|e| io(method, &e))?;
        let mut written = 0u64;
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| network(method, e))?;
            written += chunk.len() as u64;
            if written > cap {
                return Err(Error::TooBig {
                    method,
                    size: written,
                    limit: cap,
                });
            }
            out.write_all(&chunk).await.map_err(|e| io(method, &e))?;
        }
        out.flush().await.map_err(|e| io(method, &e))?;
        Ok(written)
    }

    /// Uploads the file at `path` as `kind` to `chat_id`, named `file_name` (pass a safe name:
    /// the recipient sees it), with an optional plain caption (≤ 1024). A file over the kind's
    /// limit is refused here, before any byte goes out. Returns the sent message, whose
    /// `file_id` resends without another upload ([`Client::resend_file`]).
    pub async fn send_file(
        &self,
        chat_id: i64,
        kind: UploadKind,
        path: &Path,
        file_name: &str,
        caption: Option<&str>,
    ) -> Result<Message, Error> {
        let method = kind.method();
        let len = tokio::fs::metadata(path)
            .await
            .map_err(|e| io(method, &e))?
            .len();
        if len > kind.limit() {
            return Err(Error::TooBig {
                method,
                size: len,
                limit: kind.limit(),
            });
        }
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| io(method, &e))?;
        let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(file));
        let part = Part::stream_with_length(body, len).file_name(file_name.to_owned());
        let mut form = Form::new()
            .text("chat_id", chat_id.to_string())
            .part(kind.field(), part);
        if let Some(c) = caption {
            form = form.text("caption", c.to_owned());
        }
        let request = self.http().post(self.method_url(method)?).multipart(form);
        let (status, bytes) = self.send(method, request, method.timeout()).await?;
        envelope(method, status, &bytes)
    }

    /// Sends an earlier upload again by its `file_id` (no size limit, no upload).
    pub async fn resend_file(
        &self,
        chat_id: i64,
        kind: UploadKind,
        file_id: &str,
    ) -> Result<Message, Error> {
        let mut body = json!({"chat_id": chat_id});
        body[kind.field()] = json!(file_id);
        self.call(kind.method(), &body).await
    }
}

fn io(method: Method, e: &std::io::Error) -> Error {
    Error::Io {
        method,
        detail: e.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_cannot_leave_the_inbox() {
        assert_eq!(
            safe_file_name("../../etc/passwd").as_deref(),
            Some("passwd")
        );
        assert_eq!(
            safe_file_name("..\\..\\boot.ini").as_deref(),
            Some("boot.ini")
        );
        assert_eq!(safe_file_name("a\u{0}b\nc.txt").as_deref(), Some("abc.txt"));
        assert_eq!(safe_file_name(".."), None);
        assert_eq!(safe_file_name("dir/"), None);
        assert_eq!(safe_file_name(".hidden").as_deref(), Some("hidden"));
        assert_eq!(safe_file_name(&"x".repeat(500)).map(|s| s.len()), Some(128));
    }
}
