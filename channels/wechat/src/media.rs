//! Media item payloads of spec §4.2 (image, voice, file, video) and their CDN references.
//! Decoded so the caller can describe or fetch them; this crate does not download media.

use serde::{Deserialize, Serialize};

use crate::lenient;

/// A CDN media reference (`CDNMedia`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CdnMedia {
    /// Encrypted download parameter.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub encrypt_query_param: Option<String>,
    /// Base64 AES key (16 raw bytes or 32 hex characters once decoded).
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub aes_key: Option<String>,
    /// 0: only the file id is encrypted; 1: packed thumbnail/mid-size info.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub encrypt_type: Option<i64>,
    /// A download URL the server may supply.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub full_url: Option<String>,
}

/// `image_item`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageItem {
    /// The image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<CdnMedia>,
    /// Its thumbnail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumb_media: Option<CdnMedia>,
    /// Hex AES key; preferred over `media.aes_key`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub aeskey: Option<String>,
    /// Image URL.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub url: Option<String>,
    /// Ciphertext size of the mid-size image.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub mid_size: Option<i64>,
    /// Thumbnail size in bytes.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub thumb_size: Option<i64>,
    /// Thumbnail height.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub thumb_height: Option<i64>,
    /// Thumbnail width.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub thumb_width: Option<i64>,
    /// HD image size.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub hd_size: Option<i64>,
}

/// `voice_item`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VoiceItem {
    /// The audio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<CdnMedia>,
    /// 1 pcm, 2 adpcm, 3 feature, 4 speex, 5 amr, 6 silk, 7 mp3, 8 ogg-speex.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub encode_type: Option<i64>,
    /// Bits per sample.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub bits_per_sample: Option<i64>,
    /// Sample rate.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub sample_rate: Option<i64>,
    /// Duration in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub playtime: Option<i64>,
    /// The server's speech-to-text transcript.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub text: Option<String>,
}

/// `file_item`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileItem {
    /// The file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<CdnMedia>,
    /// File name.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub file_name: Option<String>,
    /// Hex MD5.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub md5: Option<String>,
    /// Plaintext byte count, as a string on the wire.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub len: Option<String>,
}

/// `video_item`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VideoItem {
    /// The video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<CdnMedia>,
    /// Size in bytes.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub video_size: Option<i64>,
    /// Duration.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub play_length: Option<i64>,
    /// Hex MD5.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub video_md5: Option<String>,
    /// Its thumbnail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumb_media: Option<CdnMedia>,
    /// Thumbnail size in bytes.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub thumb_size: Option<i64>,
    /// Thumbnail height.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub thumb_height: Option<i64>,
    /// Thumbnail width.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub thumb_width: Option<i64>,
}
