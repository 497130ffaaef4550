//! Media over the CDN (media spec §1.2, §2): streamed download with decryption and checks, and
//! upload (`getuploadurl`, the encrypted POST, the download parameter from the response header)
//! followed by a `sendmessage` with the media item.

use std::path::Path;

use futures_util::StreamExt;
use md5::{Digest, Md5};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cdn::{CryptoError, Decryptor, Encryptor, MediaKey, ciphertext_len};
use crate::client::Client;
use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::media::CdnMedia;
use crate::message::{MESSAGE_STATE_FINISH, MESSAGE_TYPE_BOT, MessageItem, WeixinMessage};

/// The CDN when the account configures none (media spec §1.2).
pub const DEFAULT_CDN_BASE: &str = "https://novac2c.cdn.weixin.qq.com/c2c";
/// Attempts of one CDN upload: the plugin's three, with no delay between them (§2.2).
const UPLOAD_ATTEMPTS: u32 = 3;
/// How long one download or upload may take (the plugin sets none; an unbounded transfer
/// could hold a chat forever).
const TRANSFER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);
/// How long a download may go without a byte (the answer's head, then each piece) before it is
/// given up as stalled: a CDN that accepts the connection and never answers otherwise held
/// the chat, and the next message behind it, for the whole [`TRANSFER_TIMEOUT`].
pub const TRANSFER_IDLE: std::time::Duration = std::time::Duration::from_secs(20);

/// Why a media transfer failed.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// The item has no download parameter and no URL.
    #[error("the media item has no download address")]
    NoAddress,
    /// The CDN answered with a status other than 200.
    #[error("the WeChat CDN answered HTTP {status}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Http {
        /// The status.
        status: u16,
        /// `x-error-message`, when the CDN sent one.
        message: String,
    },
    /// The connection failed or broke off.
    #[error("cannot reach the WeChat CDN: {0}")]
    Network(String),
    /// More bytes than allowed.
    #[error("the media is larger than {max} bytes")]
    TooLarge {
        /// The limit (plaintext bytes).
        max: u64,
    },
    /// It does not decrypt.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    /// The plaintext is not the size or checksum the message declared.
    #[error("the media is not what the message declared ({0})")]
    Mismatch(&'static str),
    /// A local file could not be read or written.
    #[error("cannot {0}")]
    Io(String),
    /// A 200 upload answer without the `x-encrypted-param` header.
    #[error("the WeChat CDN accepted the upload but returned no download parameter")]
    NoDownloadParam,
    /// `getuploadurl` returned no upload address.
    #[error("getUploadUrl returned no upload URL")]
    NoUploadUrl,
    /// An iLink call failed.
    #[error(transparent)]
    Api(#[from] Error),
}

impl MediaError {
    /// Whether trying again may succeed (network, 5xx); a wrong key or a 4xx never will.
    pub fn is_transient(&self) -> bool {
        match self {
            MediaError::Network(_) | MediaError::NoDownloadParam => true,
            MediaError::Http { status, .. } => *status >= 500 || *status == 429,
            MediaError::Api(e) => matches!(e.class(), crate::ErrorClass::Transient),
            _ => false,
        }
    }
}

/// What to download and what to check it against.
#[derive(Debug, Clone)]
pub struct MediaDownload {
    /// The CDN address (see [`download_url`]).
    pub url: String,
    /// The key; `None` serves the bytes as they are (an image without a key, §1.3).
    pub key: Option<MediaKey>,
    /// The most plaintext bytes accepted.
    pub max_bytes: u64,
    /// The plaintext size the message declared, checked when given.
    pub size: Option<u64>,
    /// The plaintext MD5 (hex) the message declared, checked when given.
    pub md5: Option<String>,
}

/// The download address of `media`: `full_url` verbatim, else `<cdn_base>/download?
/// encrypted_query_param=<param>` (the query name has "ed", the JSON field has not).
pub fn download_url(cdn_base: &str, media: &CdnMedia) -> Option<String> {
    if let Some(u) = media
        .full_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    {
        return Some(u.to_string());
    }
    let param = media
        .encrypt_query_param
        .as_deref()
        .filter(|p| !p.is_empty())?;
    let q: String = url::form_urlencoded::byte_serialize(param.as_bytes()).collect();
    Some(format!(
        "{}/download?encrypted_query_param={q}",
        cdn_base.trim_end_matches('/')
    ))
}

/// One file uploaded to the CDN, ready to name in a media item.
#[derive(Debug, Clone)]
pub struct Uploaded {
    /// The download parameter (`x-encrypted-param`).
    pub download_param: String,
    /// The key it is encrypted with.
    pub key: MediaKey,
    /// Plaintext bytes.
    pub rawsize: u64,
    /// Ciphertext bytes.
    pub filesize: u64,
}

/// `media_type` of `getuploadurl` and which item carries the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadKind {
    /// An image (media_type 1, `image_item`).
    Image,
    /// A video (2, `video_item`).
    Video,
    /// Any other file (3, `file_item`); audio too, since no peer confirms a voice bubble.
    File,
}

