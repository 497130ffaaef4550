//! What a file is, from its first bytes (what a sender's name says is not trusted) or, for the
//! agent's own files, from its extension.

use std::path::Path;

use crate::agent::MediaKind;

/// The image MIME type the bytes start with (JPEG, PNG, GIF, WebP), if any.
pub fn sniff_image(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        Some("image/png")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The extension a saved image gets from its MIME type.
pub fn image_ext(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "jpg",
    }
}

/// The MIME type of a file by its extension (`application/octet-stream` when unknown).
pub fn mime_of(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "md" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "zip" => "application/zip",
        "mp4" => "video/mp4",
        "mov" => "video/quicktime",
        "mp3" => "audio/mpeg",
        "silk" => "audio/silk",
        "wav" => "audio/wav",
        "ogg" | "opus" => "audio/ogg",
        _ => "application/octet-stream",
    }
}

/// How a file the agent names is sent: an image as a picture, a video as a video, anything
/// else (audio included: no platform confirms a playable voice bubble) as a file.
pub fn kind_of(path: &Path) -> MediaKind {
    let mime = mime_of(path);
    if mime.starts_with("image/") {
        MediaKind::Image
    } else if mime.starts_with("video/") {
        MediaKind::Video
    } else {
        MediaKind::File
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_decide_an_image_and_extensions_a_kind() {
        assert_eq!(sniff_image(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"%PDF-1.7"), None);
        assert_eq!(kind_of(Path::new("out/chart.PNG")), MediaKind::Image);
        assert_eq!(kind_of(Path::new("a.mp4")), MediaKind::Video);
        assert_eq!(kind_of(Path::new("a.ogg")), MediaKind::File);
        assert_eq!(kind_of(Path::new("r.pdf")), MediaKind::File);
    }
}
