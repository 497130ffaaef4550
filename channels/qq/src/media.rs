//! Rich media (§4.4): upload per target kind (`srv_send_msg: false`, then a `msg_type` 7 reply
//! with the `file_info`), and inbound attachments downloaded at once under a size cap (§2.1: the
//! URL's lifetime is unknown). Files over [`MAX_INLINE_UPLOAD_BYTES`] go through [`crate::chunked`], up to [`MAX_UPLOAD_BYTES`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use reqwest::Method;
use serde_json::{Value, json};

use crate::answer::{read_capped, status_error};
use crate::client::Client;
use crate::error::{Call, Error};
use crate::limits::{MAX_INLINE_UPLOAD_BYTES, MAX_UPLOAD_BYTES};
use crate::send::Target;

/// `file_type` of an upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FileType {
    /// png/jpg.
    Image = 1,
    /// mp4.
    Video = 2,
    /// silk (the Tencent plugin also sends wav/mp3).
    Voice = 3,
    /// Any file ("not open" in the doc, used by 2026 clients with `file_name`).
    File = 4,
}

/// Where the platform gets the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaSource {
    /// The platform fetches this URL.
    Url(String),
    /// The bytes, sent base64 as `file_data`.
    Data(Vec<u8>),
}

/// An uploaded file, to be sent with [`crate::Body::Media`] to the same kind of target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    /// `file_uuid`.
    pub file_uuid: String,
    /// `file_info`, the handle a media message carries.
    pub file_info: String,
    /// Seconds the handle lives; 0 = long-lived.
    pub ttl: u64,
}

impl Client {
    /// Uploads media for `target` without sending it (`srv_send_msg: true` would be an active
    /// message, refused since 2025, §4.4).
    pub async fn upload(
        &self,
        target: &Target,
        file_type: FileType,
        source: &MediaSource,
        file_name: Option<&str>,
    ) -> Result<Uploaded, Error> {
        let base = target.base_path().ok_or(Error::Invalid {
            call: Call::Upload,
            detail: "the target id is not a platform id",
        })?;
        let mut body = json!({"file_type": file_type as u8, "srv_send_msg": false});
        match source {
            MediaSource::Url(url) => body["url"] = json!(url),
            MediaSource::Data(bytes) if bytes.len() as u64 > MAX_UPLOAD_BYTES => {
                return Err(Error::TooLarge {
                    call: Call::Upload,
                    limit: MAX_UPLOAD_BYTES,
                });
            }
            MediaSource::Data(bytes) if bytes.len() as u64 > MAX_INLINE_UPLOAD_BYTES => {
                return self
                    .upload_chunked(&base, file_type, bytes, file_name)
                    .await;
            }
            MediaSource::Data(bytes) => body["file_data"] = json!(B64.encode(bytes)),
        }
        if let Some(name) = file_name {
            body["file_name"] = json!(name);
        }
        let v = self
            .call(
                Call::Upload,
                Method::POST,
                &format!("{base}/files"),
                Some(&body),
            )
            .await?;
        read_uploaded(&v)
    }

    /// Downloads an inbound attachment with a plain GET, refusing one over `cap` bytes. A URL
    /// without a scheme gets [`crate::ClientOptions::attachment_scheme`] (§2.1).
    pub async fn download(&self, url: &str, cap: u64) -> Result<Vec<u8>, Error> {
        let url = full_url(url, &self.options.attachment_scheme);
        let resp = self
            .http
            .get(url)
            .timeout(crate::limits::API_TIMEOUT * 6)
            .send()
            .await
            .map_err(|e| Error::network(Call::Download, e))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(status_error(Call::Download, status));
        }
        read_capped(Call::Download, resp, cap).await
    }
}

/// Reads a `files` answer.
pub(crate) fn read_uploaded(v: &Value) -> Result<Uploaded, Error> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let Some(file_info) = text("file_info").filter(|s| !s.is_empty()) else {
        return Err(Error::Malformed {
            call: Call::Upload,
            detail: "upload answer without file_info".into(),
        });
    };
    Ok(Uploaded {
        file_uuid: text("file_uuid").unwrap_or_default(),
        file_info,
        ttl: v.get("ttl").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// `url` with a scheme: `//host/x` and `host/x` both get `scheme://` in front.
pub fn full_url(url: &str, scheme: &str) -> String {
    let url = url.trim();
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("{scheme}://{}", url.trim_start_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_less_urls_get_one() {
        assert_eq!(
            full_url("multimedia.nt.qq.com/a?b=1", "https"),
            "https://multimedia.nt.qq.com/a?b=1"
        );
        assert_eq!(full_url("//h/x", "http"), "http://h/x");
        assert_eq!(full_url("https://h/x", "http"), "https://h/x");
    }
}
