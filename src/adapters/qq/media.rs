//! Media both ways through the media seam (spec §2.1, §4.4): an inbound attachment becomes a
//! `MediaRef` whose locator is its URL (the core downloads it right after the journal commit;
//! the URL's lifetime is unconfirmed, so nothing waits for a turn), voice with QQ's transcript;
//! an outbound workspace file is uploaded for the chat's kind of target (`srv_send_msg: false`)
//! and then sent as a `msg_type` 7 reply like any other.

use scv_qq::event::Attachment;
use scv_qq::limits::{MAX_INBOUND_ATTACHMENT_BYTES, MAX_UPLOAD_BYTES};
use scv_qq::{Client, FileType, MediaSource, Target};
use serde::{Deserialize, Serialize};

use crate::agent::MediaKind;
use crate::conversation::MediaRef;
use crate::conversation::body::MediaOut;
use crate::failure::{Failure, general};
use crate::ids::AccountKey;

/// Where one attachment is fetched from (journaled with the message: add, never rename).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Locator {
    /// The URL as QQ gave it (maybe without a scheme); for voice, the WAV link when given.
    pub u: String,
}

/// The media references of a message's attachments (those with a URL).
pub(super) fn refs(attachments: &[Attachment]) -> Vec<MediaRef> {
    attachments
        .iter()
        .map(|a| {
            let kind = kind_of(&a.content_type);
            let url = match (&kind, &a.voice_wav_url) {
                (MediaKind::Audio, Some(wav)) if !wav.is_empty() => wav.clone(),
                _ => a.url.clone(),
            };
            MediaRef {
                kind,
                name: a.filename.clone(),
                size: a.size,
                transcript: a.asr_refer_text.clone().filter(|t| !t.trim().is_empty()),
                locator: serde_json::to_value(Locator { u: url }).unwrap_or_default(),
            }
        })
        .collect()
}

fn kind_of(content_type: &str) -> MediaKind {
    match content_type {
        t if t.starts_with("image/") => MediaKind::Image,
        t if t.starts_with("video/") => MediaKind::Video,
        "voice" => MediaKind::Audio,
        _ => MediaKind::File,
    }
}

/// Downloads `media` into `dest` (at most `max_bytes`, and never more than QQ's unconfirmed cap
/// of 20 MB); a larger one is refused without a partial file.
pub(super) async fn fetch(
    client: &Client,
    account: &AccountKey,
    media: &MediaRef,
    dest: &std::path::Path,
    max_bytes: u64,
) -> Result<u64, Failure> {
    let Ok(locator) = serde_json::from_value::<Locator>(media.locator.clone()) else {
        return Err(Failure::rejected(
            general::MEDIA_INVALID,
            "the stored media reference is not QQ's",
        ));
    };
    let cap = max_bytes.min(MAX_INBOUND_ATTACHMENT_BYTES);
    let bytes = client
        .download(&locator.u, cap)
        .await
        .map_err(|e| super::failure::failure(&e, account))?;
    tokio::fs::write(dest, &bytes)
        .await
        .map_err(|e| Failure::transient(general::MEDIA_INVALID, format!("cannot save: {e}")))?;
    Ok(bytes.len() as u64)
}

/// Uploads the workspace file `media` for `target`: the `file_info` a media reply carries.
pub(super) async fn upload(
    client: &Client,
    account: &AccountKey,
    target: &Target,
    media: &MediaOut,
) -> Result<String, Failure> {
    let size = tokio::fs::metadata(&media.path)
        .await
        .map(|m| m.len())
        .unwrap_or(u64::MAX);
    if size > MAX_UPLOAD_BYTES {
        return Err(Failure::rejected(
            general::MEDIA_TOO_LARGE,
            "the file is over what this bridge uploads to QQ (100 MB)",
        ));
    }
    let bytes = tokio::fs::read(&media.path)
        .await
        .map_err(|e| Failure::rejected(general::MEDIA_INVALID, format!("cannot read: {e}")))?;
    let lower = media.name.to_ascii_lowercase();
    let file_type = match media.kind {
        // QQ takes png/jpg as images (§4.4); anything else goes as a file.
        MediaKind::Image if [".png", ".jpg", ".jpeg"].iter().any(|e| lower.ends_with(e)) => {
            FileType::Image
        }
        MediaKind::Video if lower.ends_with(".mp4") => FileType::Video,
        _ => FileType::File,
    };
    let name = (file_type == FileType::File).then_some(media.name.as_str());
    let up = client
        .upload(target, file_type, &MediaSource::Data(bytes), name)
        .await
        .map_err(|e| super::failure::failure(&e, account))?;
    Ok(up.file_info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voice_prefers_the_wav_link_and_keeps_the_transcript() {
        let voice = Attachment {
            content_type: "voice".into(),
            url: "h/silk".into(),
            voice_wav_url: Some("h/wav".into()),
            asr_refer_text: Some("hello".into()),
            ..Attachment::default()
        };
        let image = Attachment {
            content_type: "image/png".into(),
            filename: Some("../x.png".into()),
            url: "h/img".into(),
            ..Attachment::default()
        };
        let r = refs(&[voice, image]);
        assert_eq!(r[0].kind, MediaKind::Audio);
        assert_eq!(r[0].transcript.as_deref(), Some("hello"));
        assert_eq!(r[0].locator, serde_json::json!({"u": "h/wav"}));
        assert_eq!(
            (r[1].kind, r[1].name.as_deref()),
            (MediaKind::Image, Some("../x.png"))
        );
    }
}
