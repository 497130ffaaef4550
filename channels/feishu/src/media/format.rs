//! The shapes around media: message content from upload keys, the upload `file_type` of a
//! name, image formats by their first bytes, and `Content-Disposition` file names.

use std::path::Path;

use serde_json::json;

/// A media message body, made from upload keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaMessage {
    /// `msg_type = image` with an uploaded `image_key`.
    Image {
        /// `img_…`.
        image_key: String,
    },
    /// `msg_type = file` with an uploaded `file_key`.
    File {
        /// `file_…`.
        file_key: String,
    },
    /// `msg_type = audio` with the `file_key` of an `opus` upload.
    Audio {
        /// `file_…`.
        file_key: String,
    },
    /// `msg_type = media` with the `file_key` of an `mp4` upload and an optional cover.
    Video {
        /// `file_…`.
        file_key: String,
        /// `img_…` cover.
        image_key: Option<String>,
    },
}

impl MediaMessage {
    /// The `msg_type` field.
    pub fn msg_type(&self) -> &'static str {
        match self {
            MediaMessage::Image { .. } => "image",
            MediaMessage::File { .. } => "file",
            MediaMessage::Audio { .. } => "audio",
            MediaMessage::Video { .. } => "media",
        }
    }

    /// The `content` field: JSON serialised into a string.
    pub fn content_string(&self) -> String {
        match self {
            MediaMessage::Image { image_key } => json!({ "image_key": image_key }),
            MediaMessage::File { file_key } | MediaMessage::Audio { file_key } => {
                json!({ "file_key": file_key })
            }
            MediaMessage::Video {
                file_key,
                image_key: Some(cover),
            } => json!({ "file_key": file_key, "image_key": cover }),
            MediaMessage::Video { file_key, .. } => json!({ "file_key": file_key }),
        }
        .to_string()
    }
}

/// The `file_type` of a file upload, from the name's extension (openclaw-lark's map; anything
/// unknown is `stream`, which the platform takes for any content).
pub fn file_type_for(file_name: &str) -> &'static str {
    let ext = Path::new(file_name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "opus" | "ogg" => "opus",
        "mp4" | "mov" | "avi" | "mkv" | "webm" => "mp4",
        "pdf" => "pdf",
        "doc" | "docx" => "doc",
        "xls" | "xlsx" | "csv" => "xls",
        "ppt" | "pptx" => "ppt",
        _ => "stream",
    }
}

/// The image format of a file from its first bytes, for the formats the image upload takes
/// (JPG, PNG, WEBP, GIF, BMP, ICO, TIFF, HEIC); `None` for anything else.
pub fn image_format(head: &[u8]) -> Option<&'static str> {
    let starts = |p: &[u8]| head.starts_with(p);
    if starts(&[0xFF, 0xD8, 0xFF]) {
        Some("jpeg")
    } else if starts(b"\x89PNG\r\n\x1a\n") {
        Some("png")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("webp")
    } else if starts(b"BM") {
        Some("bmp")
    } else if starts(&[0, 0, 1, 0]) {
        Some("ico")
    } else if starts(b"II*\0") || starts(b"MM\0*") {
        Some("tiff")
    } else if head.len() >= 12
        && &head[4..8] == b"ftyp"
        && [b"heic", b"heix", b"mif1", b"msf1", b"hevc"]
            .contains(&&[head[8], head[9], head[10], head[11]])
    {
        Some("heic")
    } else {
        None
    }
}

/// The file name of a `Content-Disposition` header: `filename*=UTF-8''…` (percent-decoded)
/// before `filename="…"`. Only the last path component is kept.
pub fn disposition_name(header: &str) -> Option<String> {
    let mut plain = None;
    let mut extended = None;
    for param in header.split(';').map(str::trim) {
        let Some((k, v)) = param.split_once('=') else {
            continue;
        };
        match k.trim().to_ascii_lowercase().as_str() {
            "filename*" => {
                let v = v.trim().trim_matches('"');
                let encoded = v.split_once("''").map_or(v, |(_, rest)| rest);
                extended = percent_decode(encoded);
            }
            "filename" => plain = Some(v.trim().trim_matches('"').to_string()),
            _ => {}
        }
    }
    let name = extended.or(plain)?;
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    (!last.is_empty()).then(|| last.to_string())
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn file_types_follow_the_extension_map() {
        let rows = [
            ("a.opus", "opus"),
            ("a.OGG", "opus"),
            ("clip.mov", "mp4"),
            ("r.pdf", "pdf"),
            ("x.docx", "doc"),
            ("t.csv", "xls"),
            ("s.pptx", "ppt"),
            ("a.zip", "stream"),
            ("noext", "stream"),
        ];
        for (name, want) in rows {
            assert_eq!(file_type_for(name), want, "{name}");
        }
    }

    #[test]
    fn image_formats_are_sniffed() {
        assert_eq!(image_format(b"\x89PNG\r\n\x1a\n...."), Some("png"));
        assert_eq!(image_format(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("jpeg"));
        assert_eq!(image_format(b"RIFF\0\0\0\0WEBPVP8 "), Some("webp"));
        assert_eq!(image_format(b"GIF89a"), Some("gif"));
        assert_eq!(image_format(b"\0\0\0\x18ftypheic"), Some("heic"));
        assert_eq!(image_format(b"%PDF-1.7"), None);
        assert_eq!(image_format(b""), None);
    }

    #[test]
    fn media_content_is_a_json_string_per_type() {
        let img = MediaMessage::Image {
            image_key: "img_1".into(),
        };
        assert_eq!(img.msg_type(), "image");
        assert_eq!(img.content_string(), r#"{"image_key":"img_1"}"#);
        let f = MediaMessage::File {
            file_key: "file_1".into(),
        };
        assert_eq!(
            (f.msg_type(), f.content_string().as_str()),
            ("file", r#"{"file_key":"file_1"}"#)
        );
        let v = MediaMessage::Video {
            file_key: "file_2".into(),
            image_key: Some("img_2".into()),
        };
        assert_eq!(v.msg_type(), "media");
        let back: Value = serde_json::from_str(&v.content_string()).unwrap();
        assert_eq!(back, json!({"file_key": "file_2", "image_key": "img_2"}));
    }

    #[test]
    fn disposition_names_prefer_the_extended_form_and_drop_paths() {
        assert_eq!(
            disposition_name(
                "attachment; filename=\"a.pdf\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A.pdf"
            )
            .as_deref(),
            Some("报告.pdf")
        );
        assert_eq!(
            disposition_name("attachment; filename=\"../../etc/passwd\"").as_deref(),
            Some("passwd")
        );
        assert_eq!(disposition_name("inline").as_deref(), None);
        assert_eq!(
            disposition_name("attachment; filename*=UTF-8''%ZZ").as_deref(),
            None
        );
    }
}
