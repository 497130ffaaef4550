//! Making a photo over the model's image limit smaller, in the same picture format: decoded
//! with bounds on its dimensions and memory (a photo is hostile input), scaled down to fit,
//! encoded again. Only JPEG and PNG are decoded; other formats are not shrunk.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, Limits, imageops::FilterType};

/// The widest or tallest picture decoded. A phone photo is at most ~8000 px on a side; a
/// picture that claims more is refused before its pixels are read.
const MAX_SIDE: u32 = 12_000;
/// The most memory one decoded picture may take (12000 x 8000 RGB fits; a decompression
/// bomb does not).
const MAX_ALLOC: u64 = 384 * 1024 * 1024;
/// Attempts at a smaller scale when the first result is still over the limit.
const TRIES: usize = 4;
/// JPEG quality of a re-encoded photo: visually lossless for a model's eyes.
const JPEG_QUALITY: u8 = 85;

/// Why a picture could not be shrunk (said to the model in the path line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ShrinkError {
    /// Not JPEG or PNG.
    Unsupported,
    /// The bytes are not a picture of the format they claim, or it is larger than decoded here.
    Unreadable(String),
    /// Even the smallest attempt was over the limit.
    TooLarge,
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::Unsupported => f.write_str("only JPEG and PNG can be made smaller"),
            ShrinkError::Unreadable(why) => write!(f, "it could not be read as an image: {why}"),
            ShrinkError::TooLarge => f.write_str("it stays over the limit even when made smaller"),
        }
    }
}

/// The picture format of `bytes`, when it is one decoded here.
fn format_of(mime: &str) -> Option<ImageFormat> {
    match mime {
        "image/jpeg" => Some(ImageFormat::Jpeg),
        "image/png" => Some(ImageFormat::Png),
        _ => None,
    }
}

fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut r = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    r.limits(limits);
    r
}

/// `bytes` (of type `mime`) scaled down until encoded in the same format they are at most
/// `max_bytes`. CPU-bound: call it off the async threads.
pub(super) fn shrink(bytes: &[u8], mime: &str, max_bytes: u64) -> Result<Vec<u8>, ShrinkError> {
    let format = format_of(mime).ok_or(ShrinkError::Unsupported)?;
    let picture = reader(bytes, format)
        .decode()
        .map_err(|e| ShrinkError::Unreadable(e.to_string()))?;
    // Encoded size goes roughly with the pixel count: scale each side by the square root of
    // the ratio, with a margin, then tighten if the result is still over.
    let ratio = max_bytes as f64 / bytes.len().max(1) as f64;
    let mut scale = ratio.sqrt().min(1.0) * 0.9;
    for _ in 0..TRIES {
        let w = ((picture.width() as f64 * scale) as u32).max(1);
        let h = ((picture.height() as f64 * scale) as u32).max(1);
        let smaller = picture.resize(w, h, FilterType::Triangle);
        let out = encode(&smaller, format)?;
        if out.len() as u64 <= max_bytes {
            return Ok(out);
        }
        scale *= 0.7;
    }
    Err(ShrinkError::TooLarge)
}

fn encode(picture: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, ShrinkError> {
    let mut out = Cursor::new(Vec::new());
    let written = match format {
        ImageFormat::Jpeg => {
            // JPEG has no alpha and 8-bit samples only.
            let rgb = DynamicImage::ImageRgb8(picture.to_rgb8());
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
            rgb.write_with_encoder(enc)
        }
        _ => picture.write_to(&mut out, format),
    };
    written.map_err(|e| ShrinkError::Unreadable(e.to_string()))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A noisy picture (noise does not compress, so its size is predictable).
    fn noise(w: u32, h: u32, format: ImageFormat) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) as u8;
            image::Rgb([v, v.wrapping_mul(7), v.wrapping_add(y as u8)])
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(img)
            .write_to(&mut out, format)
            .expect("encode");
        out.into_inner()
    }

    #[test]
    fn a_picture_over_the_limit_comes_back_smaller_in_its_own_format() {
        for (format, mime) in [
            (ImageFormat::Png, "image/png"),
            (ImageFormat::Jpeg, "image/jpeg"),
        ] {
            let big = noise(600, 400, format);
            let limit = big.len() as u64 / 3;
            let small = shrink(&big, mime, limit).expect("shrunk");
            assert!(small.len() as u64 <= limit, "{mime}: {}", small.len());
            assert_eq!(image::guess_format(&small).expect("format"), format);
            let back = image::load_from_memory(&small).expect("decodes");
            assert!(back.width() < 600 && back.height() < 400);
            // The same picture: the aspect ratio is kept.
            let ratio = back.width() as f64 / back.height() as f64;
            assert!((ratio - 1.5).abs() < 0.05, "{mime}: {ratio}");
        }
    }

    #[test]
    fn malformed_and_hostile_pictures_are_errors_not_panics() {
        let mut truncated = noise(200, 200, ImageFormat::Png);
        truncated.truncate(truncated.len() / 2);
        assert!(matches!(
            shrink(&truncated, "image/png", 100),
            Err(ShrinkError::Unreadable(_))
        ));
        let garbage = b"\xFF\xD8\xFF\xE0 not really a jpeg".to_vec();
        assert!(matches!(
            shrink(&garbage, "image/jpeg", 10),
            Err(ShrinkError::Unreadable(_))
        ));
        // A PNG header claiming 100000 x 100000 pixels: refused before any pixel is read.
        let mut bomb = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        bomb.extend(100_000u32.to_be_bytes());
        bomb.extend(100_000u32.to_be_bytes());
        bomb.extend([8, 2, 0, 0, 0]);
        let crc = crc(&bomb[12..]);
        bomb.extend(crc.to_be_bytes());
        assert!(matches!(
            shrink(&bomb, "image/png", 10),
            Err(ShrinkError::Unreadable(_))
        ));
        assert_eq!(
            shrink(b"GIF89a....", "image/gif", 10),
            Err(ShrinkError::Unsupported)
        );
    }

    /// PNG's chunk CRC (CRC-32, ISO-HDLC), so the bomb's header is otherwise valid.
    fn crc(bytes: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for b in bytes {
            c ^= u32::from(*b);
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
}