impl UploadKind {
    fn media_type(self) -> i64 {
        match self {
            UploadKind::Image => 1,
            UploadKind::Video => 2,
            UploadKind::File => 3,
        }
    }
}

fn io(what: &str, e: std::io::Error) -> MediaError {
    MediaError::Io(format!("{what}: {e}"))
}

impl Client {
    /// Downloads one item into `dest`, streamed: decrypted piece by piece, never more than
    /// `max_bytes`, checked against the declared size and MD5; on any error `dest` may hold a
    /// partial file the caller removes.
    pub async fn download_media(&self, d: &MediaDownload, dest: &Path) -> Result<u64, MediaError> {
        let stalled = || {
            MediaError::Network(format!(
                "the download stalled: no data for {} s",
                TRANSFER_IDLE.as_secs()
            ))
        };
        let work = async {
            let resp = tokio::time::timeout(TRANSFER_IDLE, self.http.get(&d.url).send())
                .await
                .map_err(|_| stalled())?
                .map_err(|e| MediaError::Network(e.without_url().to_string()))?;
            let status = resp.status().as_u16();
            if status != 200 {
                return Err(MediaError::Http {
                    status,
                    message: String::new(),
                });
            }
            let max_cipher = ciphertext_len(d.max_bytes);
            if resp.content_length().is_some_and(|n| n > max_cipher) {
                return Err(MediaError::TooLarge { max: d.max_bytes });
            }
            if let Some(size) = d.size.filter(|s| *s > d.max_bytes) {
                let _ = size;
                return Err(MediaError::TooLarge { max: d.max_bytes });
            }
            let mut file = tokio::fs::File::create(dest)
                .await
                .map_err(|e| io("create the file", e))?;
            let mut dec = d.key.as_ref().map(Decryptor::new);
            let mut md5 = Md5::new();
            let (mut received, mut written) = (0u64, 0u64);
            let mut out = Vec::new();
            let mut stream = resp.bytes_stream();
            while let Some(chunk) = tokio::time::timeout(TRANSFER_IDLE, stream.next())
                .await
                .map_err(|_| stalled())?
            {
                let chunk = chunk.map_err(|e| MediaError::Network(e.without_url().to_string()))?;
                received += chunk.len() as u64;
                if received > max_cipher {
                    return Err(MediaError::TooLarge { max: d.max_bytes });
                }
                out.clear();
                match dec.as_mut() {
                    Some(dec) => dec.update(&chunk, &mut out),
                    None => out.extend_from_slice(&chunk),
                }
                written += out.len() as u64;
                md5.update(&out);
                file.write_all(&out)
                    .await
                    .map_err(|e| io("write the file", e))?;
            }
            out.clear();
            if let Some(dec) = dec {
                dec.finish(&mut out)?;
            }
            written += out.len() as u64;
            if written > d.max_bytes {
                return Err(MediaError::TooLarge { max: d.max_bytes });
            }
            md5.update(&out);
            file.write_all(&out)
                .await
                .map_err(|e| io("write the file", e))?;
            file.sync_all().await.map_err(|e| io("write the file", e))?;
            if d.size.is_some_and(|s| s != written) {
                return Err(MediaError::Mismatch("size"));
            }
            if let Some(want) = d.md5.as_deref().filter(|m| !m.is_empty()) {
                let got: String = md5.finalize().iter().map(|b| format!("{b:02x}")).collect();
                if !got.eq_ignore_ascii_case(want) {
                    return Err(MediaError::Mismatch("md5"));
                }
            }
            Ok(written)
        };
        tokio::time::timeout(TRANSFER_TIMEOUT, work)
            .await
            .unwrap_or_else(|_| Err(MediaError::Network("the download timed out".into())))
    }

