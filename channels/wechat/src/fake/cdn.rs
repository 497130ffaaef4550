//! The fake's media CDN, strict like the real one (media spec §2.6): `getuploadurl` checks the
//! ciphertext size formula and the key form; `POST /cdn/upload` decrypts with the key registered
//! for the upload, checks length and MD5 and answers the download parameter in
//! `x-encrypted-param`; `GET /cdn/download` serves the stored ciphertext (or a keyless image in
//! plain); `sendmessage` media items must name a parameter the fake issued, the key in form B and
//! the right sizes. Knobs make the upload refuse (4xx, final), fail (500, retried) or drop the header.

use std::collections::{HashMap, VecDeque};

use md5::{Digest, Md5};
use serde_json::{Value, json};

use crate::cdn::{self, MediaKey, ciphertext_len};

/// A fault injected in front of the CDN upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadFault {
    /// Answer this 4xx with `x-error-message` (the client must not retry).
    Refuse(u16, String),
    /// Answer 500 (the client retries, at most three attempts in all).
    ServerError,
    /// Answer 200 without `x-encrypted-param` (the client retries).
    NoHeader,
    /// Never answer (until the fake shuts down): a client killed mid-upload.
    Hang,
}

/// One media item the bot sent and the fake accepted, decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMedia {
    /// The recipient.
    pub to_user: String,
    /// The item type: 2 image, 4 file, 5 video.
    pub item_type: i64,
    /// The plaintext the recipient would see.
    pub bytes: Vec<u8>,
    /// `file_item.file_name`, for files.
    pub file_name: Option<String>,
}

struct PendingUpload {
    key: MediaKey,
    filekey: String,
    rawsize: u64,
    md5: String,
    filesize: u64,
}

struct Stored {
    /// Shared bytes: serving a download clones a handle, not 100 MB.
    cipher: bytes::Bytes,
    /// The key of a bot upload (sendmessage checks the item names it); `None` for inbound
    /// media, whose key the test put in the message.
    key: Option<MediaKey>,
    plain_len: u64,
}

