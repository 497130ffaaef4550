//! Media both ways (§2.6, §4.6): inbound downloads decrypted with the per-message key, and
//! outbound files uploaded in chunks over the long connection, then sent by `media_id`.

use aes::cipher::block_padding::NoPadding;
use aes::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use futures_util::StreamExt;
use md5::{Digest, Md5};
use serde_json::{Value, json};

use crate::classify::ErrorClass;
use crate::connection::Connection;
use crate::error::Error;
use crate::frame::{self, cmd};
use crate::limits::{self, UPLOAD_CHUNK_BYTES, UPLOAD_MAX_CHUNKS};
use crate::message::{ChatTarget, MediaRef};

/// Block size of WeCom's PKCS#7 padding: 32, not AES's 16 (§2.6).
const PAD_BLOCK: usize = 32;

/// Decodes an `aeskey`: standard base64 with or without `=`, URL-safe base64, or 64 hex
/// characters (§2.6, lenient as others are); anything not 32 bytes is refused.
pub fn decode_key(aeskey: &str) -> Result<[u8; 32], Error> {
    let k = aeskey.trim();
    let bytes = [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(k).ok().filter(|b| b.len() == 32))
        .or_else(|| hex32(k));
    bytes
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::BadMedia("the key is not 32 bytes".into()))
}

fn hex32(k: &str) -> Option<Vec<u8>> {
    if k.len() != 64 || !k.is_ascii() {
        return None;
    }
    (0..32)
        .map(|i| u8::from_str_radix(&k[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// AES-256-CBC with IV = the key's first 16 bytes, then WeCom's 32-byte PKCS#7 unpadding.
pub fn decrypt(key: &[u8; 32], data: &[u8]) -> Result<Vec<u8>, Error> {
    let bad = |why: &str| Error::BadMedia(why.into());
    if data.is_empty() || !data.len().is_multiple_of(16) {
        return Err(bad("length is not whole AES blocks"));
    }
    let mut plain = cbc::Decryptor::<aes::Aes256>::new_from_slices(key, &key[..16])
        .map_err(|_| bad("key"))?
        .decrypt_padded_vec::<NoPadding>(data)
        .map_err(|_| bad("blocks"))?;
    let pad = plain.last().copied().unwrap_or(0) as usize;
    if pad == 0 || pad > PAD_BLOCK || pad > plain.len() {
        return Err(bad("padding"));
    }
    if !plain[plain.len() - pad..]
        .iter()
        .all(|&b| b as usize == pad)
    {
        return Err(bad("padding"));
    }
    plain.truncate(plain.len() - pad);
    Ok(plain)
}

/// The platform's encryption (for the fake and for tests): pad to 32 bytes, AES-256-CBC.
pub fn encrypt(key: &[u8; 32], plain: &[u8]) -> Vec<u8> {
    let pad = PAD_BLOCK - plain.len() % PAD_BLOCK;
    let mut data = plain.to_vec();
    data.extend(std::iter::repeat_n(pad as u8, pad));
    match cbc::Encryptor::<aes::Aes256>::new_from_slices(key, &key[..16]) {
        Ok(enc) => enc.encrypt_padded_vec::<NoPadding>(&data),
        // Unreachable: the key and IV lengths are fixed.
        Err(_) => Vec::new(),
    }
}

/// One HTTP client for every account in the process: each carries its own TLS configuration
/// and root store, which many accounts should not repeat. Downloads carry no credentials, so
/// sharing the pool shares nothing private. Built on first use; a build failure is an error,
/// never a panic (`reqwest::Client::new` would panic).
fn shared_http() -> Result<reqwest::Client, Error> {
    static SHARED: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(c) = SHARED.get() {
        return Ok(c.clone());
    }
    let built = reqwest::Client::builder()
        .build()
        .map_err(|e| Error::Network(format!("cannot build the HTTP client: {e}")))?;
    Ok(SHARED.get_or_init(|| built).clone())
}

/// A downloaded, decrypted media item. The name is the platform's, made safe for a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// The plain bytes.
    pub bytes: Vec<u8>,
    /// From `Content-Disposition`, stripped to its last path part; `None` when absent.
    pub file_name: Option<String>,
    /// The `Content-Type` header, when sent (sniff the bytes before trusting it).
    pub content_type: Option<String>,
}

impl Connection {
    /// Downloads and decrypts `media`, refusing more than `cap` bytes. Call right after
    /// journaling: the URL expires in ~5 minutes (§2.6; 404 after, which is `Rejected`).
    pub async fn download(
        &self,
        media: &MediaRef,
        cap: u64,
        timeout: std::time::Duration,
    ) -> Result<Downloaded, Error> {
        let resp = tokio::time::timeout(timeout, shared_http()?.get(&media.url).send())
            .await
            .map_err(|_| Error::Network(format!("no answer within {timeout:?}")))??;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(Error::Http { status });
        }
        let header = |k: &str| {
            resp.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let file_name = header("content-disposition").and_then(|d| disposition_name(&d));
        let content_type = header("content-type");
        if resp.content_length().is_some_and(|n| n > cap) {
            return Err(Error::TooLarge {
                what: "inbound media",
                limit: cap,
            });
        }
        let mut bytes = Vec::new();
        let mut body = resp.bytes_stream();
        while let Some(chunk) = tokio::time::timeout(timeout, body.next())
            .await
            .map_err(|_| Error::Network(format!("download stalled for {timeout:?}")))?
        {
            bytes.extend_from_slice(&chunk?);
            if bytes.len() as u64 > cap + PAD_BLOCK as u64 {
                return Err(Error::TooLarge {
                    what: "inbound media",
                    limit: cap,
                });
            }
        }
        let bytes = match &media.aeskey {
            Some(k) => decrypt(&decode_key(k)?, &bytes)?,
            None => bytes,
        };
        if bytes.len() as u64 > cap {
            return Err(Error::TooLarge {
                what: "inbound media",
                limit: cap,
            });
        }
        Ok(Downloaded {
            bytes,
            file_name,
            content_type,
        })
    }
}

/// The file name of a `Content-Disposition`: `filename*=UTF-8''…` (percent-decoded) before
/// `filename=`, reduced to its last path part so `../` cannot climb out of an inbox.
pub fn disposition_name(header: &str) -> Option<String> {
    let parts: Vec<&str> = header.split(';').map(str::trim).collect();
    let star = parts.iter().find_map(|p| {
        let v = p.strip_prefix("filename*=")?;
        let enc = v
            .strip_prefix("UTF-8''")
            .or_else(|| v.strip_prefix("utf-8''"))?;
        String::from_utf8(percent_decode(enc)).ok()
    });
    let plain = || {
        parts.iter().find_map(|p| {
            p.strip_prefix("filename=")
                .map(|v| v.trim_matches('"').to_owned())
        })
    };
    let name = star.or_else(plain)?;
    safe_file_name(&name)
}

/// The last path part of `name` with control characters removed; `None` if nothing is left
/// or it is `.`/`..`.
pub fn safe_file_name(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim();
    (!clean.is_empty() && clean != "." && clean != "..").then(|| clean.to_owned())
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%' && i + 2 < b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// What an upload is sent as (§4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// JPG/PNG, ≤ 10 MB.
    Image,
    /// ≤ 10 MB.
    Video,
    /// AMR only, ≤ 2 MB.
    Voice,
    /// Anything, ≤ 20 MB.
    File,
}

impl MediaKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Video => "video",
            MediaKind::Voice => "voice",
            MediaKind::File => "file",
        }
    }

    /// What `wanted` of `size` bytes goes as: oversized images/videos and voice that is not
    /// AMR go as a file; over the file limit is refused (§4.6).
    pub fn choose(wanted: MediaKind, size: u64, is_amr: bool) -> Result<MediaKind, Error> {
        let kind = match wanted {
            MediaKind::Image if size <= limits::IMAGE_MAX_BYTES => MediaKind::Image,
            MediaKind::Video if size <= limits::VIDEO_MAX_BYTES => MediaKind::Video,
            MediaKind::Voice if is_amr && size <= limits::VOICE_MAX_BYTES => MediaKind::Voice,
            _ => MediaKind::File,
        };
        if kind == MediaKind::File && size > limits::FILE_MAX_BYTES {
            return Err(Error::TooLarge {
                what: "file",
                limit: limits::FILE_MAX_BYTES,
            });
        }
        Ok(kind)
    }
}

