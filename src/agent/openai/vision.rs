//! Images for the `openai` backend: a saved photo goes to the model as an `image_url` content
//! part (a data URI) when `[agent] vision` is `true`, or unset and the model has not refused
//! images before; otherwise, and for every other file, the prompt gets a line with the saved
//! path. A photo over the model's limit is made smaller in its own format (`shrink`); one that
//! does not read as a picture goes as its path with a note saying so. A 400 that says the model
//! takes no images is remembered per account and model, and the turn is tried again with the
//! path lines.

use base64::Engine;
use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};

use super::shrink::{self, ShrinkError};
use crate::agent::{Attachment, MediaKind};
use crate::store::{Store, StoreError};
use crate::words::human_size;

/// The largest image sent inline by default: OpenAI documents 20 MB per image. A larger one is
/// made smaller (JPEG and PNG) to fit; `[agent] max_image_mb` sets another model's limit.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// What one attachment is for a model that sees images.
pub(super) enum Prepared {
    /// An image part: its MIME type and the bytes (the file's own, or made smaller).
    Inline { mime: String, bytes: Vec<u8> },
    /// A line for the prompt (a file, or an image that cannot go inline, with why).
    Line(String),
}

/// The line naming where `a` was saved, with `why` it is not an image part when there is a why.
fn path_line(a: &Attachment, why: Option<&str>) -> String {
    let what = match a.kind {
        MediaKind::Image => "photo",
        MediaKind::Audio => "voice note",
        MediaKind::Video => "video",
        MediaKind::File => "file",
    };
    match why {
        Some(why) => format!(
            "[{what} saved at {}; not shown as an image: {why}]",
            a.path.display()
        ),
        None => format!("[{what} saved at {}]", a.path.display()),
    }
}

/// Reads each image (shrinking one over `max_bytes`, off the async threads) for a model that
/// sees images; every other attachment becomes its path line.
pub(super) async fn prepare(attachments: &[Attachment], max_bytes: u64) -> Vec<Prepared> {
    let mut out = Vec::with_capacity(attachments.len());
    for a in attachments {
        if a.kind != MediaKind::Image {
            out.push(Prepared::Line(path_line(a, None)));
            continue;
        }
        let (path, mime) = (
            a.path.clone(),
            a.mime.clone().unwrap_or_else(|| "image/jpeg".into()),
        );
        let job = tokio::task::spawn_blocking(move || inline(&path, &mime, max_bytes)).await;
        out.push(match job {
            Ok(Ok((mime, bytes))) => Prepared::Inline { mime, bytes },
            Ok(Err(why)) => Prepared::Line(path_line(a, Some(&why))),
            // A panic in a codec is contained here: the photo goes as its path.
            Err(_) => Prepared::Line(path_line(a, Some("it could not be read as an image"))),
        });
    }
    out
}

/// The bytes of one image to send inline, made smaller when over `max_bytes`, or why not.
fn inline(path: &std::path::Path, mime: &str, max_bytes: u64) -> Result<(String, Vec<u8>), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("it could not be read: {e}"))?;
    let size = bytes.len() as u64;
    if size <= max_bytes {
        // Under the limit the model gets the sender's bytes untouched; only a photo that must
        // be made smaller is decoded.
        return Ok((mime.to_string(), bytes));
    }
    match shrink::shrink(&bytes, mime, max_bytes) {
        Ok(smaller) => Ok((mime.to_string(), smaller)),
        Err(e @ ShrinkError::Unsupported) | Err(e @ ShrinkError::TooLarge) => Err(format!(
            "it is {}, over the model's {} limit, and {e}",
            human_size(size),
            human_size(max_bytes)
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The last user message's content: the text with one line per file not sent inline, and the
/// content parts when images go inline (`None`: the plain text is the content). `prepared` is
/// [`prepare`]'s answer for a model that sees images, `None` for one that does not.
pub(super) fn user_content(
    prompt: &str,
    attachments: &[Attachment],
    prepared: Option<&[Prepared]>,
) -> (String, Option<Value>) {
    let mut text = prompt.to_string();
    let mut parts = Vec::new();
    match prepared {
        None => {
            for a in attachments {
                text.push('\n');
                text.push_str(&path_line(a, None));
            }
        }
        Some(prepared) => {
            for p in prepared {
                match p {
                    Prepared::Inline { mime, bytes } => {
                        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                        parts.push(json!({
                            "type": "image_url",
                            "image_url": {"url": format!("data:{mime};base64,{b64}")}
                        }));
                    }
                    Prepared::Line(line) => {
                        text.push('\n');
                        text.push_str(line);
                    }
                }
            }
        }
    }
    if parts.is_empty() {
        return (text, None);
    }
    parts.insert(0, json!({"type": "text", "text": text}));
    (text, Some(Value::Array(parts)))
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
        let both = [img.clone(), pdf.clone()];
        let prepared = tokio_test_block(prepare(&both, DEFAULT_MAX_IMAGE_BYTES));
        let (text, parts) = user_content("look", &both, Some(&prepared));
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
        let (text, parts) = user_content("look", std::slice::from_ref(&img), None);
        assert!(parts.is_none());
        assert_eq!(
            text,
            format!("look\n[photo saved at {}]", img.path.display())
        );
    }

    fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn a_photo_over_the_limit_goes_smaller_and_a_malformed_one_as_its_path_with_a_note() {
        let dir = tempfile::tempdir().expect("dir");
        let img = image::RgbImage::from_fn(400, 300, |x, y| {
            image::Rgb([((x * 7) ^ (y * 13)) as u8, (x * y) as u8, (x + y) as u8])
        });
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut png, image::ImageFormat::Png)
            .expect("png");
        let png = png.into_inner();
        let limit = png.len() as u64 / 2;
        let big = attachment(dir.path(), "big.png", &png, MediaKind::Image);
        let mut broken = png.clone();
        broken.truncate(png.len() * 3 / 4);
        let bad = attachment(dir.path(), "bad.png", &broken, MediaKind::Image);
        let got = tokio_test_block(prepare(&[big, bad.clone()], limit));
        match &got[0] {
            Prepared::Inline { mime, bytes } => {
                assert_eq!(mime, "image/png");
                assert!((bytes.len() as u64) <= limit);
                let back = image::load_from_memory(bytes).expect("a picture");
                assert!(back.width() < 400 && back.width() > 50);
            }
            Prepared::Line(l) => panic!("not inline: {l}"),
        }
        match &got[1] {
            Prepared::Line(l) => {
                assert!(
                    l.starts_with(&format!(
                        "[photo saved at {}; not shown",
                        bad.path.display()
                    )) && l.contains("could not be read as an image"),
                    "{l}"
                );
            }
            Prepared::Inline { .. } => panic!("a broken picture went inline"),
        }
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