/// The CDN's records and knobs.
#[derive(Default)]
pub(crate) struct CdnBook {
    uploads: HashMap<String, PendingUpload>,
    stored: HashMap<String, Stored>,
    next: u64,
    /// Answer `getuploadurl` with `upload_param` only (no `upload_full_url`).
    pub(crate) param_only: bool,
    /// Answer the next `getuploadurl` calls with `{"ret":-1}`.
    pub(crate) refuse_upload_url: usize,
    pub(crate) upload_faults: VecDeque<UploadFault>,
    /// Statuses for the next downloads (404, 500; 0 never answers).
    pub(crate) download_faults: VecDeque<u16>,
    /// Download requests received.
    pub(crate) downloads_seen: usize,
    /// Upload requests received (attempts, accepted or not).
    pub(crate) upload_attempts: usize,
    /// Accepted CDN uploads (attempts that stored a file).
    pub(crate) uploads_done: usize,
    pub(crate) sent_media: Vec<SentMedia>,
    /// The media item of the send being checked.
    pub(crate) checked: Option<SentMedia>,
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn md5_hex(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl CdnBook {
    fn token(&mut self, what: &str) -> String {
        self.next += 1;
        format!("{what}-{}-{}", self.next, super::random::hex(8))
    }

    /// Stores inbound media: `plain` encrypted with `key` (or as it is without one); returns
    /// the download parameter to put in the message's `media.encrypt_query_param`.
    pub(crate) fn put(&mut self, plain: &[u8], key: Option<&MediaKey>) -> String {
        let cipher = match key {
            Some(k) => cdn::encrypt(k, plain).into(),
            None => bytes::Bytes::copy_from_slice(plain),
        };
        let param = self.token("dl");
        self.stored.insert(
            param.clone(),
            Stored {
                cipher,
                key: None,
                plain_len: plain.len() as u64,
            },
        );
        param
    }

    /// Stores raw bytes under a parameter (a truncated or damaged ciphertext for tests).
    pub(crate) fn put_raw(&mut self, bytes: Vec<u8>) -> String {
        let param = self.token("dl");
        self.stored.insert(
            param.clone(),
            Stored {
                plain_len: bytes.len() as u64,
                cipher: bytes.into(),
                key: None,
            },
        );
        param
    }

    /// `getuploadurl`.
    pub(crate) fn get_upload_url(&mut self, body: &Value, cdn_base: &str) -> Value {
        if self.refuse_upload_url > 0 {
            self.refuse_upload_url -= 1;
            return json!({"ret": -1});
        }
        let s = |k: &str| body[k].as_str().unwrap_or("").to_string();
        let n = |k: &str| body[k].as_u64();
        let (filekey, aeskey, md5, to) =
            (s("filekey"), s("aeskey"), s("rawfilemd5"), s("to_user_id"));
        let (Some(rawsize), Some(filesize), Some(media_type)) =
            (n("rawsize"), n("filesize"), n("media_type"))
        else {
            return json!({"ret": -1, "errmsg": "missing rawsize, filesize or media_type"});
        };
        let key = MediaKey::from_hex(&aeskey)
            .ok()
            .filter(|_| is_hex(&aeskey, 32));
        let problem = if filekey.is_empty() {
            Some("no filekey")
        } else if to.is_empty() {
            Some("no to_user_id")
        } else if !(1..=4).contains(&media_type) {
            Some("bad media_type")
        } else if filesize != ciphertext_len(rawsize) {
            Some("filesize is not the ciphertext size")
        } else if key.is_none() {
            Some("aeskey is not 32 hex characters")
        } else if !is_hex(&md5, 32) {
            Some("rawfilemd5 is not 32 hex characters")
        } else {
            None
        };
        if let Some(p) = problem {
            return json!({"ret": -1, "errmsg": p});
        }
        let param = self.token("up");
        self.uploads.insert(
            param.clone(),
            PendingUpload {
                key: key.expect("checked"),
                filekey: filekey.clone(),
                rawsize,
                md5: md5.to_ascii_lowercase(),
                filesize,
            },
        );
        if self.param_only {
            return json!({"ret": 0, "upload_param": param});
        }
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        json!({"ret": 0, "upload_full_url": format!(
            "{cdn_base}/upload?encrypted_query_param={}&filekey={}", enc(&param), enc(&filekey))})
    }

    /// `POST /cdn/upload`: (status, x-encrypted-param, x-error-message).
    pub(crate) fn upload(
        &mut self,
        param: &str,
        filekey: &str,
        body: &[u8],
    ) -> (u16, Option<String>, Option<String>) {
        self.upload_attempts += 1;
        match self.upload_faults.pop_front() {
            Some(UploadFault::Hang) => return (0, None, None),
            Some(UploadFault::Refuse(status, msg)) => return (status, None, Some(msg)),
            Some(UploadFault::ServerError) => return (500, None, None),
            Some(UploadFault::NoHeader) => return (200, None, None),
            None => {}
        }
        let refuse = |m: &str| (400, None, Some(m.to_string()));
        let Some(up) = self.uploads.get(param) else {
            return refuse("unknown upload parameter");
        };
        if up.filekey != filekey {
            return refuse("filekey does not match the upload");
        }
        if body.len() as u64 != up.filesize {
            return refuse("body is not filesize bytes");
        }
        let Ok(plain) = cdn::decrypt(&up.key, body) else {
            return refuse("body does not decrypt with the registered aeskey");
        };
        if plain.len() as u64 != up.rawsize || md5_hex(&plain) != up.md5 {
            return refuse("plaintext does not match rawsize/rawfilemd5");
        }
        let key = up.key.clone();
        let dl = self.token("dl");
        self.stored.insert(
            dl.clone(),
            Stored {
                cipher: bytes::Bytes::copy_from_slice(body),
                key: Some(key),
                plain_len: plain.len() as u64,
            },
        );
        self.uploads_done += 1;
        (200, Some(dl), None)
    }

    /// `GET /cdn/download`: (status, body).
    pub(crate) fn download(&mut self, param: &str) -> (u16, bytes::Bytes) {
        self.downloads_seen += 1;
        if let Some(status) = self.download_faults.pop_front() {
            return (status, bytes::Bytes::new());
        }
        match self.stored.get(param) {
            Some(s) => (200, s.cipher.clone()),
            None => (404, bytes::Bytes::new()),
        }
    }

    /// Checks a media item of `sendmessage`; returns its description (the text recorded) or
    /// why it is refused.
    pub(crate) fn check_item(
        &mut self,
        item: &Value,
        to_user: &str,
    ) -> Result<String, &'static str> {
        let item_type = item["type"].as_i64().unwrap_or(0);
        let (field, size_field) = match item_type {
            2 => ("image_item", Some("mid_size")),
            5 => ("video_item", Some("video_size")),
            4 => ("file_item", None),
            _ => return Err("the item is not a text, image, video or file item"),
        };
        let it = &item[field];
        let media = &it["media"];
        let param = media["encrypt_query_param"].as_str().unwrap_or("");
        let Some(stored) = self.stored.get(param) else {
            return Err("media.encrypt_query_param is not a parameter the CDN issued");
        };
        let Some(key) = stored.key.clone() else {
            return Err("media.encrypt_query_param names media the bot did not upload");
        };
        // Form B exactly: base64 of the 32 hex characters.
        let aes = media["aes_key"].as_str().unwrap_or("");
        let form_b = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, aes)
            .ok()
            .filter(|b| b.len() == 32);
        if form_b.is_none() || MediaKey::from_media_field(aes).ok() != Some(key.clone()) {
            return Err("media.aes_key is not base64 of the key's hex (form B)");
        }
        if media["encrypt_type"].as_i64() != Some(1) {
            return Err("media.encrypt_type is not 1");
        }
        let cipher_len = stored.cipher.len() as u64;
        if let Some(f) = size_field
            && it[f].as_u64() != Some(cipher_len)
        {
            return Err("mid_size/video_size is not the ciphertext size");
        }
        let mut file_name = None;
        if item_type == 4 {
            if it["len"].as_str() != Some(stored.plain_len.to_string().as_str()) {
                return Err("file_item.len is not the plaintext size as a string");
            }
            let name = it["file_name"].as_str().unwrap_or("");
            if name.is_empty() {
                return Err("file_item.file_name is empty");
            }
            file_name = Some(name.to_string());
        }
        let bytes =
            cdn::decrypt(&key, &stored.cipher).map_err(|_| "stored media does not decrypt")?;
        let text = match &file_name {
            Some(n) => format!("[file: {n}]"),
            None if item_type == 2 => "[image]".to_string(),
            None => "[video]".to_string(),
        };
        // Recorded only once the whole send is accepted (see `State::send`).
        self.checked = Some(SentMedia {
            to_user: to_user.to_string(),
            item_type,
            bytes,
            file_name,
        });
        Ok(text)
    }
}
