//! WeChat media for the pipeline: inbound items become `MediaRef`s (the full image, never the
//! thumbnail; files with their name, size and MD5; video; voice with the platform's
//! transcript), fetched from the CDN on demand; a `Body::Media` outbox item is uploaded and
//! sent as the matching item (media spec §1–2).

use std::path::Path;

use scv_wechat::cdn::MediaKey;
use scv_wechat::cdn_client::{MediaDownload, MediaError, UploadKind, download_url, media_item};
use scv_wechat::media::CdnMedia;
use scv_wechat::message::{ItemKind, MessageItem};
use scv_wechat::{Client, WeixinMessage};
use serde::{Deserialize, Serialize};

use crate::agent::MediaKind;
use crate::conversation::MediaRef;
use crate::conversation::body::MediaOut;

/// How to fetch one item: the adapter's private part of a `MediaRef`, kept in the journal, so
/// its fields must stay readable by later releases.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Locator {
    /// `media.encrypt_query_param`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    param: Option<String>,
    /// `media.full_url`, used verbatim when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// The key as 32 hex characters, whichever form it came in; `None`: served in plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// The key the message carried could not be read (the download is refused, not guessed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    bad_key: bool,
    /// The plaintext MD5 the message declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    md5: Option<String>,
}

/// The media of `m`'s items, in order.
pub(super) fn refs(m: &WeixinMessage) -> Vec<MediaRef> {
    m.item_list.iter().filter_map(item_ref).collect()
}

fn item_ref(item: &MessageItem) -> Option<MediaRef> {
    let (kind, media, key, name, size, md5, transcript) = match item.kind() {
        ItemKind::Image => {
            let i = item.image_item.as_ref()?;
            // The original image, never `thumb_media` (the plugin downloads only `media`).
            let media = i.media.as_ref()?;
            let key = MediaKey::for_image(i.aeskey.as_deref(), media.aes_key.as_deref());
            (MediaKind::Image, media, key, None, None, None, None)
        }
        ItemKind::File => {
            let f = item.file_item.as_ref()?;
            let media = f.media.as_ref()?;
            let size = f.len.as_deref().and_then(|l| l.trim().parse::<u64>().ok());
            (
                MediaKind::File,
                media,
                required_key(media),
                f.file_name.clone(),
                size,
                f.md5.clone(),
                None,
            )
        }
        ItemKind::Video => {
            let v = item.video_item.as_ref()?;
            let media = v.media.as_ref()?;
            let key = required_key(media);
            (
                MediaKind::Video,
                media,
                key,
                None,
                None,
                v.video_md5.clone(),
                None,
            )
        }
        ItemKind::Voice => {
            let v = item.voice_item.as_ref()?;
            let text = v.text.clone().filter(|t| !t.trim().is_empty());
            let media = v.media.as_ref();
            let key = media.map(required_key).unwrap_or(Ok(None));
            let empty = CdnMedia::default();
            let media = media.unwrap_or(&empty);
            // A transcript alone is worth a reference: it reaches the agent as text.
            if text.is_none() && !downloadable(media) {
                return None;
            }
            return Some(MediaRef {
                kind: MediaKind::Audio,
                name: None,
                size: None,
                transcript: text,
                locator: locator(media, key, None),
            });
        }
        _ => return None,
    };
    if !downloadable(media) {
        return None;
    }
    Some(MediaRef {
        kind,
        name,
        size,
        transcript,
        locator: locator(media, key, md5),
    })
}

/// Files, voice and video need a key (the plugin skips them without one); a missing key is
/// recorded as unreadable so the owner hears why, instead of the item vanishing.
fn required_key(media: &CdnMedia) -> Result<Option<MediaKey>, scv_wechat::cdn::CryptoError> {
    match media.aes_key.as_deref().filter(|k| !k.trim().is_empty()) {
        Some(k) => MediaKey::from_media_field(k).map(Some),
        None => Err(scv_wechat::cdn::CryptoError::BadKey),
    }
}

fn downloadable(media: &CdnMedia) -> bool {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.trim().is_empty());
    set(&media.encrypt_query_param) || set(&media.full_url)
}

fn locator(
    media: &CdnMedia,
    key: Result<Option<MediaKey>, scv_wechat::cdn::CryptoError>,
    md5: Option<String>,
) -> serde_json::Value {
    let (key, bad_key) = match key {
        Ok(k) => (k.map(|k| k.hex()), false),
        Err(_) => (None, true),
    };
    serde_json::to_value(Locator {
        param: media.encrypt_query_param.clone().filter(|p| !p.is_empty()),
        url: media.full_url.clone().filter(|u| !u.trim().is_empty()),
        key,
        bad_key,
        md5: md5.filter(|m| !m.is_empty()),
    })
    .unwrap_or_default()
}

