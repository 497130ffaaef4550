//! Images for the `openai` backend: a saved photo goes to the model as an `image_url` content
//! part (a data URI) when `[agent] vision` is `true`, or unset and the model has not refused
//! images before; otherwise, and for every other file, the prompt gets a line with the saved
//! path. A 400 that says the model takes no images is remembered per account and model, and the
//! turn is tried again with the path lines.

use base64::Engine;
use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};

use super::ChatMessage;
use crate::agent::{Attachment, MediaKind};
use crate::store::{Store, StoreError};

/// The largest image sent inline. OpenAI documents 20 MB per image; a larger one is not resized
/// (no image codec in the bridge) but handed over as a path line, which always works.
const MAX_INLINE_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// The last user message's content: the text with one line per file not sent inline, and the
/// content parts when images go inline (`None`: the plain text is the content).
pub(super) fn user_content(
    prompt: &str,
    attachments: &[Attachment],
    images: bool,
) -> (String, Option<Value>) {
    let mut text = prompt.to_string();
    let mut parts = Vec::new();
    for a in attachments {
        let inline = images
            && a.kind == MediaKind::Image
            && std::fs::metadata(&a.path).is_ok_and(|m| m.len() <= MAX_INLINE_IMAGE_BYTES);
        let data = if inline {
            std::fs::read(&a.path).ok()
        } else {
            None
        };
        match data {
            Some(bytes) => {
                let mime = a.mime.as_deref().unwrap_or("image/jpeg");
                let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                parts.push(json!({
                    "type": "image_url",
                    "image_url": {"url": format!("data:{mime};base64,{b64}")}
                }));
            }
            None => {
                let what = match a.kind {
                    MediaKind::Image => "photo",
                    MediaKind::Audio => "voice note",
                    MediaKind::Video => "video",
                    MediaKind::File => "file",
                };
                text.push_str(&format!("\n[{what} saved at {}]", a.path.display()));
            }
        }
    }
    if parts.is_empty() {
        return (text, None);
    }
    parts.insert(0, json!({"type": "text", "text": text}));
    (text, Some(Value::Array(parts)))
}

/// `messages` as JSON, the last one's content replaced by `parts` when there are parts.
pub(super) fn messages_json(messages: &[ChatMessage], parts: Option<&Value>) -> Value {
    let mut v = serde_json::to_value(messages).unwrap_or_else(|_| Value::Array(Vec::new()));
    if let (Some(parts), Some(last)) = (parts, v.as_array_mut().and_then(|a| a.last_mut())) {
        last["content"] = parts.clone();
    }
    v
}

/// Whether a 400's body says the model does not take images (wording varies by server: OpenAI,
/// vLLM, Ollama, LiteLLM).
pub(super) fn refuses_images(detail: &str) -> bool {
    let b = detail.to_ascii_lowercase();
    let about_images = b.contains("image") || b.contains("vision") || b.contains("multimodal");
    let refusal = b.contains("not support")
        || b.contains("unsupported")
        || b.contains("does not accept")
        || b.contains("only text")
        || b.contains("invalid content type")
        || b.contains("not a multimodal");
    about_images && refusal
}

/// What the store remembers about `model`'s vision for `account` (`None`: nothing yet).
pub(super) async fn remembered(
    store: &Store,
    account: &str,
    model: &str,
) -> Result<Option<bool>, StoreError> {
    let (a, m) = (account.to_string(), model.to_string());
    store
        .call(move |t| {
            t.prepare_cached(
                "SELECT vision FROM agent_model_facts WHERE account = ?1 AND model = ?2",
            )?
            .query_row(params![a, m], |r| r.get::<_, bool>(0))
            .optional()
        })
        .await
}

/// Remembers that `model` takes no images (for `account`'s later turns).
pub(super) async fn remember_no_images(
    store: &Store,
    account: &str,
    model: &str,
) -> Result<(), StoreError> {
    let (a, m) = (account.to_string(), model.to_string());
    store
        .call(move |t| {
            t.execute(
                "INSERT INTO agent_model_facts (account, model, vision) VALUES (?1, ?2, 0)
                 ON CONFLICT(account, model) DO UPDATE SET vision = 0",
                params![a, m],
            )
            .map(drop)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachment(dir: &std::path::Path, name: &str, bytes: &[u8], kind: MediaKind) -> Attachment {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        Attachment {
            path,
            kind,
            mime: Some(
                if kind == MediaKind::Image {
                    "image/png"
                } else {
                    "application/pdf"
                }
                .into(),
            ),
        }
    }

    #[test]
    fn images_go_inline_and_files_as_path_lines() {
        let dir = tempfile::tempdir().expect("dir");
        let img = attachment(dir.path(), "a.png", b"\x89PNG-bytes", MediaKind::Image);
        let pdf = attachment(dir.path(), "r.pdf", b"%PDF", MediaKind::File);
        let (text, parts) = user_content("look", &[img.clone(), pdf.clone()], true);
        assert_eq!(
            text,
            format!("look\n[file saved at {}]", pdf.path.display())
        );
        let parts = parts.expect("parts");
        assert_eq!(parts[0]["type"], "text");
        let url = parts[1]["image_url"]["url"].as_str().expect("url");
        let b64 = url
            .strip_prefix("data:image/png;base64,")
            .expect("data uri");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("b64");
        assert_eq!(bytes, b"\x89PNG-bytes");
        let (text, parts) = user_content("look", std::slice::from_ref(&img), false);
        assert!(parts.is_none());
        assert_eq!(
            text,
            format!("look\n[photo saved at {}]", img.path.display())
        );
    }

    #[test]
    fn refusals_of_images_are_told_from_other_400s() {
        assert!(refuses_images(
            r#"{"error":{"message":"This model does not support image inputs"}}"#
        ));
        assert!(refuses_images(
            "Invalid content type. image_url is only supported by certain models"
        ));
        assert!(!refuses_images("maximum context length is 8192 tokens"));
        assert!(!refuses_images("model not found"));
    }
}
