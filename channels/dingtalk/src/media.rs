//! Media (spec §4.5): uploads through the old API (`media/upload`, multipart) and downloads of
//! what users send (`messageFiles/download` gives a short-lived URL; the file is written under
//! a size cap). File names from the wire are untrusted: [`safe_file_name`].

use std::path::Path;

use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::call::Call;
use crate::client::Client;
use crate::error::Error;
use crate::http::field;
use crate::limits::{MEDIA_MAX_BYTES, VOICE_MAX_BYTES};

/// Path of uploads on the old-API base.
pub const UPLOAD_PATH: &str = "/media/upload";
/// Path of download-URL requests on the new-API base.
pub const DOWNLOAD_PATH: &str = "/v1.0/robot/messageFiles/download";

/// The upload `type` (spec §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// jpg/gif/png/bmp, 20 MB.
    Image,
    /// amr/mp3/wav, 2 MB.
    Voice,
    /// mp4, 20 MB.
    Video,
    /// doc(x)/xls(x)/ppt(x)/zip/pdf/rar, 20 MB.
    File,
}

impl MediaKind {
    /// The `type` field.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Voice => "voice",
            MediaKind::Video => "video",
            MediaKind::File => "file",
        }
    }

    /// The platform's size limit.
    pub fn max_bytes(self) -> u64 {
        match self {
            MediaKind::Voice => VOICE_MAX_BYTES,
            _ => MEDIA_MAX_BYTES,
        }
    }

    /// Extensions the platform takes for this kind (others get errcode 40004).
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            MediaKind::Image => &["jpg", "jpeg", "gif", "png", "bmp"],
            MediaKind::Voice => &["amr", "mp3", "wav"],
            MediaKind::Video => &["mp4"],
            MediaKind::File => &[
                "doc", "docx", "xls", "xlsx", "ppt", "pptx", "zip", "pdf", "rar",
            ],
        }
    }
}

/// A file written by [`Client::download`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Bytes written.
    pub bytes: u64,
}

impl Client {
    /// Uploads a local file; returns its `media_id` (`@…`). Files over the kind's limit are
    /// refused before any byte is sent.
    pub async fn upload(&self, path: &Path, kind: MediaKind) -> Result<String, Error> {
        let io = |e: std::io::Error| Error::Io(e.kind().to_string());
        let len = tokio::fs::metadata(path).await.map_err(io)?.len();
        if len > kind.max_bytes() {
            return Err(Error::TooLarge {
                what: "the upload",
                limit: kind.max_bytes(),
            });
        }
        let data = bytes::Bytes::from(tokio::fs::read(path).await.map_err(io)?);
        let name = safe_file_name(
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default(),
            "upload",
        );
        let v = self
            .oapi(Call::Upload, UPLOAD_PATH, |req| {
                let part = Part::stream(data.clone()).file_name(name.clone());
                let form = Form::new().text("type", kind.as_str()).part("media", part);
                Ok(req.multipart(form))
            })
            .await?;
        Ok(field(Call::Upload, &v, "media_id")?.to_string())
    }

    /// Downloads what a user sent (its `downloadCode`) to `dest`, at most `cap` bytes; over
    /// the cap, the partial file is removed and the error is [`Error::TooLarge`].
    pub async fn download(
        &self,
        download_code: &str,
        dest: &Path,
        cap: u64,
    ) -> Result<Downloaded, Error> {
        let body = json!({"downloadCode": download_code, "robotCode": self.robot_code()});
        let v = self
            .api(Call::Download, Method::POST, DOWNLOAD_PATH, &body)
            .await?;
        let url = field(Call::Download, &v, "downloadUrl")?.to_string();
        let written = self.fetch_to(&url, dest, cap).await;
        if written.is_err() {
            let _ = tokio::fs::remove_file(dest).await;
        }
        written
    }

    async fn fetch_to(&self, url: &str, dest: &Path, cap: u64) -> Result<Downloaded, Error> {
        let call = Call::DownloadUrl;
        let timeout = self.options().timeout;
        // No token header: the URL is pre-signed and may be on another host.
        let mut resp = self
            .inner
            .http
            .request(Method::GET, url)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| crate::error::network(call, e, timeout))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(Error::Http {
                call,
                status,
                retry_after: None,
            });
        }
        let io = |e: std::io::Error| Error::Io(e.kind().to_string());
        let mut file = tokio::fs::File::create(dest).await.map_err(io)?;
        let mut bytes = 0u64;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| crate::error::network(call, e, timeout))?
        {
            bytes += chunk.len() as u64;
            if bytes > cap {
                return Err(Error::TooLarge {
                    what: "the download",
                    limit: cap,
                });
            }
            file.write_all(&chunk).await.map_err(io)?;
        }
        file.flush().await.map_err(io)?;
        Ok(Downloaded { bytes })
    }
}

/// A file name safe to join under an inbox directory: the last path component only, no
/// control characters, no leading dots, at most 100 characters; `fallback` when nothing is left.
pub fn safe_file_name(name: &str, fallback: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, ':' | '*' | '?' | '"' | '<' | '>' | '|'))
        .take(100)
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim().to_string();
    if cleaned.is_empty() {
        fallback.to_string()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_in_the_inbox() {
        assert_eq!(safe_file_name("../../etc/passwd", "f"), "passwd");
        assert_eq!(safe_file_name("..\\..\\boot.ini", "f"), "boot.ini");
        assert_eq!(safe_file_name("..", "f"), "f");
        assert_eq!(safe_file_name("/", "f"), "f");
        assert_eq!(safe_file_name(".hidden", "f"), "hidden");
        assert_eq!(safe_file_name("报告\u{0}.pdf", "f"), "报告.pdf");
        assert_eq!(safe_file_name(&"a".repeat(500), "f").len(), 100);
    }
}