/// An uploaded item, valid for [`limits::MEDIA_ID_LIFETIME`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    /// Send it with this.
    pub media_id: String,
    /// The type the platform recorded.
    pub kind: String,
}

/// Chunks sent at once: all up to 4, 3 for 5–10, 2 above (§4.6; more get "system error").
pub fn upload_concurrency(chunks: usize) -> usize {
    match chunks {
        0..=4 => chunks.max(1),
        5..=10 => 3,
        _ => 2,
    }
}

impl Connection {
    /// Uploads `bytes` as `kind` named `filename` (init, chunks, finish) and returns the
    /// `media_id`. Checks the size limits first ([`MediaKind::choose`] picks the kind).
    pub async fn upload(
        &self,
        kind: MediaKind,
        filename: &str,
        bytes: &[u8],
    ) -> Result<Uploaded, Error> {
        let chunks: Vec<&[u8]> = bytes.chunks(UPLOAD_CHUNK_BYTES).collect();
        if chunks.is_empty() {
            return Err(Error::Invalid("an empty file cannot be uploaded".into()));
        }
        if chunks.len() > UPLOAD_MAX_CHUNKS {
            return Err(Error::TooLarge {
                what: "upload",
                limit: (UPLOAD_CHUNK_BYTES * UPLOAD_MAX_CHUNKS) as u64,
            });
        }
        let md5 = md5_hex(bytes);
        let init = json!({"type": kind.as_str(), "filename": filename, "total_size": bytes.len(),
                          "total_chunks": chunks.len(), "md5": md5});
        let answer = self.upload_frame(cmd::UPLOAD_INIT, init).await?;
        let upload_id = body_str(&answer, "upload_id")?;
        let width = upload_concurrency(chunks.len());
        // Owned items and an owning future per chunk: a closure over borrowed items makes the
        // whole upload future unprovably `Send` (a higher-ranked lifetime), so callers could not
        // box it.
        let owned: Vec<(usize, Vec<u8>)> = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.to_vec()))
            .collect();
        let results: Vec<Result<(), Error>> = futures_util::stream::iter(owned)
            .map(|(i, chunk)| {
                let (conn, id) = (self.clone(), upload_id.clone());
                async move { conn.upload_chunk(&id, i, &chunk).await }
            })
            .buffer_unordered(width)
            .collect()
            .await;
        results.into_iter().collect::<Result<(), Error>>()?;
        let done = self
            .upload_frame(cmd::UPLOAD_FINISH, json!({"upload_id": upload_id}))
            .await?;
        Ok(Uploaded {
            media_id: body_str(&done, "media_id")?,
            kind: body_str(&done, "type").unwrap_or_else(|_| kind.as_str().to_owned()),
        })
    }

    /// One chunk, retried twice on a refusal that may clear, 500 ms × attempt apart (§4.6).
    async fn upload_chunk(&self, upload_id: &str, index: usize, chunk: &[u8]) -> Result<(), Error> {
        let body = json!({"upload_id": upload_id, "chunk_index": index,
                          "base64_data": STANDARD.encode(chunk)});
        let mut attempt = 0u64;
        loop {
            match self.upload_frame(cmd::UPLOAD_CHUNK, body.clone()).await {
                Err(e) if attempt < 2 && e.class() == ErrorClass::Transient => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(500 * attempt)).await;
                }
                other => return other.map(drop),
            }
        }
    }

    async fn upload_frame(&self, command: &'static str, body: Value) -> Result<Value, Error> {
        let req_id = frame::new_req_id(command);
        let timeout = self.options().upload_ack_timeout;
        let r = self.command(command, &req_id, body, timeout).await?;
        Ok(r.body.unwrap_or(Value::Null))
    }

    /// Sends an uploaded item proactively (the plugin always does, §4.6).
    pub async fn send_media(&self, chat: &ChatTarget, uploaded: &Uploaded) -> Result<(), Error> {
        let t = uploaded.kind.as_str();
        let mut body = json!({"msgtype": t});
        body[t] = json!({"media_id": uploaded.media_id});
        self.send_msg(chat, body).await
    }
}

