//! Sending a [`Body::Media`](crate::conversation::Body) outbox item: upload the workspace file,
//! then send it as an image or file message under the outbox key's `uuid`.
//!
//! A retry after a crash uploads again (an upload that never got used costs nothing) but sends
//! the message under the same `uuid`, which the platform accepts at most once within an hour:
//! the owner never gets the picture twice.

use scv_feishu::Client;
use scv_feishu::media::{MAX_FILE_BYTES, MAX_IMAGE_BYTES, MediaMessage, image_format};
use tokio::io::AsyncReadExt;

use super::address::{receive_id, uuid_for};
use super::failure::{MEDIA_FILE, MEDIA_REFUSED, MEDIA_TOO_LARGE, MISSING_SCOPE, failure};
use super::inbound::ReplyRef;
use crate::agent::MediaKind;
use crate::conversation::body::MediaOut;
use crate::conversation::{ChatId, Outbound, OutboundKind, PlatformMsgId, SendError, Sent};
use crate::ids::AccountKey;

/// Uploads `out` and sends it for outbox item `msg` (the reply routing of a text answer).
pub(super) async fn send(
    client: &Client,
    account: &AccountKey,
    msg: &Outbound,
    out: &MediaOut,
) -> Result<Sent, SendError> {
    let media = upload(client, account, out).await?;
    let uuid = uuid_for(&msg.idempotency_key);
    let reply = ReplyRef::parse(&msg.reply);
    let sent = match (&reply.message_id, reply.group, msg.kind) {
        // In groups the file goes in the thread of the message that asked, like the text.
        (Some(parent), true, OutboundKind::Reply) => {
            client.reply_media(parent, &media, true, &uuid).await
        }
        _ => {
            let to = receive_id(msg.chat.as_str());
            client.send_media(&to, &media, &uuid).await
        }
    };
    let sent = sent.map_err(|e| failure(&e, account))?;
    Ok(Sent {
        msg_id: Some(PlatformMsgId::new(sent.message_id)),
        chat: sent.chat_id.map(ChatId::new),
    })
}

/// Uploads the file: as an image when it is one Feishu takes as an image (an image format,
/// at most 10 MB), else as a file (at most 30 MB; a larger image goes as a file too).
async fn upload(
    client: &Client,
    account: &AccountKey,
    out: &MediaOut,
) -> Result<MediaMessage, SendError> {
    let unreadable = |e: std::io::Error| {
        SendError::rejected(
            MEDIA_FILE,
            format!(
                "the file to send cannot be read ({}); check that it still exists in the workspace",
                e.kind()
            ),
        )
    };
    let meta = tokio::fs::metadata(&out.path).await.map_err(unreadable)?;
    if !meta.is_file() {
        return Err(SendError::rejected(
            MEDIA_FILE,
            "the file to send is not a regular file",
        ));
    }
    let len = meta.len();
    if len == 0 {
        return Err(SendError::rejected(
            MEDIA_REFUSED,
            "the file to send is empty; Feishu takes no empty files",
        ));
    }
    let mut head = [0u8; 16];
    let n = tokio::fs::File::open(&out.path)
        .await
        .map_err(unreadable)?
        .read(&mut head)
        .await
        .map_err(unreadable)?;
    let as_image = out.kind == MediaKind::Image
        && len <= MAX_IMAGE_BYTES
        && image_format(&head[..n]).is_some();
    let map = |e: scv_feishu::Error| {
        let f = failure(&e, account);
        // The generic hint names no scope; the upload's own is known.
        let why = if f.code == MISSING_SCOPE {
            "the app lacks the scope im:resource (or im:resource:upload): add it in the console and publish a version".to_string()
        } else {
            f.message.clone()
        };
        f.with_message(format!("uploading the file to Feishu failed: {why}"))
    };
    if as_image {
        let image_key = client.upload_image(&out.path).await.map_err(map)?;
        return Ok(MediaMessage::Image { image_key });
    }
    if out.kind == MediaKind::Audio
        && let Some(duration) = opus_duration(&out.path).await
    {
        // A voice bubble: `file_type=opus` (from the `.opus` name) with the duration in ms,
        // sent as `msg_type=audio` (spec B5); without the duration it shows no length.
        let file_key = client
            .upload_file(&out.path, "reply.opus", Some(duration))
            .await
            .map_err(map)?;
        return Ok(MediaMessage::Audio { file_key });
    }
    if len > MAX_FILE_BYTES {
        return Err(SendError::rejected(
            MEDIA_TOO_LARGE,
            format!(
                "the file is {} MB; Feishu takes files up to {} MB",
                len.div_ceil(1 << 20),
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    let name = file_name(out);
    // Every upload is sent as a `file` message: audio and video messages need an Opus / MP4
    // upload whose codec we cannot vouch for, and a file message takes any upload.
    let file_key = client
        .upload_file(&out.path, &name, None)
        .await
        .map_err(map)?;
    Ok(MediaMessage::File { file_key })
}

/// The duration in ms of the Ogg Opus file at `path` (its last page's granule position less
/// the pre-skip, over 48); `None` when it is not Ogg Opus, which then goes as a file.
async fn opus_duration(path: &std::path::Path) -> Option<u64> {
    let bytes = tokio::fs::read(path).await.ok()?;
    crate::speech::opus_duration_ms(&bytes).ok()
}

/// The name the recipient sees (its extension picks the upload's `file_type`).
fn file_name(out: &MediaOut) -> String {
    let given = out.name.trim();
    if !given.is_empty() {
        return given.to_string();
    }
    out.path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .to_string()
}
