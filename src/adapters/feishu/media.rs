//! Received Feishu media as the pipeline's [`MediaRef`]s, and [`fetch`] through the
//! message-resource endpoint.
//!
//! Images, files, voice notes (`audio`), videos (`media`) and the images and videos inside a
//! `post` become references; stickers, folders and cards cannot be downloaded through the API
//! and stay what they were: the message's description text. A reference carries the message id,
//! the key and the resource type: enough to fetch it after a restart, nothing secret.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use scv_feishu::Client;
use scv_feishu::event::MessageEvent;
use scv_feishu::media::ResourceType;

use super::failure::{MEDIA_MALFORMED, MISSING_SCOPE, failure};
use crate::agent::MediaKind;
use crate::conversation::{MediaRef, SendError};
use crate::ids::AccountKey;

/// At most this many items of one message are fetched (a post may hold many images); the rest
/// stay in the description text.
pub const MAX_ITEMS: usize = 16;

/// How to fetch one resource, as journaled with the message: short keys, read back by later
/// releases (add fields, never rename these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Locator {
    /// The `om_…` message the resource belongs to.
    #[serde(rename = "m")]
    message_id: String,
    /// `image_key` or `file_key`.
    #[serde(rename = "k")]
    key: String,
    /// `image` or `file`: the resource endpoint's `type`.
    #[serde(rename = "t")]
    ty: String,
}

/// The media a received message carries, in content order; none for malformed content (the
/// message then reaches the agent as its description alone).
pub(super) fn media_refs(m: &MessageEvent) -> Vec<MediaRef> {
    let Ok(content) = serde_json::from_str::<Value>(&m.content) else {
        tracing::debug!(
            message_type = m.message_type.as_str(),
            "media content is not JSON; no media taken"
        );
        return Vec::new();
    };
    let s = |k: &str| {
        content
            .get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let item = |kind, key: Option<&str>, ty, name: Option<&str>| {
        key.map(|key| reference(&m.message_id, kind, key, ty, name))
    };
    let refs: Vec<MediaRef> = match m.message_type.as_str() {
        "image" => item(MediaKind::Image, s("image_key"), ResourceType::Image, None)
            .into_iter()
            .collect(),
        "file" => item(
            MediaKind::File,
            s("file_key"),
            ResourceType::File,
            s("file_name"),
        )
        .into_iter()
        .collect(),
        // The inbound audio container is unconfirmed (Opus by the upload rules); no name is
        // invented, the core names it.
        "audio" => item(MediaKind::Audio, s("file_key"), ResourceType::File, None)
            .into_iter()
            .collect(),
        // The video itself; its cover (`image_key`) is a thumbnail, not what was sent.
        "media" => item(
            MediaKind::Video,
            s("file_key"),
            ResourceType::File,
            s("file_name"),
        )
        .into_iter()
        .collect(),
        "post" => post_items(&content)
            .into_iter()
            .map(|(kind, key, ty)| reference(&m.message_id, kind, &key, ty, None))
            .collect(),
        _ => Vec::new(),
    };
    if refs.is_empty() && ["image", "file", "audio", "media"].contains(&m.message_type.as_str()) {
        tracing::debug!(
            message_type = m.message_type.as_str(),
            "media message without its key; no media taken"
        );
    }
    refs.into_iter().take(MAX_ITEMS).collect()
}

fn reference(
    message_id: &str,
    kind: MediaKind,
    key: &str,
    ty: ResourceType,
    name: Option<&str>,
) -> MediaRef {
    let locator = Locator {
        message_id: message_id.to_string(),
        key: key.to_string(),
        ty: ty.as_str().to_string(),
    };
    MediaRef {
        kind,
        name: name.map(String::from),
        // Feishu declares no size in the content; the download checks the real one.
        size: None,
        transcript: None,
        locator: serde_json::to_value(locator).unwrap_or(Value::Null),
    }
}

/// The `img` and `media` elements of a post, in any of its three shapes.
fn post_items(content: &Value) -> Vec<(MediaKind, String, ResourceType)> {
    let body = if content.get("content").is_some() {
        Some(content)
    } else {
        let inner = content.get("post").unwrap_or(content);
        inner
            .get("zh_cn")
            .or_else(|| inner.get("en_us"))
            .or_else(|| inner.as_object()?.values().next())
    };
    let rows = body
        .and_then(|b| b.get("content"))
        .and_then(Value::as_array);
    let key = |el: &Value, k: &str| {
        el.get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(String::from)
    };
    let mut out = Vec::new();
    for el in rows
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
    {
        match el.get("tag").and_then(Value::as_str) {
            Some("img") => {
                if let Some(k) = key(el, "image_key") {
                    out.push((MediaKind::Image, k, ResourceType::Image));
                }
            }
            Some("media") => {
                if let Some(k) = key(el, "file_key") {
                    out.push((MediaKind::Video, k, ResourceType::File));
                }
            }
            _ => {}
        }
    }
    out
}

/// Downloads `media` into `dest` (streamed, at most `max_bytes`; nothing kept when refused).
pub(super) async fn fetch(
    client: &Client,
    account: &AccountKey,
    media: &MediaRef,
    dest: &Path,
    max_bytes: u64,
) -> Result<u64, SendError> {
    let loc: Locator = serde_json::from_value(media.locator.clone()).map_err(|_| {
        SendError::rejected(
            MEDIA_MALFORMED,
            "the stored Feishu media reference has no message id or file key; the item cannot be downloaded",
        )
    })?;
    let Some(ty) = ResourceType::parse(&loc.ty) else {
        return Err(SendError::rejected(
            MEDIA_MALFORMED,
            "the stored Feishu media reference names no resource type; the item cannot be downloaded",
        ));
    };
    client
        .download_resource(&loc.message_id, &loc.key, ty, dest, max_bytes)
        .await
        .map(|d| d.bytes)
        .map_err(|e| {
            let f = failure(&e, account);
            // The generic hint names no scope; the download's own is known.
            let why = if f.code == MISSING_SCOPE {
                "the app lacks the scope im:message (or im:message:readonly): add it in the console and publish a version".to_string()
            } else {
                f.message.clone()
            };
            f.with_message(format!("downloading the item from Feishu failed: {why}"))
        })
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