/// Downloads `media` into `dest` (at most `max_bytes`).
pub(super) async fn fetch(
    client: &Client,
    cdn_base: &str,
    media: &MediaRef,
    dest: &Path,
    max_bytes: u64,
) -> Result<u64, MediaError> {
    let loc: Locator = serde_json::from_value(media.locator.clone()).unwrap_or_default();
    if loc.bad_key {
        return Err(MediaError::Crypto(scv_wechat::cdn::CryptoError::BadKey));
    }
    let key = loc
        .key
        .as_deref()
        .map(MediaKey::from_hex)
        .transpose()
        .map_err(MediaError::Crypto)?;
    let cdn = CdnMedia {
        encrypt_query_param: loc.param,
        full_url: loc.url,
        ..CdnMedia::default()
    };
    let url = download_url(cdn_base, &cdn).ok_or(MediaError::NoAddress)?;
    let d = MediaDownload {
        url,
        key,
        max_bytes,
        size: media.size,
        md5: loc.md5,
    };
    client.download_media(&d, dest).await
}

/// How a workspace file goes out: images as images, videos as videos, everything else (audio
/// included, media spec §2.4) as a file.
pub(super) fn upload_kind(m: &MediaOut) -> UploadKind {
    match m.kind {
        MediaKind::Image => UploadKind::Image,
        MediaKind::Video => UploadKind::Video,
        MediaKind::File | MediaKind::Audio => UploadKind::File,
    }
}

/// Uploads `m` for `peer` and returns the item to send.
pub(super) async fn upload(
    client: &Client,
    cdn_base: &str,
    peer: &str,
    m: &MediaOut,
    max_bytes: u64,
) -> Result<MessageItem, MediaError> {
    let size = tokio::fs::metadata(&m.path)
        .await
        .map_err(|e| MediaError::Io(format!("read {}: {e}", m.name)))?
        .len();
    if size > max_bytes {
        return Err(MediaError::TooLarge { max: max_bytes });
    }
    let kind = upload_kind(m);
    let up = client.upload_media(cdn_base, &m.path, kind, peer).await?;
    Ok(media_item(kind, &up, &m.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_wechat::media::{FileItem, ImageItem, VoiceItem};

    fn cdn(param: &str, key: Option<String>) -> CdnMedia {
        CdnMedia {
            encrypt_query_param: Some(param.into()),
            aes_key: key,
            ..CdnMedia::default()
        }
    }

    #[test]
    fn items_become_references_with_the_right_key_and_never_the_thumbnail() {
        let key = MediaKey::from_bytes([7; 16]);
        let image = MessageItem {
            item_type: Some(2),
            image_item: Some(ImageItem {
                media: Some(cdn(
                    "full",
                    Some(MediaKey::from_bytes([1; 16]).base64_raw()),
                )),
                thumb_media: Some(cdn("thumb", None)),
                aeskey: Some(key.hex()),
                ..ImageItem::default()
            }),
            ..MessageItem::default()
        };
        let file = MessageItem {
            item_type: Some(4),
            file_item: Some(FileItem {
                media: Some(cdn("f", Some(key.base64_of_hex()))),
                file_name: Some("r.pdf".into()),
                len: Some("1000".into()),
                md5: None,
            }),
            ..MessageItem::default()
        };
        let voice = MessageItem {
            item_type: Some(3),
            voice_item: Some(VoiceItem {
                text: Some("hello".into()),
                ..VoiceItem::default()
            }),
            ..MessageItem::default()
        };
        let bad = MessageItem {
            item_type: Some(4),
            file_item: Some(FileItem {
                media: Some(cdn("b", Some("bm9wZQ==".into()))),
                ..FileItem::default()
            }),
            ..MessageItem::default()
        };
        let m = WeixinMessage {
            item_list: vec![MessageItem::text("look"), image, file, voice, bad],
            ..WeixinMessage::default()
        };
        let r = refs(&m);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].kind, MediaKind::Image);
        // The image's own hex key wins over media.aes_key; the full image, not the thumb.
        assert_eq!(r[0].locator["key"], key.hex());
        assert_eq!(r[0].locator["param"], "full");
        assert_eq!(
            (r[1].name.as_deref(), r[1].size),
            (Some("r.pdf"), Some(1000))
        );
        assert_eq!(r[1].locator["key"], key.hex());
        assert_eq!(r[2].transcript.as_deref(), Some("hello"));
        assert_eq!(r[3].locator["bad_key"], true);
    }
}