    /// Uploads the file at `path` for `to_user`: `getuploadurl`, then the encrypted POST
    /// (streamed, at most three attempts, a 4xx final), returning what the media item needs.
    pub async fn upload_media(
        &self,
        cdn_base: &str,
        path: &Path,
        kind: UploadKind,
        to_user: &str,
    ) -> Result<Uploaded, MediaError> {
        let (rawsize, md5) = file_md5(path).await?;
        let filesize = ciphertext_len(rawsize);
        let key = MediaKey::random();
        let filekey = MediaKey::random().hex();
        let body = json!({
            "filekey": filekey,
            "media_type": kind.media_type(),
            "to_user_id": to_user,
            "rawsize": rawsize,
            "rawfilemd5": md5,
            "filesize": filesize,
            "no_need_thumb": true,
            "aeskey": key.hex(),
            "base_info": self.identity.base_info(),
        });
        let endpoint = Endpoint::GetUploadUrl;
        let answer = self.post(endpoint, &[], &body, endpoint.timeout()).await?;
        let v: Value = serde_json::from_slice(&answer).unwrap_or_default();
        let full = v["upload_full_url"].as_str().map(str::trim).unwrap_or("");
        let url = if !full.is_empty() {
            full.to_string()
        } else {
            let param = v["upload_param"].as_str().unwrap_or("");
            if param.is_empty() {
                return Err(MediaError::NoUploadUrl);
            }
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            format!(
                "{}/upload?encrypted_query_param={}&filekey={}",
                cdn_base.trim_end_matches('/'),
                enc(param),
                enc(&filekey)
            )
        };
        let mut last = MediaError::NoDownloadParam;
        for _ in 0..UPLOAD_ATTEMPTS {
            match self.post_ciphertext(&url, path, &key, filesize).await {
                Ok(download_param) => {
                    return Ok(Uploaded {
                        download_param,
                        key,
                        rawsize,
                        filesize,
                    });
                }
                Err(e) if e.is_transient() => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    async fn post_ciphertext(
        &self,
        url: &str,
        path: &Path,
        key: &MediaKey,
        filesize: u64,
    ) -> Result<String, MediaError> {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| io("read the file", e))?;
        let body = reqwest::Body::wrap_stream(encrypted_stream(file, key.clone()));
        let send = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .header(reqwest::header::CONTENT_LENGTH, filesize)
            .body(body)
            .send();
        let resp = tokio::time::timeout(TRANSFER_TIMEOUT, send)
            .await
            .map_err(|_| MediaError::Network("the upload timed out".into()))?
            .map_err(|e| MediaError::Network(e.without_url().to_string()))?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        if status != 200 {
            return Err(MediaError::Http {
                status,
                message: header("x-error-message").unwrap_or_default(),
            });
        }
        header("x-encrypted-param")
            .filter(|p| !p.is_empty())
            .ok_or(MediaError::NoDownloadParam)
    }

    /// `sendmessage` with one media item naming an uploaded file (§2.3).
    pub async fn send_media(
        &self,
        to_user: &str,
        context_token: Option<&str>,
        item: MessageItem,
        client_id: &str,
    ) -> Result<(), Error> {
        self.send_message(WeixinMessage {
            to_user_id: to_user.to_owned(),
            client_id: client_id.to_owned(),
            message_type: Some(MESSAGE_TYPE_BOT),
            message_state: Some(MESSAGE_STATE_FINISH),
            item_list: vec![item],
            context_token: context_token.map(str::to_owned),
            ..WeixinMessage::default()
        })
        .await
    }
}

/// The media item for an uploaded file, exactly the plugin's shapes (§2.3): `aes_key` in form
/// B, `encrypt_type` 1, ciphertext sizes on images and videos, the plaintext size as a decimal
/// string on files.
pub fn media_item(kind: UploadKind, up: &Uploaded, file_name: &str) -> MessageItem {
    use crate::media::{FileItem, ImageItem, VideoItem};
    let media = Some(CdnMedia {
        encrypt_query_param: Some(up.download_param.clone()),
        aes_key: Some(up.key.base64_of_hex()),
        encrypt_type: Some(1),
        full_url: None,
    });
    let cipher = i64::try_from(up.filesize).unwrap_or(i64::MAX);
    match kind {
        UploadKind::Image => MessageItem {
            item_type: Some(2),
            image_item: Some(ImageItem {
                media,
                mid_size: Some(cipher),
                ..ImageItem::default()
            }),
            ..MessageItem::default()
        },
        UploadKind::Video => MessageItem {
            item_type: Some(5),
            video_item: Some(VideoItem {
                media,
                video_size: Some(cipher),
                ..VideoItem::default()
            }),
            ..MessageItem::default()
        },
        UploadKind::File => MessageItem {
            item_type: Some(4),
            file_item: Some(FileItem {
                media,
                file_name: Some(file_name.to_owned()),
                len: Some(up.rawsize.to_string()),
                md5: None,
            }),
            ..MessageItem::default()
        },
    }
}

/// The file's size and lowercase hex MD5, read in pieces.
async fn file_md5(path: &Path) -> Result<(u64, String), MediaError> {
    let mut f = tokio::fs::File::open(path)
        .await
        .map_err(|e| io("read the file", e))?;
    let mut md5 = Md5::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        let got = f.read(&mut buf).await.map_err(|e| io("read the file", e))?;
        if got == 0 {
            break;
        }
        n += got as u64;
        md5.update(&buf[..got]);
    }
    Ok((
        n,
        md5.finalize().iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

/// The file's ciphertext as a stream of pieces, read and encrypted 64 KiB at a time.
fn encrypted_stream(
    file: tokio::fs::File,
    key: MediaKey,
) -> impl futures_util::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    let state = Some((file, Encryptor::new(&key)));
    futures_util::stream::unfold(state, |state| async move {
        let (mut file, mut enc) = state?;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Err(e) => Some((Err(e), None)),
            Ok(0) => {
                let mut out = Vec::with_capacity(16);
                enc.finish(&mut out);
                Some((Ok(out), None))
            }
            Ok(n) => {
                let mut out = Vec::with_capacity(n + 16);
                enc.update(&buf[..n], &mut out);
                Some((Ok(out), Some((file, enc))))
            }
        }
    })
}