/// Lower-case hex of the md5 of `bytes` (the upload's and a finish image's checksum).
pub fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn body_str(v: &Value, key: &str) -> Result<String, Error> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::Decode(format!("upload answer without {key}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_32_byte_padding_and_lenient_keys() {
        let key = [7u8; 32];
        for len in [0usize, 1, 16, 31, 32, 33, 100] {
            let plain = vec![0xAB; len];
            let ct = encrypt(&key, &plain);
            assert_eq!(ct.len() % 32, 0);
            assert_eq!(decrypt(&key, &ct).unwrap(), plain);
        }
        let b64 = STANDARD.encode(key);
        assert_eq!(decode_key(&b64).unwrap(), key);
        assert_eq!(decode_key(b64.trim_end_matches('=')).unwrap(), key);
        assert_eq!(decode_key(&"07".repeat(32)).unwrap(), key);
        assert!(decode_key("c2hvcnQ=").is_err());
        assert!(decrypt(&key, &[1, 2, 3]).is_err());
        assert!(decrypt(&[8u8; 32], &encrypt(&key, b"x")).is_err());
    }

    #[test]
    fn file_names_cannot_climb() {
        assert_eq!(
            disposition_name(
                "attachment; filename*=UTF-8''%E6%8A%A5%E5%91%8A.pdf; filename=\"x.pdf\""
            )
            .as_deref(),
            Some("报告.pdf")
        );
        assert_eq!(
            disposition_name("attachment; filename=\"../../etc/passwd\"").as_deref(),
            Some("passwd")
        );
        assert_eq!(disposition_name("attachment; filename=\"..\""), None);
        assert_eq!(disposition_name("inline"), None);
        assert_eq!(disposition_name("attachment; filename*=UTF-8''%E6%"), None);
    }

    #[test]
    fn kinds_and_concurrency() {
        use MediaKind::*;
        assert_eq!(MediaKind::choose(Image, 11 << 20, false).unwrap(), File);
        assert_eq!(MediaKind::choose(Voice, 100, false).unwrap(), File);
        assert_eq!(MediaKind::choose(Voice, 100, true).unwrap(), Voice);
        assert!(MediaKind::choose(File, 21 << 20, false).is_err());
        assert_eq!([1, 4, 5, 10, 11].map(upload_concurrency), [1, 4, 3, 3, 2]);
    }
}
